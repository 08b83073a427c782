/**
 * The CI slice of the hostile targets and inputs (../src/hostile-targets.ts;
 * `pnpm soak --only targets` runs every command on every kind): real `llmcp`
 * processes given a FIFO (and, where mknod is allowed, a device node with
 * /dev/zero's numbers) made in a scratch folder — an export with --force, an
 * import's config, a training corpus — refuse it with exit 3 at once and
 * leave it as it was. The old export blocked on the FIFO and turned a device
 * into a regular file; the old trainer blocked on a FIFO corpus.
 */
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { runHostileCase, type HostileCase } from '../src/hostile-targets.ts';
import { scratch } from '../src/run-harness.ts';
import { canMakeDeviceNodes } from '../../fixtures.ts';

const devices = canMakeDeviceNodes(os.tmpdir());
const SLICE: readonly HostileCase[] = [
  { command: 'export safetensors', kind: 'fifo', force: true },
  { command: 'import (the config)', kind: 'symlink-to-fifo', force: false },
  { command: 'train --corpus', kind: 'fifo', force: false },
  ...(devices ? ([{ command: 'export gguf', kind: 'character-device', force: true }] as const) : []),
];

describe('hostile targets and inputs on real processes', () => {
  it.each(SLICE)('$command given a $kind (force: $force): exit 3 at once, left as it was', async (c) => {
    const s = scratch();
    try {
      expect(await runHostileCase(c, `${s.dir}/case`)).toMatchObject({ outcome: 'exit 3', problem: null });
    } finally {
      s.dispose();
    }
  });
});
