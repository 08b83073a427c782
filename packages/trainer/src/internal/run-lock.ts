/**
 * A run directory is used by one process at a time: `run.lock` names its owner.
 *
 * Taking the lock is atomic *with its content*: the owner record is written
 * and fsynced into a private temporary file, which is then hard-linked to
 * `run.lock` (`link(2)` fails with EEXIST when the lock exists). So no other
 * process can ever see an empty or half-written lock: a lock that does not
 * parse was not written by this code, its owner is unknown, and it is never
 * taken over.
 *
 * The owner record holds the host name, the pid, the process start time (from
 * `/proc/<pid>/stat`, so a reused pid is not mistaken for the owner), the boot
 * id and a random token. A lock is stale — and taken over — only when its
 * owner is provably gone: same host, and the pid no longer runs, or it runs
 * but started at another time, or the machine has rebooted since. A lock from
 * another host, or whose liveness cannot be decided, is never stolen.
 *
 * Taking over a stale lock is serialized by a second lock, `run.lock.steal`
 * (taken the same way): its holder re-reads `run.lock`, removes it only if it
 * still holds the stale owner's token, and links its own. Two processes that
 * both find the same stale lock therefore cannot both end up owning the run.
 * The owner can check at any time that `run.lock` still carries its token
 * ({@link RunLock.assertHeld}); release removes the lock only if it does.
 */
import { closeSync, fsyncSync, linkSync, lstatSync, openSync, readFileSync, renameSync, unlinkSync, constants } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { TrainerError } from '../errors.ts';
import { RUN_FILES } from '../run-layout.ts';
import { writeAllSync } from './durable-fs.ts';

/** The content of `run.lock`. */
export interface LockOwner {
  readonly format: 'llmcp-lock/1';
  readonly host: string;
  readonly pid: number;
  /** Start time of the process in clock ticks since boot (`/proc/<pid>/stat` field 22), or null where unknown. */
  readonly started: string | null;
  /** `/proc/sys/kernel/random/boot_id`, or null where unknown. */
  readonly boot: string | null;
  readonly token: string;
  /** ISO-8601 time the lock was taken (informational). */
  readonly since: string;
}

/** Test hooks: called at points where another process could interleave. */
export interface RunLockHooks {
  /** After a lock was found held by a stale owner, before the takeover starts. */
  readonly beforeTakeover?: (file: string) => void;
}

let hooks: RunLockHooks = {};

/**
 * Installs test hooks (tests only).
 *
 * @param next - the hooks; `{}` removes them.
 */
