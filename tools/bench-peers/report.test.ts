import { describe, expect, it } from 'vitest';
import { nativeActive, parsePeerArgs, runPeers } from './bench-peers.ts';
import { configRatios, formatConfigTable, formatKernelPaths, formatMachine, median, type VariantOutcome } from './report.ts';

const outcome = (implementation: VariantOutcome['variant']['implementation'], threads: number, rounds: number[], skipped: string | null = null): VariantOutcome => ({
  variant: { implementation, threads },
  rounds,
  skipped,
});

describe('median', () => {
  it('takes the middle value, or the mean of the two middle values', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNull();
  });
});

describe('configRatios', () => {
  it('divides each median by PyTorch 1-thread and the best llmcp by the best PyTorch', () => {
    const r = configRatios([
      outcome('llmcp-native', 1, [], 'skipped: no native kernels'),
      outcome('llmcp-wasm', 1, [90, 110, 100]),
      outcome('llmcp-wasm', 2, [180, 150, 170]),
      outcome('pytorch', 1, [200, 200, 200]),
      outcome('pytorch', 2, [300, 250, 260]),
    ]);
    expect(r.rows.map((x) => x.vsTorch1)).toEqual([null, 0.5, 0.85, 1, 1.3]);
    expect(r.rows[2]).toMatchObject({ median: 170, min: 150, max: 180, note: '3 rounds' });
    expect(r.rows[0]?.note).toBe('skipped: no native kernels');
    expect(r.bestRatio).toBeCloseTo(170 / 260, 15);
    expect(r.bestLlmcp).toBe('llmcp-wasm ×2');
    expect(r.bestTorch).toBe('pytorch ×2');
  });

  it('leaves the ratios empty without PyTorch', () => {
    const r = configRatios([outcome('llmcp-wasm', 1, [100]), outcome('pytorch', 1, [], 'skipped: no torch')]);
    expect(r.rows[0]?.vsTorch1).toBeNull();
    expect(r.bestRatio).toBeNull();
    expect(formatConfigTable('t', [outcome('llmcp-wasm', 1, [100])]).at(-1)).toContain('—');
  });
});

describe('formatMachine / formatKernelPaths', () => {
  it('names the CPU, its cores and whether it has AVX-512', () => {
    expect(formatMachine('AMD EPYC ', 2, ['avx2', 'fma'])).toBe('CPU: AMD EPYC, 2 logical cores (AVX2, FMA, no AVX-512)');
    expect(formatMachine('Zen 4', 1, ['avx512f', 'avx2', 'fma'])).toBe('CPU: Zen 4, 1 logical core (AVX2, FMA, AVX-512)');
  });

  it('lists the kernels each llmcp variant ran, and none for PyTorch', () => {
    const line = formatKernelPaths([
      { variant: { implementation: 'llmcp-native', threads: 1 }, kind: 'native-avx2' },
      { variant: { implementation: 'llmcp-wasm', threads: 2 }, kind: null },
      { variant: { implementation: 'pytorch', threads: 1 }, kind: null },
    ]);
    expect(line).toBe('kernels that ran: llmcp-native ×1 native-avx2; llmcp-wasm ×2 (did not run)');
  });
});

describe('parsePeerArgs / nativeActive', () => {
  it('reads --quick, --rounds and --configs and refuses the rest', () => {
    expect(parsePeerArgs(['--quick'])).toEqual({ quick: true, rounds: 1, configs: ['small', 'medium', 'large'] });
    expect(parsePeerArgs(['--rounds', '3', '--configs', 'medium'])).toEqual({ quick: false, rounds: 3, configs: ['medium'] });
    expect(parsePeerArgs(['--configs', 'small,medium,large,xl']).configs).toEqual(['small', 'medium', 'large', 'xl']);
    expect(() => parsePeerArgs(['--configs', 'huge'])).toThrow(RangeError);
    expect(() => parsePeerArgs(['--fast'])).toThrow(RangeError);
  });

  it('counts native kernels as running only when the report says so', () => {
    expect(nativeActive(null)).toBe(false);
    expect(nativeActive({ backend: 'wasm', native: { available: false } })).toBe(false);
    expect(nativeActive({ backend: 'native', isa: 'avx2' })).toBe(true);
    expect(nativeActive({ kind: 'native-avx512', nativeAvailable: true })).toBe(true);
    expect(nativeActive({ kind: 'wasm-simd', nativeAvailable: true })).toBe(false);
  });
});

describe('runPeers (quick smoke)', () => {
  // Two short llmcp processes (the weights dump and one measurement), a few seconds; PyTorch is left to the benchmark itself.
  it('runs the small configuration once for llmcp WebAssembly on one thread and prints the table', () => {
    const lines = runPeers({ quick: true, rounds: 1, configs: ['small'], variants: [{ implementation: 'llmcp-wasm', threads: 1 }] }, () => {});
    const text = lines.join('\n');
    expect(text).toContain('small: V256 D32 H2 F128 L2 ctx32 b8');
    expect(text).toMatch(/llmcp-wasm ×1\s+\d+/);
    expect(text).toContain('load average after');
    expect(text).toMatch(/kernels that ran: llmcp-wasm ×1 (wasm-simd|js-scalar)/);
    expect(text).toMatch(/^ {2}CPU: .+, \d+ logical cores? \(/m);
  }, 60_000);
});
