/**
 * CI slice of the Python oracle: 400 fuzz cases (the fuzzer's CI seed)
 * decoded by `@llmcp/format` and, in one Python process, by the package
 * llmcp; every verdict and every error field but the message (code, reason,
 * offset, `expected`, `found` …) must agree. `pnpm soak` runs 50,000 cases
 * (`--only python`). Skips, saying why, where the interpreter is absent.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { formatPythonOracleReport, pythonProblem, runPythonOracle, sameOutcome, type OracleError, type OracleOutcome, type PythonOutcome } from '../src/python-oracle.ts';

const SKIP = pythonProblem();
const reproDir = mkdtempSync(path.join(os.tmpdir(), 'llmcp-oracle-repro-'));
afterAll(() => rmSync(reproDir, { recursive: true, force: true }));

describe('sameOutcome', () => {
  const error: OracleError = { code: 'FORMAT_ADAMW_CONFIG', category: 'AdamW', reason: 'invalid-learning-rate', offset: 131, field: 'learningRate', expected: 'a finite value > 0', found: '0' };
  const ts: OracleOutcome = { ok: false, error };
  it('agrees on the same error data in any key order and tells a found text apart', () => {
    const { found: _found, ...rest } = error;
    expect(sameOutcome(ts, { id: '1', ok: false, error: { found: '0', ...rest } })).toBe(true);
    expect(sameOutcome(ts, { id: '1', ok: false, error: { ...rest, found: '-0' } })).toBe(false);
    expect(sameOutcome(ts, { id: '1', ok: false, error: rest })).toBe(false);
  });
  it('accepts an accepted file only with the same checksum and step and an identical re-encoding', () => {
    const ok: OracleOutcome = { ok: true, checksum: 'fnv1a64:2b8b6097eaed6a91', step: '8' };
    const py = (extra: Partial<Extract<PythonOutcome, { ok: true }>>): PythonOutcome => ({ id: '1', ok: true, reencodeIdentical: true, checksum: 'fnv1a64:2b8b6097eaed6a91', step: '8', ...extra });
    expect(sameOutcome(ok, py({}))).toBe(true);
    expect(sameOutcome(ok, py({ reencodeIdentical: false }))).toBe(false);
    expect(sameOutcome(ok, py({ step: '9' }))).toBe(false);
    expect(sameOutcome(ok, { id: '1', ...ts })).toBe(false);
  });
});

describe.skipIf(SKIP !== null)(`runPythonOracle${SKIP === null ? '' : ` (skipped: ${SKIP})`}`, () => {
  it('gives 400 fuzz cases the verdict, code and error fields (found included) of @llmcp/format in the Python package', async ({ annotate }) => {
    const report = await runPythonOracle({ cases: 400, seed: 0x6330n, batch: 400, reproDir });
    const text = formatPythonOracleReport(report);
    await annotate(text);
    expect(report.failures, text).toEqual([]);
    expect(report.mismatches, text).toEqual([]);
    expect(report.agreed).toBe(400);
    expect(Object.keys(report.byOutcome).length).toBeGreaterThanOrEqual(12);
    expect(report.byOutcome.valid ?? 0).toBeGreaterThan(0);
    expect(report.withFound).toBeGreaterThan(200);
  }, 120_000);
});
