/**
 * The libc fault-injection shim (shim/faultshim.c): building it with the
 * system C compiler, the environment that loads it into a child process, its
 * rule syntax, pause points and its call log. See ../README.md
 * ("The fault shim") for the rules.
 *
 * ```ts
 * const shim = buildFaultShim();
 * if ('skip' in shim) return console.log(shim.skip);
 * const pause = createPausePoint();
 * spawn(node, args, { env: shimEnv([{ op: 'mkdir', path: '/run', nth: 1, action: pause.after }]) });
 * await pause.waitReached({ deadlineMs: 10_000 });
 * // … race …
 * await pause.release();
 * ```
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitUntil } from './wait.ts';

/** Repository root. */
export const REPO_ROOT: string = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

/** The shim's C source. */
export const SHIM_SOURCE: string = path.join(REPO_ROOT, 'tools', 'reliability', 'shim', 'faultshim.c');

/** Where built shims are cached (one file per source hash). */
export const SHIM_CACHE_DIR: string = path.join(REPO_ROOT, 'node_modules', '.cache', 'llmcp-faultshim');

/** Environment variables the shim reads. */
export const SHIM_ENV = {
  rules: 'LLMCP_FAULTSHIM_RULES',
  log: 'LLMCP_FAULTSHIM_LOG',
  pauseTimeout: 'LLMCP_FAULTSHIM_PAUSE_TIMEOUT_MS',
} as const;

/** Operation classes (each covers every libc entry point listed in the README). */
export type FaultOp = 'open' | 'write' | 'fsync' | 'rename' | 'mkdir' | 'unlink' | 'link' | 'symlink' | 'any';

/** Every operation class except `any`. */
export const FAULT_OPS: readonly Exclude<FaultOp, 'any'>[] = ['open', 'write', 'fsync', 'rename', 'mkdir', 'unlink', 'link', 'symlink'];

/**
 * What a matching call does: `fail:<ERRNO>` (return -1 with that errno, the
 * call is not made), `short` (writes: write only half, at least one byte),
 * `delay:<ms>`, `kill` (SIGKILL before the call), `kill-after` (make the call,
 * then SIGKILL), `pause:<dir>` / `pause-after:<dir>` (see {@link createPausePoint}),
 * `log` (append the call to the log file).
 */
export type FaultAction =
  | `fail:${string}`
  | 'short'
  | `delay:${number}`
  | 'kill'
  | 'kill-after'
  | `pause:${string}`
  | `pause-after:${string}`
  | 'log';

/** One rule. */
export interface FaultRule {
  /** Operation class(es). */
  readonly op: FaultOp | readonly FaultOp[];
  /**
   * A substring of the absolute path; a glob (fnmatch(3), `*` also matches `/`)
   * when it contains `*`, `?` or `[`; the exact path when it starts with `^`
   * (see {@link exactPath}). Rename and link match either path; write and
   * fsync the path the fd was opened with.
   */
  readonly path: string;
  /** 1-based count of matching calls: N (only the N-th), `N+` (the N-th and every later one) or `every` (default). */
  readonly nth?: number | `${number}+` | 'every';
  readonly action: FaultAction;
  /** Count only calls that succeeded (decided after the call: for `pause-after`, `kill-after` and `log`). */
  readonly ok?: boolean;
}

/** The result of {@link buildFaultShim}. */
export type FaultShim = { readonly path: string } | { readonly skip: string };

let built: FaultShim | null = null;

function findCompiler(): string | null {
  for (const cc of [process.env.CC, 'cc', 'gcc', 'clang']) {
    if (cc === undefined || cc === '') continue;
    const r = spawnSync(cc, ['--version'], { stdio: 'ignore' });
    if (r.status === 0) return cc;
  }
  return null;
}

/**
 * Builds the shim with the system C compiler (`$CC`, `cc`, `gcc` or `clang`:
 * `-shared -fPIC -O2 -ldl -lpthread`) into the cache directory, named by the
 * SHA-256 of the source, so it is rebuilt only when the source changes
 * (several processes may build at once: the file is renamed into place).
 *
 * @returns the shared object's path, or a reason to skip (no compiler, not Linux/glibc, build failed).
 */
