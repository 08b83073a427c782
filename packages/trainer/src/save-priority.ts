/**
 * How the background save thread shares the CPU with training — the one home
 * of that rule (the save worker applies it, the saver reads the setting and
 * restores a waited-for save's priority).
 *
 * Training uses every core by default and a multi-threaded step waits for its
 * slowest thread at every phase barrier. A save thread at the training
 * threads' priority, or merely niced, takes a core whenever a training thread
 * sleeps at a barrier and keeps it for its time slice when that thread wakes,
 * so each step it overlaps runs slower. Under Linux's `SCHED_IDLE` policy it
 * runs only on a core nothing else wants and is preempted at once by a waking
 * training thread (bench/save-priority-contention.ts, 2 cores, both training:
 * steps overlapping a busy thread ran a median 52% slower at normal priority,
 * 18% at nice 10, 5% under `SCHED_IDLE`).
 *
 * The cost: on a machine saturated by other work an idle-policy thread gets
 * almost no CPU, so a save could take minutes and the training would wait for
 * it at the next checkpoint, the end or a stop (measured with two busy
 * processes on the 2 cores: a 300-step medium run took 130 s instead of 13,
 * 87 s of it blocked). The saver therefore gives an urgent save — waited for,
 * or in flight for half a validation interval — the training threads'
 * priority back (SCHED_OTHER, nice 0; the same run then blocked 35 ms), and
 * the save thread drops to idle again before it answers. Linux allows that
 * only with CAP_SYS_NICE or an RLIMIT_NICE of 20 or more, so the default is
 * `idle` where the priority can be restored, else `low` (nice 10 alone: a
 * starved save still gets a share of a busy machine).
 * `LLMCP_SAVE_PRIORITY=idle|low|normal` overrides it. Linux alone; elsewhere
 * the thread is unchanged.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { TrainerError } from './errors.ts';

/** The save thread's priorities: `idle` (nice {@link SAVE_THREAD_NICE}, then `SCHED_IDLE`), `low` (the nice value), `normal`. */
export const SAVE_PRIORITIES = ['idle', 'low', 'normal'] as const;

/** A save thread priority. */
export type SavePriority = (typeof SAVE_PRIORITIES)[number];

/** The environment variable that selects the save thread's priority. */
export const SAVE_PRIORITY_ENV = 'LLMCP_SAVE_PRIORITY';

/** The save thread's nice value under `low` and `idle` (Linux). */
export const SAVE_THREAD_NICE = 10;

/**
 * @param value - anything.
 * @returns whether it names a save thread priority.
 */
export function isSavePriority(value: unknown): value is SavePriority {
  return typeof value === 'string' && (SAVE_PRIORITIES as readonly string[]).includes(value);
}

/**
 * The save thread priority `LLMCP_SAVE_PRIORITY` selects; unset or empty: `idle`
 * where a waited-for save's priority can be restored ({@link canRestorePriority}), else `low`.
 *
 * @param env - the environment to read (default `process.env`).
 * @param restorable - whether priorities can be restored (default: this process, {@link canRestorePriority}).
 * @returns the priority.
 * @throws TrainerError `TRAINER_CONFIG_INVALID` naming the variable for any other value.
 */
export function savePriorityFromEnv(env: Readonly<Record<string, string | undefined>> = process.env, restorable: () => boolean = canRestorePriority): SavePriority {
  const raw = env[SAVE_PRIORITY_ENV];
  if (raw === undefined || raw === '') return restorable() ? 'idle' : 'low';
  if (isSavePriority(raw)) return raw;
  throw new TrainerError('TRAINER_CONFIG_INVALID', `${SAVE_PRIORITY_ENV}: expected one of ${SAVE_PRIORITIES.join(', ')}, found ${JSON.stringify(raw)}`, {
    fields: [SAVE_PRIORITY_ENV],
  });
}

/** CAP_SYS_NICE's bit in the `CapEff` mask of `/proc/self/status`. */
const CAP_SYS_NICE = 23n;

