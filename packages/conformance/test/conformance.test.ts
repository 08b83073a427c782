import { decodeCheckpoint, isFormatError } from '@llmcp/format';
import { describe, expect, it } from 'vitest';
import { createFormatAdapter, listConformanceCases, loadFixture, loadManifest, runConformanceSuite, type ConformanceAdapter } from '../src/index.ts';

const adapter = createFormatAdapter();
const cases = listConformanceCases();
const manifest = loadManifest();

describe('conformance suite against @llmcp/format', () => {
  for (const c of cases) {
    it(`${c.group}: ${c.id} — ${c.title}`, async () => {
      const r = await c.run(adapter);
      expect(r.actual, r.expected).toSatisfy(() => r.passed);
    });
  }
});

describe('malformed corpus', () => {
  it('covers every case of SPEC §13 (60 table rows, 64 files: four rows name two changes) plus further §9 rules', () => {
    expect(manifest.cases.filter((c) => c.spec === 'SPEC §13').length).toBe(64);
    expect(new Set(manifest.cases.map((c) => c.id)).size).toBe(manifest.cases.length);
    for (const c of manifest.cases) if (c.expect.outcome === 'reject') expect(c.expect.code).toMatch(/^FORMAT_[A-Z0-9_]+$/);
  });

  it('rejects with the exact @llmcp/format code and reason listed in the manifest', () => {
    for (const c of manifest.cases) {
      let outcome = 'accept';
      try {
        decodeCheckpoint(loadFixture(c.file));
      } catch (e) {
        expect(isFormatError(e), `${c.id} threw a non-FormatError: ${String(e)}`).toBe(true);
        if (isFormatError(e)) outcome = `${e.code}/${e.reason}/${e.category}`;
      }
      const expected = c.expect.outcome === 'accept' ? 'accept' : `${c.expect.code}/${c.expect.reason ?? 'unspecified'}/${c.expect.category}`;
      expect(outcome, c.id).toBe(expected);
    }
  });
});

describe('runConformanceSuite', () => {
  it('passes every case with the format adapter', async () => {
    const report = await runConformanceSuite(adapter);
    expect(report.failed).toBe(0);
    expect(report.passed).toBe(cases.length);
  });

  it('fails an implementation that accepts everything and never re-encodes', async () => {
    const state = decodeCheckpoint(loadFixture('golden-6330.llmcp'));
    const lax: ConformanceAdapter = { name: 'lax', decode: () => ({ ok: true, state }), encode: () => new Uint8Array(3) };
    const report = await runConformanceSuite(lax);
    const rejectCases = manifest.cases.filter((c) => c.expect.outcome === 'reject').length;
    expect(report.failed).toBeGreaterThanOrEqual(rejectCases);
    expect(report.results.find((r) => r.id === 'golden-reencode')?.passed).toBe(false);
  });

  it('fails an implementation that reports the wrong category and survives adapters that throw', async () => {
    const wrong: ConformanceAdapter = {
      name: 'wrong',
      decode: (bytes) => (bytes.length === 6330 ? adapter.decode(bytes) : { ok: false, category: 'Io' }),
      encode: () => {
        throw new Error('no encoder');
      },
    };
    const report = await runConformanceSuite(wrong);
    const checksumCase = report.results.find((r) => r.id === 'file-37-bytes');
    expect(checksumCase?.passed).toBe(false);
    expect(checksumCase?.actual).toContain('Io');
    expect(report.results.find((r) => r.id === 'golden-reencode')?.actual).toContain('encode threw Error: no encoder');
  });
});
