/**
 * Bounded child processes: every child the harness starts has a deadline
 * after which it is SIGKILLed and reported as hung, so nothing can hang CI.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './shim.ts';

/** How a child ended. */
export interface ChildExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** True when the harness killed it at its deadline. */
  readonly timedOut: boolean;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** A running child. */
export interface RunningChild {
  readonly process: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<ChildExit>;
  /** Whether it has not exited yet. */
  alive(): boolean;
  stdout(): string;
  stderr(): string;
  kill(signal: NodeJS.Signals): void;
}

/** Options of {@link startChild}. */
export interface ChildOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** SIGKILL after this long (default 60 s). */
  readonly timeoutMs?: number;
  /** Written to stdin, which is then closed (default: stdin closed at once). */
  readonly input?: string;
}

/**
 * Starts `command args` with piped output and a deadline.
 *
 * @param command - executable.
 * @param args - arguments.
 * @param options - environment, cwd, deadline.
 * @returns the running child.
 */
export function startChild(command: string, args: readonly string[], options: ChildOptions = {}): RunningChild {
  const started = performance.now();
  const child = spawn(command, args, { cwd: options.cwd ?? REPO_ROOT, env: options.env ?? { ...process.env, NODE_OPTIONS: '' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let running = true;
  let timedOut = false;
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (err += c));
  child.stdin?.on('error', () => {});
  if (options.input !== undefined) child.stdin?.end(options.input);
  else child.stdin?.end();
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, options.timeoutMs ?? 60_000);
  const exited = new Promise<ChildExit>((resolve) => {
    child.on('close', (code, signal) => {
      running = false;
      clearTimeout(timer);
      resolve({ code, signal, timedOut, stdout: out, stderr: err, ms: performance.now() - started });
    });
    child.on('error', (e) => {
      running = false;
      clearTimeout(timer);
      resolve({ code: null, signal: null, timedOut, stdout: out, stderr: `${err}${String(e)}`, ms: performance.now() - started });
    });
  });
  return {
    process: child,
    pid: child.pid ?? -1,
    exited,
    alive: () => running,
    stdout: () => out,
    stderr: () => err,
    kill: (signal) => {
      if (running) child.kill(signal);
    },
  };
}

/**
 * The live children of a process (Linux: from /proc; elsewhere none), e.g. a trainer's engine ranks.
 *
 * @param pid - the parent.
 * @returns their process ids.
 */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid && fields[0] !== 'Z') out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * Whether a process is gone: no such pid, or a zombie nobody reaped yet.
 *
 * @param pid - the process.
 * @returns true when it no longer runs.
 */
export function processGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/** The `llmcp` binary from sources (as the root `pnpm llmcp` script runs it). */
export const LLMCP_BIN: string = path.join(REPO_ROOT, 'packages', 'cli', 'src', 'bin.ts');

/** Node arguments that run TypeScript sources of the workspace. */
export const SOURCE_NODE_ARGS: readonly string[] = ['--conditions=@llmcp/source', '--import', 'tsx'];

/**
 * Starts `llmcp <args>` from sources (cwd = repository root).
 *
 * @param args - CLI arguments.
 * @param options - environment (e.g. from `shimEnv`), deadline.
 * @returns the running child.
 */
export function startLlmcp(args: readonly string[], options: ChildOptions = {}): RunningChild {
  return startChild(process.execPath, [...SOURCE_NODE_ARGS, LLMCP_BIN, ...args], options);
}

/**
 * Runs `llmcp <args>` to the end.
 *
 * @param args - CLI arguments.
 * @param options - environment, deadline.
 * @returns how it ended.
 */
export function runLlmcp(args: readonly string[], options: ChildOptions = {}): Promise<ChildExit> {
  return startLlmcp(args, options).exited;
}
