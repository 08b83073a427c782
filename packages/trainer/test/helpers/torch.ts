/** The torch engine in tests: the interpreter, whether it has PyTorch, and watching rank processes. */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** The Python the torch engine tests use: `$LLMCP_PYTHON`, else Debian's (`python3-torch` lives there). */
export const TORCH_PYTHON: string = process.env['LLMCP_PYTHON'] ?? '/usr/bin/python3';

/**
 * Why the torch engine cannot run here, or null when it can.
 *
 * @returns the reason to skip.
 */
function torchProblem(): string | null {
  if (!existsSync(TORCH_PYTHON)) return `${TORCH_PYTHON} not found (set LLMCP_PYTHON to a Python with PyTorch)`;
  const r = spawnSync(TORCH_PYTHON, ['-c', 'import torch, torch.distributed as d; assert d.is_gloo_available()'], { encoding: 'utf8', timeout: 120_000 });
  return r.status === 0 ? null : `PyTorch with gloo is not importable by ${TORCH_PYTHON} (Debian: apt-get install python3-torch): ${(r.stderr || r.error?.message || '').trim().split('\n').at(-1) ?? ''}`;
}

/** Why the torch engine tests skip (null: they run). */
export const TORCH_SKIP: string | null = torchProblem();

/** Whether a process is gone (no such pid, or a zombie nobody has reaped yet). */
export function processGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

/**
 * Waits until every process is gone, polling; rejects naming the survivors after `limitMs`.
 *
 * @param pids - process ids.
 * @param limitMs - how long they may take.
 */
export async function waitGone(pids: readonly number[], limitMs: number): Promise<void> {
  const deadline = performance.now() + limitMs;
  for (;;) {
    const alive = pids.filter((pid) => !processGone(pid));
    if (alive.length === 0) return;
    if (performance.now() > deadline) throw new Error(`processes ${alive.join(', ')} still run ${limitMs} ms later`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
