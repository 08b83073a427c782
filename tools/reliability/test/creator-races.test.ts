/**
 * The CI slice of the creator races (../src/creator-races.ts; `pnpm soak
 * --only races` runs every pair at every pause): two forks from different
 * runs into one new directory (the first frozen right after its mkdir, the
 * reported defect: both exited 0 and the directory held two runs), and a
 * train against a fork at the lock.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCreatorRace, type CreatorRace } from '../src/creator-races.ts';
import { harnessConfig, llmcpRun, referenceRun, scratch, type Scratch } from '../src/run-harness.ts';
import { buildFaultShim } from '../src/shim.ts';

const shim = buildFaultShim();
let sources: Scratch;
let sourceA = '';
let sourceB = '';
let config = '';

beforeAll(async () => {
  if ('skip' in shim) return;
  sources = scratch();
  config = sources.config('cfg.json', harnessConfig());
  sourceA = await referenceRun(harnessConfig());
  // A second run of another id (and another rate), so its slots are not the first one's.
  sourceB = path.join(sources.dir, 'b');
  const b = await llmcpRun(['train', sourceB, '--config', sources.config('b.json', harnessConfig({ schedule: { kind: 'constant', rate: 0.01 } })), '--plain']);
  expect(b.code).toBe(0);
}, 120_000);
afterAll(() => sources?.dispose());

const SLICE: readonly CreatorRace[] = [
  { first: 'fork-a', second: 'fork-b', pause: 'after-mkdir' },
  { first: 'train', second: 'fork-a', pause: 'before-lock' },
  { first: 'fork-b', second: 'train', pause: 'after-lock' },
];

describe.skipIf('skip' in shim)('racing creators of one new run directory (defect 3)', () => {
  it.each(SLICE)('$first against $second, the first paused $pause: exactly one wins, the loser touches nothing, one run verifies', async (race) => {
    const s = scratch();
    try {
      const o = await runCreatorRace(race, { sourceA, sourceB, config, scratch: s.dir });
      expect(o.problem).toBeNull();
    } finally {
      s.dispose();
    }
  });
});
