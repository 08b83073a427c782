/**
 * `llmcp export --to gguf <checkpoint|run[:slot]> [-o file.gguf] [--dtype f32|f16]`:
 * the model as a GGUF v3 file for llama.cpp (see ../gguf.ts).
 */
import path from 'node:path';
import { colorsFor, type CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { encodeGguf, ggufTensorInfos, type GgufDType } from '../gguf.ts';
import { resolveExportSource } from '../hf-export.ts';
import { writeOutputFiles } from '../internal/files.ts';
import { exportManifestFile, manifestLine } from '../internal/export-manifest.ts';
import type { SigningKey } from '@llmcp/trainer';
import { plural } from '../internal/text.ts';

/** Options of {@link runGgufExport}. */
export interface GgufExportOptions {
  readonly out?: string;
  /** `f32` (default) or `f16`; `f64` is refused (GGUF has no f64 tensors llama.cpp runs). */
  readonly dtype?: string;
  readonly force?: boolean;
  /** A run's newest verified checkpoint instead of its best. */
  readonly latest?: boolean;
  /** Signs the output's provenance manifest (`F.sig`); null or absent: unsigned. */
  readonly signingKey?: SigningKey | null;
}

/**
 * Runs `llmcp export --to gguf`.
 *
 * @param ctx - the command context.
 * @param spec - `<checkpoint|run[:slot]|slot-dir>`.
 * @param options - output (default `<run>-<slot>.gguf`, e.g. `default-best.gguf`, or `<file>.gguf`), dtype, force, latest.
 * @returns 0.
 * @throws CliError `CLI_USAGE` for `--dtype f64`, a bad source, a model llama.cpp cannot hold, an existing output without `--force`, or a failed write.
 */
export async function runGgufExport(ctx: CliContext, spec: string, options: GgufExportOptions): Promise<number> {
  if (options.dtype !== undefined && options.dtype !== 'f32' && options.dtype !== 'f16') {
    throw new CliError('CLI_USAGE', `--dtype ${options.dtype} does not apply to --to gguf: llama.cpp runs f32 or f16 tensors (--dtype f32, the default, or f16)`, { option: '--dtype' });
  }
  const dtype: GgufDType = options.dtype === 'f16' ? 'F16' : 'F32';
  const source = await resolveExportSource(ctx, spec, options.latest === true ? { latest: true } : {});
  const out = options.out ?? `${source.outputStem}.gguf`;
  const c = source.checkpoint;
  const name = path.basename(out).replace(/\.gguf$/i, '') || 'llmcp model';
  const bytes = encodeGguf(c, { dtype, name, sourceChecksum: c.layout.checksum });
  const key = options.signingKey ?? null;
  // The output and its provenance manifest (F.sig) in one call of the output rule: both checked before either is written.
  const manifest = await exportManifestFile(ctx, { file: out }, [{ path: path.basename(out), bytes }], { source, format: 'gguf', dtype, key });
  await writeOutputFiles(ctx, [{ file: out, bytes }, manifest], options.force === true);
  const tensors = ggufTensorInfos(c, dtype).length;
  const tok = c.tokenizer.kind === 'bpe' ? 'gpt2 byte-level BPE vocabulary' : 'gpt2 vocabulary of the literal pieces (no merges)';
  ctx.stdout.write(
    `wrote ${out}: GGUF v3, llama architecture, from ${source.description} (step ${c.selectedStep}, ${c.layout.checksumLabel}); ` +
      `${plural(tensors, 'tensor')} (${dtype === 'F32' ? 'F32' : 'F16 matrices, F32 norms'}), ${tok}, ${plural(bytes.length, 'byte')}\n`,
  );
  ctx.stdout.write(`${manifestLine(manifest.file, key)}\n`);
  const colors = colorsFor(ctx.stderr, ctx.env);
  ctx.stderr.write(colors.yellow(`note: GGUF holds ${dtype === 'F32' ? 'f32' : 'f16'} weights: every f64 value was rounded (lossy)\n`));
  if (c.tokenizer.kind === 'bpe') {
    ctx.stderr.write(
      colors.yellow("note: llama.cpp splits text with its pre-tokenizer regex before BPE and llmcp does not, so its text tokenization can differ; for llmcp's exact ids, tokenize with llmcp and pass token ids\n"),
    );
  }
  return EXIT_CODES.OK;
}
