import { describe, expect, it } from 'vitest';
import { randomState } from '../test/helpers/random-state.ts';
import { openFile, buildFile } from '../test/helpers/raw-file.ts';
import { decodeCheckpoint } from './decode.ts';
import { encodeCheckpoint } from './encode.ts';
import { isFormatError } from './errors.ts';
import { disableScanKernelForTesting } from './internal/fnv1a64-scan-wasm.ts';
import { CHECKSUM_OFFSET } from './tags.ts';

/** The file placed at `shift` bytes into a fresh buffer. */
function placed(bytes: Uint8Array, shift: number): Uint8Array {
  const out = new Uint8Array(bytes.length + shift).subarray(shift);
  out.set(bytes);
  return out;
}

function withValue(bytes: Uint8Array, recordIndex: number, element: number, value: number): Uint8Array {
  const file = openFile(bytes);
  const d = file.descriptors[recordIndex];
  if (d === undefined) throw new Error('no record');
  d.bytes = d.bytes.slice();
  new DataView(d.bytes.buffer).setFloat64(8 * element, value, true);
  return buildFile(file, { checksum: 'fix' });
}

function code(f: () => unknown): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    return isFormatError(e) ? `${e.code}:${e.reason}` : String(e);
  }
}

describe("decodeCheckpoint screening and tensors: 'view'", () => {
  const bytes = encodeCheckpoint(randomState(21n, { step: 3n }));
  const headerBytes = Number(new DataView(bytes.buffer).getBigUint64(14, true));

  it('views share the input when the records are aligned, copies otherwise, with the same result either way', () => {
    const reference = decodeCheckpoint(bytes);
    for (let shift = 0; shift < 8; shift++) {
      const input = placed(bytes, shift);
      const aligned = (shift + headerBytes) % 8 === 0;
      const viewed = decodeCheckpoint(input, { tensors: 'view' });
      expect(viewed.parameters.map((p) => p.data)).toEqual(reference.parameters.map((p) => p.data));
      expect(viewed.optimizer.moments).toEqual(reference.optimizer.moments);
      for (const p of viewed.parameters) expect(p.data.buffer === input.buffer).toBe(aligned);
      const copied = decodeCheckpoint(input);
      for (const p of copied.parameters) expect(p.data.buffer === input.buffer).toBe(false);
    }
  });

  it('finds a non-finite parameter, a non-finite moment and a negative second moment exactly as the search does, with and without the kernel', () => {
    const file = openFile(bytes);
    const firstParameter = file.descriptors.findIndex((d) => d.roleTag === 3);
    const firstMoment = file.descriptors.findIndex((d) => d.roleTag === 4);
    const secondMoment = file.descriptors.findIndex((d) => d.roleTag === 5);
    const cases: [Uint8Array, string][] = [
      [withValue(bytes, firstParameter, 1, Number.NaN), 'FORMAT_INVALID_PARAMETER:non-finite-parameter'],
      [withValue(bytes, firstParameter, 0, -Infinity), 'FORMAT_INVALID_PARAMETER:non-finite-parameter'],
      [withValue(bytes, firstMoment, 0, Infinity), 'FORMAT_ADAMW_STATE:non-finite-moment'],
      [withValue(bytes, secondMoment, 0, -1e-300), 'FORMAT_ADAMW_STATE:negative-second-moment'],
      [withValue(bytes, secondMoment, 0, -0), 'ok'],
    ];
    for (const disabled of [false, true]) {
      disableScanKernelForTesting(disabled);
      try {
        for (const [file, expected] of cases) {
          for (const tensors of ['copy', 'view'] as const) {
            expect(code(() => decodeCheckpoint(placed(file, (8 - (headerBytes % 8)) % 8), { tensors }))).toBe(expected);
            expect(code(() => decodeCheckpoint(file, { tensors }))).toBe(expected);
          }
        }
      } finally {
        disableScanKernelForTesting(false);
      }
    }
  });

  it('a header failure is reported only when the checksum matches (checksum first, SPEC.md §9.1)', () => {
    const file = openFile(bytes);
    const broken = buildFile(file, { extraHeaderBytes: 1, checksum: 'fix' });
    expect(code(() => decodeCheckpoint(broken))).toMatch(/^FORMAT_NON_CANONICAL/);
    const unsummed = broken.slice();
    unsummed[CHECKSUM_OFFSET] = (unsummed[CHECKSUM_OFFSET] as number) ^ 1;
    expect(code(() => decodeCheckpoint(unsummed))).toBe('FORMAT_CHECKSUM_MISMATCH:checksum');
  });
});