export function buildFaultShim(): FaultShim {
  if (built !== null) return built;
  built = buildUncached();
  return built;
}

function buildUncached(): FaultShim {
  if (process.platform !== 'linux') return { skip: `the fault shim needs Linux (LD_PRELOAD and glibc); this is ${process.platform}` };
  const source = readFileSync(SHIM_SOURCE);
  const hash = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const target = path.join(SHIM_CACHE_DIR, `faultshim-${hash}.so`);
  if (existsSync(target)) return { path: target };
  const cc = findCompiler();
  if (cc === null) return { skip: 'no C compiler (cc, gcc or clang; or set CC): the fault-shim tests are skipped' };
  mkdirSync(SHIM_CACHE_DIR, { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  const r = spawnSync(cc, ['-shared', '-fPIC', '-O2', '-Wall', '-U_FORTIFY_SOURCE', '-o', tmp, SHIM_SOURCE, '-ldl', '-lpthread'], { encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(tmp, { force: true });
    return { skip: `building the fault shim with ${cc} failed: ${(r.stderr || r.error?.message || '').trim().slice(0, 2000)}` };
  }
  renameSync(tmp, target);
  return { path: target };
}

/**
 * The shim path, or throws with the skip reason (for code that already checked).
 *
 * @returns the path of the built shim.
 */
export function requireFaultShim(): string {
  const shim = buildFaultShim();
  if ('skip' in shim) throw new Error(shim.skip);
  return shim.path;
}

/**
 * A rule path that matches exactly this absolute path (no substring, no glob).
 *
 * @param file - an absolute path.
 * @returns the pattern (`^<file>`).
 */
export function exactPath(file: string): string {
  return `^${file}`;
}

function escapeValue(value: string): string {
  return value.replace(/[%,;=]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * One rule in the shim's syntax: `op=<ops>,path=<pattern>,nth=<n>,action=<action>`
 * (ops joined by `|`; `%`, `,`, `;`, `=` in values %-escaped).
 *
 * @param rule - the rule.
 * @returns its text.
 */
export function formatRule(rule: FaultRule): string {
  const ops = (typeof rule.op === 'string' ? [rule.op] : rule.op).join('|');
  const nth = rule.nth ?? 'every';
  if (typeof nth === 'number' && (!Number.isInteger(nth) || nth < 1)) throw new RangeError(`nth must be a positive integer, got ${nth}`);
  return `op=${ops},path=${escapeValue(rule.path)},nth=${nth},action=${escapeValue(rule.action)}${rule.ok === true ? ',ok=1' : ''}`;
}

/** Options of {@link shimEnv}. */
export interface ShimEnvOptions {
  /** Environment to extend (default `process.env`). */
  readonly base?: NodeJS.ProcessEnv;
  /** Log file for `log` rules and injected faults. */
  readonly log?: string;
  /** A paused call not released within this time SIGKILLs its process (default 300 000 ms in the shim). */
  readonly pauseTimeoutMs?: number;
}

/**
 * The environment of a child process under the shim: `LD_PRELOAD` (prepended),
 * the rules, the log file, and `UV_USE_IO_URING=0` (libuv then uses plain
 * syscalls through libc, which the shim sees). `NODE_OPTIONS` is cleared so a
 * parent's loaders do not leak in.
 *
 * @param rules - the rules, in priority order.
 * @param options - base environment, log file, pause timeout.
 * @returns the environment.
 * @throws Error when the shim cannot be built (check {@link buildFaultShim} first).
 */
export function shimEnv(rules: readonly FaultRule[], options: ShimEnvOptions = {}): NodeJS.ProcessEnv {
  const shim = requireFaultShim();
  const base = options.base ?? process.env;
  const preload = base.LD_PRELOAD === undefined || base.LD_PRELOAD === '' ? shim : `${shim}:${base.LD_PRELOAD}`;
  const env: NodeJS.ProcessEnv = {
    ...base,
    NODE_OPTIONS: '',
    LD_PRELOAD: preload,
    UV_USE_IO_URING: '0',
    [SHIM_ENV.rules]: rules.map(formatRule).join(';'),
  };
  if (options.log !== undefined) env[SHIM_ENV.log] = options.log;
  else delete env[SHIM_ENV.log];
  if (options.pauseTimeoutMs !== undefined) env[SHIM_ENV.pauseTimeout] = String(options.pauseTimeoutMs);
  return env;
}

/** One call recorded by the shim's log. */
export interface ShimCall {
  readonly op: Exclude<FaultOp, 'any'>;
  /** The libc function (`open64`, `pwrite64`, `renameat2`, …). */
  readonly func: string;
  readonly path: string;
  /** Second path (rename/link target, symlink target), or ''. */
  readonly path2: string;
  /** `call` for a `log` rule, else the text of the rule that acted. */
  readonly what: string;
  readonly result: number;
  readonly errno: number;
  readonly pid: number;
  readonly tid: number;
}

/**
 * Reads a shim log (one tab-separated line per call).
 *
 * @param file - the log file (missing → empty).
 * @returns the calls in order.
 */
export function readShimLog(file: string): ShimCall[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const [op, func, p, path2, what, result, errno, pid, tid] = line.split('\t');
      return {
        op: op as ShimCall['op'],
        func: func ?? '',
        path: p ?? '',
        path2: path2 ?? '',
        what: what ?? '',
        result: Number(result),
        errno: Number(errno),
        pid: Number(pid),
        tid: Number(tid),
      };
    });
}

/** What a paused call reported in `<dir>/reached`. */
export interface PauseReport {
  readonly op: string;
  readonly func: string;
  readonly path: string;
  readonly path2: string;
  readonly when: 'before' | 'after';
  readonly pid: number;
}

/** A pause point: a directory the shim signals through. */
export interface PausePoint {
  readonly dir: string;
  /** `pause:<dir>` — pause before the call. */
  readonly before: FaultAction;
  /** `pause-after:<dir>` — pause after the call. */
  readonly after: FaultAction;
  /** Whether a call is paused there now. */
  reached(): PauseReport | null;
  /**
   * Waits until a call pauses there; rejects at the deadline or when `alive()` turns false.
   *
   * @param options - deadline (ms) and an optional liveness check of the child.
   */
  waitReached(options: { deadlineMs: number; alive?: () => boolean }): Promise<PauseReport>;
  /**
   * Lets the paused call continue; resolves when the shim has consumed the
   * release, or at once when `alive()` turns false (bounded by the deadline).
   */
  release(options?: { deadlineMs?: number; alive?: () => boolean }): Promise<void>;
  /** Removes the directory. */
  dispose(): void;
}

function parseReport(text: string): PauseReport {
  const [op, func, p, path2, when, pid] = text.replace(/\n$/, '').split('\t');
  return { op: op ?? '', func: func ?? '', path: p ?? '', path2: path2 ?? '', when: when === 'after' ? 'after' : 'before', pid: Number(pid) };
}

/**
 * A fresh pause point under os.tmpdir(). Protocol: the shim creates
 * `<dir>/reached` (atomically, describing the call) and polls for
 * `<dir>/release` every millisecond; once it appears the shim deletes both
 * and continues. A rule with `nth` `N+`/`every` pauses again at the next
 * matching call.
 *
 * @returns the pause point.
 */
export function createPausePoint(): PausePoint {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'llmcp-pause-'));
  const reachedFile = path.join(dir, 'reached');
  const releaseFile = path.join(dir, 'release');
  const reached = (): PauseReport | null => {
    try {
      return parseReport(readFileSync(reachedFile, 'utf8'));
    } catch {
      return null;
    }
  };
  return {
    dir,
    before: `pause:${dir}`,
    after: `pause-after:${dir}`,
    reached,
    async waitReached({ deadlineMs, alive }) {
      let report: PauseReport | null = null;
      await waitUntil(
        () => {
          report = reached();
          if (report !== null) return true;
          if (alive !== undefined && !alive()) throw new Error(`the process exited before reaching the pause point ${dir}`);
          return false;
        },
        { deadlineMs, what: `a call to pause at ${dir}` },
      );
      return report as unknown as PauseReport;
    },
    async release(options = {}) {
      writeFileSync(releaseFile, '');
      const alive = options.alive ?? ((): boolean => true);
      await waitUntil(() => !existsSync(releaseFile) || !alive(), { deadlineMs: options.deadlineMs ?? 10_000, what: `the shim to consume ${releaseFile}` });
    },
    dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
