/**
 * CI slice of the LLMCP35 fuzzer: 24,000 structure-aware hostile files
 * (every mutation class), each decoded in memory, every 4th also loaded from
 * a file and every 8th inspected, in a watched child process; plus one
 * sparse 2 GiB + 4 KiB file with header_bytes = 2^31 (the class of the
 * loadCheckpoint abort). `pnpm soak` runs ≥ 1,000,000 cases and every sparse case.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MUTATION_CLASSES } from '../src/fuzz-cases.ts';
import { formatFuzzReport, runFuzzCampaign } from '../src/fuzz-llmcp.ts';

const reproDir = mkdtempSync(path.join(os.tmpdir(), 'llmcp-fuzz-repro-'));
afterAll(() => rmSync(reproDir, { recursive: true, force: true }));

describe('runFuzzCampaign', () => {
  it('ends each of 24,000 hostile files in a FormatError with a known code (the same from decode, load and inspect) or a byte-identical re-encoding', async () => {
    const report = await runFuzzCampaign({ cases: 24_000, seed: 0x6330n, loadEvery: 4, inspectEvery: 8, reproDir, watchdogMs: 20_000 });
    const text = formatFuzzReport(report);
    console.log(text);
    expect(report.stats.failures, text).toEqual([]);
    expect(report.stats.cases).toBe(24_000);
    for (const cls of MUTATION_CLASSES.filter((c) => c !== 'sparse-file')) expect(Object.values(report.stats.byClass[cls] ?? {}).reduce((a, b) => a + b, 0), cls).toBeGreaterThan(500);
    // The checksum is recomputed, so the deep rules are reached: many distinct error codes, and some files still decode.
    const outcomes = new Set(Object.values(report.stats.byClass).flatMap((row) => Object.keys(row)));
    expect(outcomes.size).toBeGreaterThanOrEqual(20);
    expect(outcomes.has('valid')).toBe(true);
  }, 180_000);
});

describe('defect: loadCheckpoint aborts the process on a 2 GiB + 4 KiB file with header_bytes = 2^31', () => {
  it('gives a typed FormatError for the sparse file instead of a native assertion (exit 134)', async () => {
    const report = await runFuzzCampaign({ cases: 0, sparse: [0], reproDir });
    const text = formatFuzzReport(report);
    expect(report.stats.failures, text).toEqual([]);
    expect(report.sparse[0]?.outcome, text).toMatch(/^FORMAT_/);
  }, 120_000);
});
