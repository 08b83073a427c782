/**
 * How the background save thread shares the CPU with training — the one home
 * of that rule (the save worker applies it, the saver reads the setting).
 *
 * Training uses every core by default and a multi-threaded step waits for its
 * slowest thread at every phase barrier. A save thread at the training
 * threads' priority, or merely niced, takes a core whenever a training thread
 * sleeps at a barrier and keeps it for its time slice when that thread wakes,
 * so each step it overlaps runs 10–30% slower. Under Linux's `SCHED_IDLE`
 * policy it runs only on a core nothing else wants and is preempted at once
 * by a waking training thread (bench/save-priority-contention.ts, 2 cores,
 * both training: steps overlapping a busy thread ran a median 52% slower at
 * normal priority, 18% at nice 10, 5% under `SCHED_IDLE`).
 *
 * The cost: on a machine saturated by other work an idle-policy save waits for
 * idle time, and a save still running at the next checkpoint makes training
 * wait for it. `LLMCP_SAVE_PRIORITY=low` keeps the niced thread, `normal` the
 * training threads' priority. Linux alone; elsewhere the thread is unchanged.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { TrainerError } from './errors.ts';

/** The save thread's priorities: `idle` (default: nice {@link SAVE_THREAD_NICE}, then `SCHED_IDLE`), `low` (the nice value), `normal`. */
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
 * The save thread priority `LLMCP_SAVE_PRIORITY` selects (unset or empty: `idle`).
 *
 * @param env - the environment to read (default `process.env`).
 * @returns the priority.
 * @throws TrainerError `TRAINER_CONFIG_INVALID` naming the variable for any other value.
 */
export function savePriorityFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): SavePriority {
  const raw = env[SAVE_PRIORITY_ENV];
  if (raw === undefined || raw === '') return 'idle';
  if (isSavePriority(raw)) return raw;
  throw new TrainerError('TRAINER_CONFIG_INVALID', `${SAVE_PRIORITY_ENV}: expected one of ${SAVE_PRIORITIES.join(', ')}, found ${JSON.stringify(raw)}`, {
    fields: [SAVE_PRIORITY_ENV],
  });
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

/** The calling thread's scheduling policy and nice value (Linux; throws without `/proc`). */
function threadSchedule(): { policy: number; nice: number } {
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
  let tid: number;
  try {
    tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return 'normal'; // no /proc: an unchanged priority only costs speed
  }
  if (!Number.isInteger(tid) || tid <= 0) return 'normal';
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