/**
 * Whether this process may give a thread back a higher priority (Linux:
 * CAP_SYS_NICE in its effective capabilities, or a soft RLIMIT_NICE of 20 or
 * more, which allows nice 0). Unprivileged processes usually may not: Linux
 * treats leaving `SCHED_IDLE` like lowering the nice value.
 *
 * @returns true when {@link restoreThreadPriority} can work.
 */
export function canRestorePriority(): boolean {
  if (process.platform !== 'linux') return false;
  try {
    const cap = /^CapEff:\s*([0-9a-f]+)\s*$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (cap !== null && ((BigInt(`0x${cap[1] as string}`) >> CAP_SYS_NICE) & 1n) === 1n) return true;
    const limit = /^Max nice priority\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return limit !== null && (limit[1] === 'unlimited' || Number(limit[1]) >= 20);
  } catch {
    return false;
  }
}

/**
 * Gives thread `tid` of this process the training threads' priority back
 * (SCHED_OTHER, nice 0). Best effort, like lowering it.
 *
 * @param tid - a thread id (Linux).
 * @returns whether it now runs at that priority.
 */
export function restoreThreadPriority(tid: number): boolean {
  if (process.platform !== 'linux') return false;
  try {
    execFileSync('chrt', ['--other', '--pid', '0', String(tid)], { stdio: 'ignore', timeout: 10_000 });
    setPriority(tid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The calling thread's id (Linux).
 * @returns it, or null without `/proc/thread-self`.
 */
export function currentThreadId(): number | null {
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/** Linux's number for the `SCHED_IDLE` policy (field 41 of `/proc/<pid>/task/<tid>/stat`). */
export const SCHED_IDLE = 5;

/**
 * A thread's scheduling policy and nice value from its `/proc/<pid>/task/<tid>/stat` line (Linux).
 * @param stat - the file's text.
 * @returns its fields 41 (policy) and 19 (nice).
 */
export function scheduleOfStat(stat: string): { policy: number; nice: number } {
  // The command name (field 2) may contain spaces and parentheses: split after its last closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { nice: Number(fields[16]), policy: Number(fields[38]) };
}

/**
 * The calling thread's scheduling policy and nice value (Linux).
 * @returns them; throws without `/proc`.
 */
export function threadSchedule(): { policy: number; nice: number } {
  return scheduleOfStat(readFileSync('/proc/thread-self/stat', 'utf8'));
}

/**
 * Lowers the calling thread's CPU priority as `requested` says (never raises
 * it) and returns what holds afterwards. On Linux, `setpriority` and
 * `sched_setscheduler` on a thread id change that thread alone (threads it
 * starts inherit them); `SCHED_IDLE` is set through util-linux's `chrt`, the
 * one way to reach it from Node.js without native code. Best effort: where a
 * step is unavailable or refused, the thread keeps the priority it reached.
 *
 * @param requested - `idle`: nice {@link SAVE_THREAD_NICE}, then `SCHED_IDLE`; `low`: the nice value only; `normal`: unchanged.
 * @returns the priority the thread runs at: `idle`, `low`, or `normal` (also off Linux).
 */
export function lowerThreadPriority(requested: SavePriority): SavePriority {
  if (process.platform !== 'linux' || requested === 'normal') return 'normal';
  const tid = currentThreadId();
  if (tid === null) return 'normal'; // no /proc: an unchanged priority only costs speed
  try {
    if (getPriority(tid) < SAVE_THREAD_NICE) setPriority(tid, SAVE_THREAD_NICE);
  } catch {
    // refused: the thread keeps its priority
  }
  if (requested === 'idle') {
    try {
      execFileSync('chrt', ['--idle', '--pid', '0', String(tid)], { stdio: 'ignore', timeout: 10_000 });
    } catch {
      // no chrt, or the policy is refused (a seccomp filter): the nice value stays
    }
  }
  try {
    const now = threadSchedule();
    if (now.policy === SCHED_IDLE) return 'idle';
    return now.nice >= SAVE_THREAD_NICE ? 'low' : 'normal';
  } catch {
    return 'normal';
  }
}