export function setRunLockHooks(next: RunLockHooks): void {
  hooks = next;
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Start time of a process (clock ticks since boot), or null where it cannot be read.
 *
 * @param pid - the process id.
 * @returns field 22 of `/proc/<pid>/stat`.
 */
export function processStartTime(pid: number): string | null {
  const stat = readText(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // The command name (field 2) may contain spaces and parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19] ?? null; // field 22 overall; fields[0] is field 3
}

const bootId = (): string | null => readText('/proc/sys/kernel/random/boot_id')?.trim() ?? null;

function ownRecord(): LockOwner {
  return {
    format: 'llmcp-lock/1',
    host: hostname(),
    pid: process.pid,
    started: processStartTime(process.pid),
    boot: bootId(),
    token: randomUUID(),
    since: new Date().toISOString(),
  };
}

/** What a lock file says about its owner. */
type Verdict =
  | { readonly kind: 'absent' }
  | { readonly kind: 'owner'; readonly owner: LockOwner; readonly state: 'alive' | 'stale' | 'unknown'; readonly why: string }
  /** Not a regular file: the directory is damaged, not in use. */
  | { readonly kind: 'not-a-file'; readonly why: string }
  /** A file that names no owner we can check: possibly in use. */
  | { readonly kind: 'unreadable'; readonly why: string };

function pidRuns(pid: number): boolean | null {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return false;
    if (code === 'EPERM') return true;
    return null;
  }
}

function parseOwner(text: string): LockOwner | null {
  try {
    const v = JSON.parse(text) as Partial<LockOwner>;
    if (typeof v !== 'object' || v === null) return null;
    if (v.format === undefined && Number.isSafeInteger(v.pid) && Object.keys(v).length === 1) {
      // A lock of an earlier llmcp (`{"pid":N}`, always local): liveness by pid alone.
      return { format: 'llmcp-lock/1', host: hostname(), pid: v.pid as number, started: null, boot: null, token: `legacy:${text}`, since: '' };
    }
    if (v.format !== 'llmcp-lock/1' || typeof v.host !== 'string' || !Number.isSafeInteger(v.pid) || typeof v.token !== 'string') return null;
    return { ...(v as LockOwner), started: typeof v.started === 'string' ? v.started : null, boot: typeof v.boot === 'string' ? v.boot : null };
  } catch {
    return null;
  }
}

function judge(file: string): Verdict {
  let text: string;
  try {
    const info = lstatSync(file);
    if (!info.isFile()) return { kind: 'not-a-file', why: `${file} is not a regular file (${info.isDirectory() ? 'a directory' : info.isSymbolicLink() ? 'a symbolic link' : 'a special file'})` };
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'unreadable', why: `${file} cannot be read: ${(e as Error).message}` };
  }
  const owner = parseOwner(text);
  if (owner === null) return { kind: 'unreadable', why: `locked by an unknown owner: ${path.basename(file)} does not hold an owner record (${text.length} bytes)` };
  if (owner.host !== hostname()) return { kind: 'owner', owner, state: 'unknown', why: `held by process ${owner.pid} on host ${owner.host}` };
  const boot = bootId();
  if (owner.boot !== null && boot !== null && owner.boot !== boot) return { kind: 'owner', owner, state: 'stale', why: `taken before the machine restarted` };
  const runs = pidRuns(owner.pid);
  if (runs === false) return { kind: 'owner', owner, state: 'stale', why: `process ${owner.pid} no longer exists` };
  if (runs === null) return { kind: 'owner', owner, state: 'unknown', why: `cannot tell whether process ${owner.pid} runs` };
  const started = processStartTime(owner.pid);
  if (owner.started !== null && started !== null && started !== owner.started) {
    return { kind: 'owner', owner, state: 'stale', why: `process ${owner.pid} is another process than the owner (the pid was reused)` };
  }
  return { kind: 'owner', owner, state: 'alive', why: `in use by process ${owner.pid}` };
}

/** Publishes `record` as `file` atomically; false when `file` exists. */
function linkNew(file: string, record: LockOwner): boolean {
  const tmp = `${file}.tmp-${process.pid}-${record.token}`;
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  try {
    writeAllSync(fd, Buffer.from(`${JSON.stringify(record)}\n`));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // a leftover .tmp- lock file is harmless: it is never read as the lock
    }
  }
}

