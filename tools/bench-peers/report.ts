/**
 * The table of `pnpm bench:peers`: medians over rounds and the ratios
 * llmcp ÷ PyTorch. Pure functions (no processes, no clock), so the tools
 * tests check them without running a benchmark.
 */

/** One variant of one configuration: an implementation, its kernels and thread count. */
export interface Variant {
  /**
   * `llmcp-native`, `llmcp-wasm` (the llmcp engine), `pytorch` (the peer), `torch-engine` (llmcp's torch
   * engine on the CPU, `threads` ranks of one thread) or `torch-engine-cuda` (one rank on a GPU).
   */
  readonly implementation: 'llmcp-native' | 'llmcp-wasm' | 'pytorch' | 'torch-engine' | 'torch-engine-cuda';
  readonly threads: number;
}

/** Whether a variant is the llmcp engine (its own kernels), which the best-against-best ratio compares with PyTorch. */
function llmcpEngine(v: Variant): boolean {
  return v.implementation === 'llmcp-native' || v.implementation === 'llmcp-wasm';
}

/** What the rounds of one variant gave: tokens/s per round, or why it was skipped. */
export interface VariantOutcome {
  readonly variant: Variant;
  /** tokens/s of each round (warm-up excluded inside each process). */
  readonly rounds: readonly number[];
  /** Tokens per CPU-second (process CPU time, all threads) of each round, when measured. */
  readonly cpuRounds?: readonly number[];
  /** Set when the variant did not run (no native kernels, no torch, a failure). */
  readonly skipped: string | null;
}

/** A row of the printed table. */
export interface TableRow {
  readonly label: string;
  /** Median tokens/s, null when skipped. */
  readonly median: number | null;
  readonly min: number | null;
  readonly max: number | null;
  /** Median tokens per CPU-second (null when not measured). */
  readonly perCpuSecond: number | null;
  /** median ÷ PyTorch 1-thread median (null without both). */
  readonly vsTorch1: number | null;
  readonly note: string;
}

/**
 * Median of a non-empty list (mean of the two middle values for an even count).
 * @param xs - values.
 * @returns the median, or null for an empty list.
 */
export function median(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

/** @param v - a variant. @returns its label, e.g. `llmcp-wasm ×2`. */
export function variantLabel(v: Variant): string {
  return `${v.implementation} ×${v.threads}`;
}

function medianOf(o: VariantOutcome | undefined): number | null {
  return o === undefined || o.skipped !== null ? null : median(o.rounds);
}

/** Ratios of one configuration. */
export interface ConfigRatios {
  /** Per variant: median ÷ PyTorch 1-thread median. */
  readonly rows: readonly TableRow[];
  /** The best llmcp variant (any kernels, any threads ≤ 2) ÷ the best PyTorch variant. */
  readonly bestRatio: number | null;
  readonly bestLlmcp: string | null;
  readonly bestTorch: string | null;
}

/**
 * Rows and ratios of one configuration's outcomes.
 * @param outcomes - every variant of the configuration.
 * @returns the table rows and the best-vs-best ratio.
 */
export function configRatios(outcomes: readonly VariantOutcome[]): ConfigRatios {
  const torch1 = medianOf(outcomes.find((o) => o.variant.implementation === 'pytorch' && o.variant.threads === 1));
  const rows = outcomes.map((o): TableRow => {
    const m = medianOf(o);
    const ok = o.skipped === null && o.rounds.length > 0;
    return {
      label: variantLabel(o.variant),
      median: m,
      min: ok ? Math.min(...o.rounds) : null,
      max: ok ? Math.max(...o.rounds) : null,
      perCpuSecond: ok ? median(o.cpuRounds ?? []) : null,
      vsTorch1: m !== null && torch1 !== null ? m / torch1 : null,
      note: o.skipped ?? `${o.rounds.length} round${o.rounds.length === 1 ? '' : 's'}`,
    };
  });
  const best = (pick: (o: VariantOutcome) => boolean): [string | null, number | null] => {
    let label: string | null = null;
    let value: number | null = null;
    for (const o of outcomes.filter(pick)) {
      const m = medianOf(o);
      if (m !== null && (value === null || m > value)) [label, value] = [variantLabel(o.variant), m];
    }
    return [label, value];
  };
  const [bestLlmcp, l] = best((o) => llmcpEngine(o.variant));
  const [bestTorch, t] = best((o) => o.variant.implementation === 'pytorch');
  return { rows, bestRatio: l !== null && t !== null ? l / t : null, bestLlmcp, bestTorch };
}

const fmt = (x: number | null, digits = 0): string => (x === null ? '—' : x.toFixed(digits));

/**
 * The printed table of one configuration.
 * @param title - the configuration's name and shape.
 * @param outcomes - its variants.
 * @returns lines of text.
 */
export function formatConfigTable(title: string, outcomes: readonly VariantOutcome[]): string[] {
  const r = configRatios(outcomes);
  const lines = [title, `  ${'variant'.padEnd(18)} ${'tokens/s'.padStart(10)} ${'min'.padStart(9)} ${'max'.padStart(9)} ${'÷ torch×1'.padStart(10)} ${'tok/CPU-s'.padStart(10)}  note`];
  for (const row of r.rows) {
    lines.push(`  ${row.label.padEnd(18)} ${fmt(row.median).padStart(10)} ${fmt(row.min).padStart(9)} ${fmt(row.max).padStart(9)} ${fmt(row.vsTorch1, 2).padStart(10)} ${fmt(row.perCpuSecond).padStart(10)}  ${row.note}`);
  }
  lines.push(`  best llmcp on both cores ÷ best PyTorch: ${fmt(r.bestRatio, 2)}${r.bestLlmcp !== null && r.bestTorch !== null ? ` (${r.bestLlmcp} vs ${r.bestTorch})` : ''}`);
  return lines;
}

/**
 * The machine line printed with the tables: the CPU model, its logical cores and the vector features that decide
 * llmcp's native path and OpenBLAS's kernels.
 * @param model - the CPU model name.
 * @param cores - logical cores.
 * @param flags - the features present among avx512f, avx2 and fma.
 * @returns one line.
 */
export function formatMachine(model: string, cores: number, flags: readonly string[]): string {
  const avx512 = flags.includes('avx512f') ? 'AVX-512' : 'no AVX-512';
  const rest = ['avx2', 'fma'].filter((f) => flags.includes(f)).map((f) => f.toUpperCase());
  return `CPU: ${model.trim()}, ${cores} logical core${cores === 1 ? '' : 's'} (${[...rest, avx512].join(', ')})`;
}

/**
 * Which kernels each llmcp variant ran (its `kernelInfo().kind`), in one line.
 * @param runs - each llmcp variant with the kind it reported (null: it did not run); PyTorch variants are left out.
 * @returns the line.
 */
export function formatKernelPaths(runs: readonly { readonly variant: Variant; readonly kind: string | null }[]): string {
  const parts = runs.filter((r) => r.variant.implementation !== 'pytorch').map((r) => `${variantLabel(r.variant)} ${r.kind ?? '(did not run)'}`);
  return `kernels that ran: ${parts.join('; ')}`;
}
