/**
 * Signals to a real `llmcp train`, each delivered at a deterministic point
 * (the save worker frozen by the shim before a latest publication):
 * SIGTERM and SIGINT stop with a checkpoint (exit 130) and resume to the
 * bytes of an uninterrupted run; a second SIGINT exits at once and the run
 * still resumes to the same bytes; SIGUSR1 checkpoints and the run
 * completes unchanged.
 */
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { classifyCli, describeExit, finalDifference, harnessConfig, latestPublishGlob, llmcp, llmcpRun, referenceRun, runEvents, scratch, waitForText, type Scratch } from '../src/run-harness.ts';
import { buildFaultShim, createPausePoint } from '../src/shim.ts';

const shim = buildFaultShim();
if ('skip' in shim) console.warn(`[reliability] ${shim.skip}`);
const CONFIG = harnessConfig();
let reference: string;
let s: Scratch;
beforeAll(async () => {
  if (!('skip' in shim)) reference = await referenceRun(CONFIG);
}, 60_000);
afterEach(() => s?.dispose());

async function signalled(signals: NodeJS.Signals[]): Promise<{ run: string; exit: Awaited<ReturnType<typeof llmcpRun>>; exitedWhilePaused: boolean }> {
  s = scratch();
  const run = path.join(s.dir, 'r');
  const cfg = s.config('cfg.json', CONFIG);
  const pause = createPausePoint();
  try {
    const child = llmcp(['train', run, '--config', cfg, '--plain'], { rules: [{ op: 'rename', path: latestPublishGlob(run), nth: 2, action: pause.before }] });
    await pause.waitReached({ deadlineMs: 30_000, alive: child.alive });
    let exitedWhilePaused = false;
    for (const [i, sig] of signals.entries()) {
      child.kill(sig);
      if (i > 0 && sig === 'SIGINT') {
        // "A second SIGINT exits at once": also while the save worker is stuck in a file-system call.
        exitedWhilePaused = await Promise.race([child.exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))]);
        break;
      }
      // Each signal is acknowledged on stderr before the next one is sent.
      const seen = await waitForText(child, new RegExp(`(${sig}[^\\n]*[\\s\\S]*){${signals.slice(0, i + 1).filter((x) => x === sig).length}}`), 20_000);
      if (!seen && child.alive()) throw new Error(`signal ${i + 1} (${sig}) was not acknowledged within 20 s while a save was in flight: ${child.stderr()}`);
    }
    await pause.release({ alive: child.alive });
    return { run, exit: await child.exited, exitedWhilePaused };
  } finally {
    pause.dispose();
  }
}

describe.skipIf('skip' in shim)('llmcp train under signals', () => {
  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    it(`${sig} checkpoints and exits 130; resume reaches the bytes of an uninterrupted run`, async () => {
      const { run, exit } = await signalled([sig]);
      expect(exit.code, describeExit(exit)).toBe(130);
      expect(exit.stdout).toMatch(/stopped at step \d+/);
      expect(runEvents(run).some((e) => e.event === 'stopped')).toBe(true);
      const r = classifyCli(await llmcpRun(['resume', run, '--plain']));
      expect(r.kind, describeExit(r.exit)).toBe('ok');
      expect(finalDifference(reference, run)).toBeNull();
    });
  }

  it('a second SIGINT exits at once (130), even while the save worker is blocked in a rename; the run still resumes to the same bytes and verifies', async () => {
    const { run, exit, exitedWhilePaused } = await signalled(['SIGINT', 'SIGINT']);
    expect(exitedWhilePaused, `the process did not exit within 10 s of the second SIGINT while its save worker was blocked: ${describeExit(exit)}`).toBe(true);
    // With its save worker blocked in a system call the process ends by SIGINT's default action (the worker cannot be
    // joined): a shell reports that as 130 as well.
    expect(exit.code === 130 || exit.signal === 'SIGINT', describeExit(exit)).toBe(true);
    expect(exit.stdout).not.toMatch(/stopped at step/);
    const r = classifyCli(await llmcpRun(['resume', run, '--plain']));
    expect(r.kind, describeExit(r.exit)).toBe('ok');
    expect(finalDifference(reference, run)).toBeNull();
    expect(classifyCli(await llmcpRun(['verify', run])).kind).toBe('ok');
  });

  it('SIGUSR1 writes a checkpoint and training continues to the unchanged final bytes', async () => {
    const { run, exit } = await signalled(['SIGUSR1']);
    expect(exit.code, describeExit(exit)).toBe(0);
    expect(finalDifference(reference, run)).toBeNull();
  });
});
