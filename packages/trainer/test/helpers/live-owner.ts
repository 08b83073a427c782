import { spawn } from 'node:child_process';
import { hostname } from 'node:os';

/** A live process that is not this one (its pid is alive while the test runs). */
export function otherProcess(): { pid: number; stop: () => void } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  return { pid: child.pid as number, stop: () => child.kill('SIGKILL') };
}

/** A `run.lock` record naming `pid` on this host. */
export function lockRecord(pid: number, started: string | null, token = 'other-token'): string {
  return `${JSON.stringify({ format: 'llmcp-lock/1', host: hostname(), pid, started, boot: null, token, since: new Date().toISOString() })}\n`;
}
