/**
 * The CI slice of the export/import fuzz (../src/export-fuzz.ts; `pnpm soak
 * --only exports` runs thousands of cases in bounded worker processes): the
 * reported cases — a 37 KB-class file whose BPE chain of 64 merges spells
 * 2^64 bytes (gguf ran for ever at 1.8 GB and climbing, hf died with
 * "Invalid string length"), F = 2^60 and max_positions = 2^53 (safetensors
 * and --config-out: "Do not know how to serialize a BigInt", with the .bin
 * left behind) — and generated hostile-but-valid checkpoints. Every export
 * writes an output that verifies in its own format, u64 sizes exact, or
 * refuses with a typed error and leaves nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeCheckpoint, type CheckpointState } from '@llmcp/format';
import { goldenCheckpoint } from '../../fixtures.ts';
import { hostileCheckpoint, runExportCase, type ExportCase } from '../src/export-fuzz.ts';

const scratch = mkdtempSync(path.join(os.tmpdir(), 'llmcp-export-fuzz-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
let n = 0;

/** The golden state with 0 layers at step 0 (embedding and final norm only). */
function zeroLayers(): CheckpointState {
  const { layout: _layout, ...g } = decodeCheckpoint(goldenCheckpoint());
  return { ...g, decoder: { ...g.decoder, layers: 0 }, parameters: [g.parameters[0]!, g.parameters[g.parameters.length - 1]!], optimizer: { ...g.optimizer, groups: null, step: 0n, beta1Power: 1, beta2Power: 1, moments: [] }, selectedStep: 0n };
}

function reported(): ExportCase[] {
  const z = zeroLayers();
  const pairs: [number, number][] = [[97, 97]];
  for (let r = 1; r < 64; r++) pairs.push([255 + r, 255 + r]);
  const V = 258 + pairs.length;
  const D = z.decoder.modelWidth;
  const chain: CheckpointState = {
    ...z,
    tokenizer: { kind: 'bpe', pairs },
    decoder: { ...z.decoder, vocabularySize: V },
    parameters: [{ name: 'token_embedding.weight', shape: [V, D], data: new Float64Array(V * D).map((_, i) => (i % 7) / 10) }, z.parameters[1]!],
  };
  const F = 1n << 60n;
  const P = 1n << 53n;
  return [
    { state: chain, traits: ['bpe-chain-64'] },
    { state: { ...z, decoder: { ...z.decoder, feedForwardWidth: Number(F), exact: { feedForwardWidth: F } } }, traits: ['F=2^60'] },
    { state: { ...z, decoder: { ...z.decoder, maxPositions: Number(P), exact: { maxPositions: P } } }, traits: ['maxPositions=2^53'] },
  ];
}

describe('exports and imports of hostile-but-valid checkpoints', () => {
  it.each(reported().map((c) => [c.traits[0], c] as const))('%s: every export verifies (u64 sizes exact) or refuses typed, leaving nothing', async (_name, c) => {
    const outcomes = await runExportCase(c, path.join(scratch, `case-${n++}`));
    expect(outcomes.filter((o) => o.problem !== null)).toEqual([]);
    if (c.traits[0] === 'bpe-chain-64') expect(outcomes.filter((o) => o.target.startsWith('gguf') || o.target.startsWith('hf')).map((o) => o.outcome)).toEqual(['exit 3', 'exit 3', 'exit 3', 'exit 3']);
    else expect(outcomes.filter((o) => o.target.startsWith('safetensors') || o.target === 'andrea-bin').map((o) => o.outcome)).toEqual(['ok', 'ok', 'ok']);
  });

  it('generated cases: every export of each verifies in its own format or refuses typed', async () => {
    await fc.assert(
      fc.asyncProperty(hostileCheckpoint(), async (c) => {
        const outcomes = await runExportCase(c, path.join(scratch, `case-${n++}`));
        expect(outcomes.filter((o) => o.problem !== null), c.traits.join(', ')).toEqual([]);
      }),
      { numRuns: 40 },
    );
  });
});
