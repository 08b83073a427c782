import { describe, expect, it } from 'vitest';
import { checksumLabel, decodeCheckpoint, encodeCheckpoint, fnv1a64 } from '../src/index.ts';
import { inspectCheckpoint } from '../src/inspect-entry.ts';
import { golden, goldenBytes } from './golden.ts';

const ROLE_NAMES: Record<string, number> = { LiteralToken: 1, ModelParameter: 3, OptimizerFirstMoment: 4, OptimizerSecondMoment: 5 };

function bits(value: number): string {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  return `0x${view.getBigUint64(0).toString(16).padStart(16, '0')}`;
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
}

function leBytes(values: Float64Array): Uint8Array {
  const out = new Uint8Array(values.length * 8);
  const view = new DataView(out.buffer);
  values.forEach((v, i) => view.setFloat64(8 * i, v, true));
  return out;
}

describe('decodeCheckpoint on the golden fixture', () => {
  const bytes = goldenBytes();
  const decoded = decodeCheckpoint(bytes);

  it('has the documented size, header length, checksum and first 16 bytes', () => {
    expect(bytes.length).toBe(golden.size);
    expect(decoded.layout.fileLength).toBe(6330);
    expect(decoded.layout.headerBytes).toBe(2869);
    expect(decoded.layout.payloadBytes).toBe(golden.payload_bytes);
    expect(decoded.layout.checksumLabel).toBe('fnv1a64:2b8b6097eaed6a91');
    expect(hex(bytes.subarray(0, 16))).toBe('4c 4c 4d 43 50 33 35 00 01 00 04 03 02 01 35 0b');
    expect(hex(bytes.subarray(30, 38)).replaceAll(' ', '')).toBe(golden.checksum_field_bytes_hex);
    expect(decoded.layout.formatVersion).toBe(golden.format_version);
    expect(`0x${decoded.layout.endianMarker.toString(16).padStart(8, '0')}`).toBe(golden.endian_marker);
  });

  it('matches every header value of golden-6330.json bit for bit', () => {
    expect(decoded.samplingRngState).toBe(0x9e3779b97f4a7c38n);
    expect(`0x${decoded.samplingRngState.toString(16)}`).toBe(golden.sampling_rng.state);
    expect(decoded.selectedStep).toBe(BigInt(golden.selected_step));
    expect(decoded.layout.rngAlgorithmVersion).toBe(golden.sampling_rng.algorithm_version);
    expect(decoded.layout.tokenizerLayoutVersion).toBe(golden.tokenizer.layout_version);
    expect(decoded.layout.tokenizerKindTag).toBe(golden.tokenizer.kind_tag);
    expect(decoded.layout.tokenizerKindName).toBe(golden.tokenizer.kind_name);
    expect(decoded.layout.tokenizerVocabulary).toBe(golden.tokenizer.vocabulary_size);
    const d = decoded.decoder;
    const gd = golden.decoder;
    expect([d.vocabularySize, d.modelWidth, d.heads, d.feedForwardWidth, d.layers, d.maxPositions]).toEqual([
      gd.vocabulary_size,
      gd.model_width,
      gd.heads,
      gd.feed_forward_width,
      gd.layers,
      gd.max_positions,
    ]);
    expect(bits(d.ropeBase)).toBe(gd.rope_base.bits);
    expect(bits(d.rmsEpsilon)).toBe(gd.rms_epsilon.bits);
    const c = decoded.optimizer.config;
    const go = golden.optimizer;
    expect([c.learningRate, c.beta1, c.beta2, c.epsilon, c.weightDecay].map(bits)).toEqual([
      go.learning_rate.bits,
      go.beta1.bits,
      go.beta2.bits,
      go.epsilon.bits,
      go.weight_decay.bits,
    ]);
    expect(decoded.optimizer.groups).toEqual({ decay: go.parameter_groups.decay, noDecay: go.parameter_groups.no_decay });
    expect(decoded.optimizer.step).toBe(BigInt(go.step));
    expect(bits(decoded.optimizer.beta1Power)).toBe(go.beta1_power.bits);
    expect(bits(decoded.optimizer.beta2Power)).toBe(go.beta2_power.bits);
    expect(decoded.optimizer.moments).toHaveLength(go.state_entries);
    expect(decoded.layout.modelParameterCount).toBe(golden.counts.model_parameter_count);
    expect(decoded.layout.optimizerStateCount).toBe(golden.counts.optimizer_state_count);
    expect(decoded.layout.descriptorCount).toBe(golden.counts.descriptor_count);
    expect(decoded.layout.descriptorCountOffset).toBe(golden.descriptor_table_offset);
    expect(decoded.layout.descriptors[0]?.entryOffset).toBe(golden.descriptor_entries_offset);
  });

  it('decodes the literal pieces "0"–"4"', () => {
    expect(decoded.tokenizer.kind).toBe('literal');
    if (decoded.tokenizer.kind !== 'literal') return;
    expect(decoded.tokenizer.pieces.map((p) => hex(p))).toEqual(golden.tokenizer.pieces_hex);
  });

  it('matches all 38 descriptors: role, name, dtype, shape, offset, length, entry and payload hash', () => {
    expect(decoded.layout.descriptors).toHaveLength(golden.descriptors.length);
    for (const g of golden.descriptors) {
      const d = decoded.layout.descriptors[g.index];
      expect(d, `descriptor ${g.index}`).toBeDefined();
      if (d === undefined) continue;
      expect({ roleTag: d.roleTag, name: d.name, dtype: d.dtype, dtypeTag: d.dtypeTag, shape: d.shape, offset: d.offset, byteLength: d.byteLength, end: d.end, entryOffset: d.entryOffset, entryLength: d.entryLength }, `descriptor ${g.index}`).toEqual({
        roleTag: ROLE_NAMES[g.role] ?? g.role_tag,
        name: g.name,
        dtype: g.dtype,
        dtypeTag: g.dtype_tag,
        shape: g.shape,
        offset: g.offset,
        byteLength: g.byte_len,
        end: g.end,
        entryOffset: g.entry_offset,
        entryLength: g.entry_len,
      });
      expect(d.roleTag).toBe(g.role_tag);
      expect(checksumLabel(fnv1a64(bytes.subarray(d.offset, d.end))), `payload hash of descriptor ${g.index}`).toBe(g.payload_fnv1a64);
    }
  });

  it('exposes tensors whose little-endian bytes hash like the golden records', () => {
    const byRecord = golden.descriptors;
    decoded.parameters.forEach((p, i) => {
      const g = byRecord[5 + i];
      expect(p.name).toBe(g?.name);
      expect(p.shape).toEqual(g?.shape);
      expect(checksumLabel(fnv1a64(leBytes(p.data)))).toBe(g?.payload_fnv1a64);
    });
    decoded.optimizer.moments.forEach((m, i) => {
      expect(checksumLabel(fnv1a64(leBytes(m.first)))).toBe(byRecord[16 + 2 * i]?.payload_fnv1a64);
      expect(checksumLabel(fnv1a64(leBytes(m.second)))).toBe(byRecord[17 + 2 * i]?.payload_fnv1a64);
    });
    expect(bits(decoded.parameters[0]?.data[0] as number)).toBe('0xbfdcae992e500445');
  });

  it('returns aligned copies, not views of the input', () => {
    const p = decoded.parameters[0];
    expect(p?.data.buffer).not.toBe(bytes.buffer);
    expect(p?.data.byteOffset).toBe(0);
  });

  it('re-encodes to the identical 6330 bytes', () => {
    const again = encodeCheckpoint(decoded);
    expect(again.length).toBe(6330);
    expect(hex(again)).toBe(hex(bytes));
  });

  it('inspects as valid with the documented layout', () => {
    const report = inspectCheckpoint(bytes);
    expect(report.verdict.valid).toBe(true);
    expect(report.checksum?.storedLabel).toBe('fnv1a64:2b8b6097eaed6a91');
    expect(report.checksum?.matches).toBe(true);
    expect(report.descriptors.map((d) => d.payloadChecksum)).toEqual(golden.descriptors.map((g) => g.payload_fnv1a64));
    expect(report.descriptors.every((d) => d.checks.byteLengthMatchesShape && d.checks.contiguous && d.checks.withinFile)).toBe(true);
    expect(report.fields.find((f) => f.field === 'beta1 power')).toMatchObject({ offset: 512, hex: 'c7 d2 3c 57 c6 8c db 3f' });
  });
});
