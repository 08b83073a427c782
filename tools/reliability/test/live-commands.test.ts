/**
 * The CI slice of the commands looped against a run being trained
 * (../src/live-commands.ts; `pnpm soak --only live` runs many rounds): one
 * round of sample, export, eval, status, inspect, diff, report and verify
 * while the run publishes a checkpoint every 4 steps — no false failure
 * (verify never exits 1, export never reports a rotated slot as damaged) and
 * no write into the run by any of them.
 */
import { describe, expect, it } from 'vitest';
import { formatLiveLoopReport, runLiveCommandLoop } from '../src/live-commands.ts';
import { scratch } from '../src/run-harness.ts';
import { buildFaultShim } from '../src/shim.ts';

const shim = buildFaultShim();

describe.skipIf('skip' in shim)('commands against a run being trained', () => {
  it('every command of one round exits as on a quiet run, and none writes into the run', async () => {
    const s = scratch();
    try {
      const r = await runLiveCommandLoop({ rounds: 1, dir: s.dir });
      const text = formatLiveLoopReport(r);
      expect(r.failures, text).toEqual([]);
      expect(r.commands).toBe(9);
      expect(r.writes).toBe(0);
    } finally {
      s.dispose();
    }
  }, 170_000);
});
