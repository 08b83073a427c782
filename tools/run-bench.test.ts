import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { discoverBenchmarks, parseBenchArgs, selectBenchmarks, unmatchedFilters } from './run-bench.ts';

let scratch = '';
afterEach(() => rmSync(scratch, { recursive: true, force: true }));

describe('run-bench discovery', () => {
  it('finds packages/*/bench/*.bench.ts, apps/*/bench/*.bench.ts and root bench/*.ts, and filters by path substring', () => {
    scratch = mkdtempSync(path.join(tmpdir(), 'llmcp-bench-discovery-'));
    for (const f of ['packages/format/bench/codec.bench.ts', 'packages/format/bench/helper.ts', 'packages/model/bench/train.bench.ts', 'apps/trainer/bench/e2e.bench.ts', 'bench/all.ts']) {
      mkdirSync(path.dirname(path.join(scratch, f)), { recursive: true });
      writeFileSync(path.join(scratch, f), '');
    }
    const all = discoverBenchmarks(scratch);
    expect(all).toEqual(['apps/trainer/bench/e2e.bench.ts', 'bench/all.ts', 'packages/format/bench/codec.bench.ts', 'packages/model/bench/train.bench.ts'].map((p) => p.split('/').join(path.sep)));
    expect(selectBenchmarks(all, ['format'])).toEqual([path.join('packages', 'format', 'bench', 'codec.bench.ts')]);
    expect(selectBenchmarks(all, ['model', 'trainer'])).toHaveLength(2);
    expect(selectBenchmarks(all, [])).toEqual(all);
    expect(selectBenchmarks(all, ['nothing-like-this'])).toEqual([]);
  });

  it('includes this repository’s format benchmark', () => {
    expect(discoverBenchmarks()).toContain(path.join('packages', 'format', 'bench', 'codec.bench.ts'));
  });
});

describe('run-bench arguments', () => {
  it('passes everything after -- to the scripts, option values included', () => {
    expect(parseBenchArgs(['native-gemm', '--', '--configs', 'xl', '--paths', 'avx2'])).toEqual({ filters: ['native-gemm'], flags: ['--configs', 'xl', '--paths', 'avx2'] });
    expect(parseBenchArgs(['format', '--', '--large'])).toEqual({ filters: ['format'], flags: ['--large'] });
    expect(parseBenchArgs(['model', 'format', '--quick'])).toEqual({ filters: ['model', 'format'], flags: ['--quick'] });
    expect(parseBenchArgs(['--', '--vs', 'other.node', '--'])).toEqual({ filters: [], flags: ['--vs', 'other.node', '--'] });
    expect(parseBenchArgs([])).toEqual({ filters: [], flags: [] });
  });

  it('names the filters no script matches: an option value written before -- is one, not a silent no-op', () => {
    const all = ['packages/model/bench/native-gemm.bench.ts', 'packages/format/bench/codec.bench.ts'];
    const { filters } = parseBenchArgs(['native-gemm', '--configs', 'xl']);
    expect(unmatchedFilters(all, filters)).toEqual(['xl']);
    expect(unmatchedFilters(all, parseBenchArgs(['native-gemm', '--', '--configs', 'xl']).filters)).toEqual([]);
    expect(unmatchedFilters(all, ['format', 'formt'])).toEqual(['formt']);
    expect(unmatchedFilters(all, [])).toEqual([]);
  });
});