/** Removes `file` only if it still carries `token` (rename aside, check, restore on mismatch). */
function removeIfToken(file: string, token: string): boolean {
  const aside = `${file}.stale-${process.pid}-${randomUUID()}`;
  try {
    renameSync(file, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  const moved = parseOwner(readText(aside) ?? '');
  if (moved?.token === token) {
    unlinkSync(aside);
    return true;
  }
  // Not the file we judged: put it back (link fails only if yet another lock appeared meanwhile).
  try {
    linkSync(aside, file);
  } finally {
    unlinkSync(aside);
  }
  return false;
}

/** A held run lock. */
export interface RunLock {
  /** The owner record in `run.lock`. */
  readonly owner: LockOwner;
  /** Releases the lock (only if `run.lock` still carries this owner's token). Never throws. */
  (): void;
  /**
   * Checks that `run.lock` still names this process.
   *
   * @throws TrainerError `TRAINER_RUN_LOCKED` when it does not.
   */
  assertHeld(): void;
}

function lockedError(runDir: string, file: string, why: string, ownerCertain = false): TrainerError {
  const advice = ownerCertain ? 'wait for it or stop it first' : `if no process uses the run, remove ${file}`;
  return new TrainerError('TRAINER_RUN_LOCKED', `${runDir} is locked: ${why} (${path.basename(file)}); ${advice}`, { path: file });
}

function invalidLock(file: string, why: string): TrainerError {
  return new TrainerError('TRAINER_RUN_INVALID', `${why}; remove it if no process uses the run`, { path: file });
}

/**
 * Takes the lock of `runDir` (which must exist).
 *
 * @param runDir - the run directory.
 * @returns the held lock; calling it releases the lock.
 * @throws TrainerError `TRAINER_RUN_LOCKED` when another process holds it (or may: an unknown owner is never displaced), `TRAINER_RUN_INVALID` when `run.lock` is not a lock file, `TRAINER_IO` when it cannot be created.
 */
export function acquireRunLock(runDir: string): RunLock {
  const file = path.join(runDir, RUN_FILES.lock);
  const steal = `${file}.steal`;
  const record = ownRecord();
  const tryLink = (target: string): boolean => {
    try {
      return linkNew(target, record);
    } catch (e) {
      throw new TrainerError('TRAINER_IO', `cannot create ${target}: ${(e as Error).message}`, { path: target, cause: e });
    }
  };
  for (let attempt = 0; attempt < 8; attempt += 1) {
    if (tryLink(file)) return heldLock(runDir, file, record);
    const verdict = judge(file);
    if (verdict.kind === 'absent') continue; // released meanwhile: try again
    if (verdict.kind === 'not-a-file') throw invalidLock(file, verdict.why);
    if (verdict.kind === 'unreadable') throw lockedError(runDir, file, verdict.why);
    if (verdict.owner.token === record.token) return heldLock(runDir, file, record);
    if (verdict.owner.host === record.host && verdict.owner.pid === process.pid) {
      throw new TrainerError('TRAINER_RUN_LOCKED', `${runDir} is already open in this process`, { path: file });
    }
    if (verdict.state !== 'stale') throw lockedError(runDir, file, verdict.why, verdict.state === 'alive');
    hooks.beforeTakeover?.(file);
    // Stale: take it over under the steal lock.
    if (!tryLink(steal)) {
      const other = judge(steal);
      if (other.kind === 'owner' && other.state === 'stale') {
        removeIfToken(steal, other.owner.token);
        continue;
      }
      if (other.kind === 'absent') continue;
      if (other.kind === 'not-a-file') throw invalidLock(steal, other.why);
      throw lockedError(runDir, file, `being taken over by another process (${other.why})`);
    }
    try {
      const again = judge(file);
      if (again.kind === 'owner' && again.owner.token === verdict.owner.token) removeIfToken(file, verdict.owner.token);
    } finally {
      removeIfToken(steal, record.token);
    }
  }
  throw new TrainerError('TRAINER_RUN_LOCKED', `could not take the lock of ${runDir}: it kept changing hands`, { path: file });
}

function heldLock(runDir: string, file: string, record: LockOwner): RunLock {
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    try {
      removeIfToken(file, record.token);
    } catch {
      // A lock that cannot be removed names a process that will be gone: the next user finds it stale.
    }
  };
  return Object.assign(release, {
    owner: record,
    assertHeld: (): void => {
      const now = judge(file);
      if (now.kind === 'owner' && now.owner.token === record.token) return;
      throw new TrainerError(
        'TRAINER_RUN_LOCKED',
        `${runDir}: run.lock no longer names this process (${now.kind === 'absent' ? 'it was removed' : now.why}); another process may be using the run, so this one stops`,
        { path: file },
      );
    },
  });
}

/**
 * Who holds the lock of `runDir`, without taking it.
 *
 * @param runDir - the run directory.
 * @returns the owner and whether it is alive, or null when the run is not locked.
 */
export function lockHolder(runDir: string): { readonly owner: LockOwner | null; readonly state: 'alive' | 'stale' | 'unknown'; readonly why: string } | null {
  const v = judge(path.join(runDir, RUN_FILES.lock));
  if (v.kind === 'absent') return null;
  if (v.kind === 'unreadable' || v.kind === 'not-a-file') return { owner: null, state: 'unknown', why: v.why };
  return { owner: v.owner, state: v.state, why: v.why };
}
