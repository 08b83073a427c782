/**
 * `llmcp export --to safetensors|andrea-bin <checkpoint>`: the model weights
 * (and optionally AdamW moments) as a standard safetensors file, or the raw
 * ANDREA `step_NNNNNN.bin` layout (lossy f64 → f32).
 */
import path from 'node:path';
import { Command, Option } from 'commander';
import { encodeAndreaBin } from '../andrea-bin.ts';
import { runHfExport } from '../hf-export.ts';
import { runGgufExport } from './export-gguf.ts';
import type { SetExit } from '../exit-codes.ts';
import { colorsFor, type CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { andreaImportConfigJson } from '../import-config.ts';
import { defaultOutputName, resolveCheckpoint, type LocatedCheckpoint } from '../internal/checkpoint-address.ts';
import { writeOutputFiles, type OutputFile } from '../internal/files.ts';
import { exportManifestFile, manifestLine, type ExportOutputs } from '../internal/export-manifest.ts';
import { readSigningKey } from '../internal/keys.ts';
import { plural } from '../internal/text.ts';
import { encodeSafetensors, SAFETENSORS_FIRST_MOMENT_PREFIX, SAFETENSORS_SECOND_MOMENT_PREFIX } from '../safetensors.ts';

/** Options of `llmcp export`. */
export interface ExportOptions {
  readonly to: 'safetensors' | 'andrea-bin' | 'hf' | 'gguf';
  /** hf: the output directory (the second argument). */
  readonly dir?: string;
  readonly out?: string;
  readonly moments?: boolean;
  /** Element type; the default depends on the format (f64, or f32 for gguf). */
  readonly dtype?: 'f64' | 'f32' | 'f16';
  readonly configOut?: string;
  readonly force?: boolean;
  /** A run's newest verified checkpoint instead of its best. */
  readonly latest?: boolean;
  /** `--sign-key`: the private key that signs the export's provenance manifests. */
  readonly signKey?: string;
}

/**
 * The default output file: named after the run and slot (`default-best.safetensors`, `default-step_000600.bin`)
 * for a run's checkpoint, else after the file (`state.safetensors`; an ANDREA .bin of a bare file keeps the
 * layout's own `step_NNNNNN.bin`).
 */
function defaultOut(source: LocatedCheckpoint, to: ExportOptions['to'], step: bigint): string {
  if (to === 'andrea-bin') return source.run === null ? `step_${step.toString().padStart(6, '0')}.bin` : defaultOutputName(source, '.bin');
  return defaultOutputName(source, '.safetensors');
}

/**
 * Runs `llmcp export`.
 *
 * @param ctx - the command context.
 * @param file - a checkpoint address: file, run directory (its best slot), slot directory or run:slot.
 * @param options - target format, output, moments, dtype.
 * @returns 0.
 * @throws CliError for options that do not apply to the format, an invalid input, an existing output without `--force`, or a failed write.
 */
export async function runExport(ctx: CliContext, file: string, options: ExportOptions): Promise<number> {
  if (options.to === 'gguf') {
    const wrong = options.moments === true ? '--moments' : options.configOut !== undefined ? '--config-out' : options.dir !== undefined ? `a second argument (${options.dir})` : null;
    if (wrong !== null) throw new CliError('CLI_USAGE', `${wrong} does not apply to --to gguf (llmcp export --to gguf <checkpoint|run[:slot]> [-o file.gguf] [--dtype f32|f16])`, { option: '--to' });
    return runGgufExport(ctx, file, { ...options, signingKey: await readSigningKey(ctx, options.signKey) });
  }
  if (options.dtype === 'f16') throw new CliError('CLI_USAGE', '--dtype f16 applies to --to gguf only', { option: '--dtype' });
  if (options.to === 'hf') {
    const wrong = options.moments === true ? '--moments' : options.configOut !== undefined ? '--config-out' : options.out !== undefined ? '--out' : null;
    if (wrong !== null) throw new CliError('CLI_USAGE', `${wrong} does not apply to --to hf (it writes a directory: llmcp export --to hf <checkpoint|run[:slot]> [dir])`, { option: wrong });
    return runHfExport(ctx, file, {
      ...(options.dir === undefined ? {} : { dir: options.dir }),
      ...(options.dtype === undefined ? {} : { dtype: options.dtype }),
      force: options.force === true,
      latest: options.latest === true,
      signingKey: await readSigningKey(ctx, options.signKey),
    });
  }
  if (options.dir !== undefined) throw new CliError('CLI_USAGE', `a second argument (${options.dir}) applies to --to hf only; use -o for the output file`, { option: '--out' });
  if (options.to === 'andrea-bin' && (options.moments === true || options.dtype === 'f32')) {
    throw new CliError('CLI_USAGE', `${options.moments === true ? '--moments' : '--dtype'} applies to --to safetensors only (an ANDREA .bin always holds f32 weights, m and v)`, { option: '--to' });
  }
  if (options.to === 'safetensors' && options.configOut !== undefined) {
    throw new CliError('CLI_USAGE', '--config-out applies to --to andrea-bin only (safetensors keeps the configuration in __metadata__)', { option: '--config-out' });
  }
  const key = await readSigningKey(ctx, options.signKey);
  const source = await resolveCheckpoint(ctx, file, options.latest === true ? { latest: true } : {});
  const { checkpoint } = source;
  const out = options.out ?? defaultOut(source, options.to, checkpoint.selectedStep);
  const force = options.force === true;
  const c = colorsFor(ctx.stderr, ctx.env);
  const provenance = (format: string, dtype: string | null): ExportOutputs => ({ source, format, dtype, key });
  // Every output file gets its provenance manifest beside it (F.sig), written with the outputs in one call of the
  // output rule: every destination is checked before the first byte is written, and a refusal leaves no file behind.
  const withManifests = async (outputs: readonly (OutputFile & { readonly provenance: ExportOutputs })[]): Promise<string[]> => {
    const manifests: OutputFile[] = [];
    for (const o of outputs) manifests.push(await exportManifestFile(ctx, { file: o.file }, [{ path: path.basename(o.file), bytes: o.bytes }], o.provenance));
    await writeOutputFiles(ctx, [...outputs.map((o) => ({ file: o.file, bytes: o.bytes })), ...manifests], force);
    return manifests.map((m) => m.file);
  };
  if (options.to === 'safetensors') {
    const dtype = options.dtype === 'f32' ? 'F32' : 'F64';
    const bytes = encodeSafetensors(checkpoint, { moments: options.moments === true, dtype, sourceChecksum: checkpoint.layout.checksum });
    const manifests = await withManifests([{ file: out, bytes, provenance: provenance('safetensors', dtype) }]);
    const tensors = checkpoint.parameters.length + (options.moments === true ? 2 * checkpoint.optimizer.moments.length : 0);
    ctx.stdout.write(`wrote ${out}: safetensors, ${plural(tensors, 'tensor')} (${options.dtype === 'f32' ? 'F32' : 'F64'}), ${plural(bytes.length, 'byte')}\n`);
    if (options.moments === true) ctx.stdout.write(`  AdamW moments as ${SAFETENSORS_FIRST_MOMENT_PREFIX}<name> and ${SAFETENSORS_SECOND_MOMENT_PREFIX}<name>\n`);
    if (options.dtype === 'f32') ctx.stderr.write(c.yellow('note: --dtype f32 rounds every f64 value to the nearest f32 (lossy)\n'));
    for (const m of manifests) ctx.stdout.write(`${manifestLine(m, key)}\n`);
  } else {
    const { bytes, report } = encodeAndreaBin(checkpoint);
    // Every output encoded before the first is written: a refusal leaves no file behind.
    const config = options.configOut === undefined ? null : new TextEncoder().encode(andreaImportConfigJson(checkpoint));
    const manifests = await withManifests([
      { file: out, bytes, provenance: provenance('andrea-bin', 'F32') },
      ...(config === null || options.configOut === undefined ? [] : [{ file: options.configOut, bytes: config, provenance: provenance('andrea-config', null) }]),
    ]);
    ctx.stdout.write(`wrote ${out}: ANDREA .bin, step ${checkpoint.selectedStep}, n_params ${report.parameterCount}, ${bytes.length} bytes = 8 + 12·${report.parameterCount}\n`);
    ctx.stderr.write(
      c.yellow(
        `note: the .bin stores f32: ${report.roundedValues} of ${3 * report.parameterCount} values (weights, m, v) were rounded, max |Δ| ${report.maxAbsoluteError}; ` +
          'tokenizer, configuration, groups and sampling RNG state are not in the .bin (use --config-out to keep them for import)\n',
      ),
    );
    if (checkpoint.optimizer.moments.length === 0) ctx.stderr.write(c.yellow('note: step 0 has no AdamW state; m and v are written as zeros\n'));
    if (options.configOut !== undefined) {
      ctx.stdout.write(`wrote ${options.configOut}: import config (llmcp import --from andrea-bin ${out} --config ${options.configOut})\n`);
    }
    for (const m of manifests) ctx.stdout.write(`${manifestLine(m, key)}\n`);
  }
  return EXIT_CODES.OK;
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `export` command.
 */
export function exportCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('export')
    .summary('write a checkpoint as safetensors, a raw ANDREA .bin, a Hugging Face model directory, or GGUF for llama.cpp')
    .description(
      'Export a valid checkpoint.\n\n' +
        '--to safetensors: a standard safetensors file (8-byte little-endian header length, JSON header with dtype/shape/data_offsets, ' +
        'contiguous data). Model parameters keep their llmcp names in model order; with --moments the AdamW moments follow as ' +
        `${SAFETENSORS_FIRST_MOMENT_PREFIX}<name> (first) and ${SAFETENSORS_SECOND_MOMENT_PREFIX}<name> (second). __metadata__ holds the tokenizer ` +
        '(llmcp-tokenizer JSON), decoder and AdamW configuration, groups, step, beta powers (bits), sampling RNG state and source checksum. ' +
        'F64 by default (exact); --dtype f32 rounds (lossy).\n\n' +
        '--to andrea-bin: the raw step_NNNNNN.bin layout [i32 step][i32 n_params][f32 weights][f32 m][f32 v], 8 + 12·n bytes, ' +
        'parameters in model order. LOSSY: every f64 is rounded to the nearest f32, and only step, weights and moments are kept; ' +
        '--config-out writes the rest as an import config.\n\n' +
        '--to hf <checkpoint|run[:slot]> <dir>: a Hugging Face LlamaForCausalLM directory that transformers loads as it is: config.json, ' +
        'model.safetensors (HF tensor names, projections [out, in], query/key rows permuted per head from adjacent-pair to rotate-half RoPE), ' +
        'tokenizer.json + tokenizer_config.json (byte-level BPE with BOS/EOS, no regex pre-tokenization: the same ids as llmcp), ' +
        'generation_config.json (the run\'s sampling settings) and a README.md model card. A run directory exports its best slot ' +
        '(or the one a resume would use); run:slot names the slot. A non-empty directory is written only with --force.\n\n' +
        '--to gguf <checkpoint|run[:slot]> [-o file.gguf]: a GGUF v3 file for llama.cpp (llama-cli, llama-server, ollama, LM Studio, ' +
        'node-llama-cpp): architecture llama, the llama.* hyper-parameters, general.* metadata with the source checksum and step, ' +
        'tensors under llama.cpp names (token_embd, blk.N.attn_q …, output_norm; the output head tied to token_embd), and the tokenizer ' +
        '(a byte-level BPE as a gpt2 vocabulary with merges, BOS 0 and EOS 1; a literal tokenizer as a gpt2 vocabulary of its pieces ' +
        'without merges). --dtype f32 (default) or f16 (matrices; norms stay f32); both round (lossy). llama.cpp splits text ' +
        'with a regex before BPE and llmcp does not, so its text tokenization can differ from llmcp\'s: for the exact ids, tokenize with ' +
        'llmcp and pass token ids. A run directory exports its best slot (or the one a resume would use); run:slot names the slot.\n\n' +
        'Every form takes a checkpoint file, a run directory (its best slot; --latest: its newest verified checkpoint), a slot directory, or run:slot. ' +
        'The default output is named after the run and slot (default-best.safetensors, default-step_000600.gguf, default-best-hf/).\n\n' +
        'Outputs are written atomically; an existing output is never replaced silently: the export is refused naming the file, and --force replaces it ' +
        '(only a regular file: a directory, FIFO, socket or device is refused). An output inside a run directory is refused: only the trainer writes there.\n\n' +
        'Every output file gets a provenance manifest (the OpenSSF model-signing layout: a DSSE-enveloped in-toto statement with the SHA-256 of the file and the checkpoint it came from): ' +
        'F.sig beside a file, model.sig in an hf directory; --sign-key signs it. Check it with llmcp verify F (--trust-key <public.pem>).\n' +
        'Exit status: 0 ok, 2 bad options, 3 invalid input or output path (inside a run, not a regular file), 4 write failed or output exists.',
    )
    .addOption(new Option('--to <format>', 'target format').choices(['safetensors', 'andrea-bin', 'hf', 'gguf']).makeOptionMandatory())
    .argument('<checkpoint>', 'checkpoint file (.llmcp), run directory (its best slot), slot directory, or run:slot (runs/a:best, runs/a:step_000600, runs/a:latest)')
    .argument('[dir]', 'hf: output directory (default: <run>-<slot>-hf, e.g. default-best-hf)')
    .option('-o, --out <file>', 'output file (default: named after the run and slot, e.g. default-best.safetensors, default-step_000600.gguf, default-best.bin; for a file: <name>.safetensors, step_NNNNNN.bin, <name>.gguf)')
    .option('--latest', "a run's newest verified checkpoint (the one a resume would use) instead of its best slot")
    .option('--moments', 'safetensors: include AdamW first and second moments')
    .addOption(new Option('--dtype <dtype>', 'element type: safetensors, hf f64 (default) or f32; gguf f32 (default) or f16').choices(['f64', 'f32', 'f16']))
    .option('--config-out <file>', 'andrea-bin: also write the import config (tokenizer, configuration, groups, RNG state)')
    .option('-f, --force', 'replace existing output files')
    .option('--sign-key <private.pem>', "sign the provenance manifest of every output (F.sig; model.sig in an hf directory) with this key (llmcp keygen); without it they are written unsigned")
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp export --to safetensors state.llmcp -o model.safetensors
  $ llmcp export --to safetensors state.llmcp --moments -o with-adamw.safetensors
  $ llmcp export --to andrea-bin state.llmcp --config-out model.json      # writes step_000008.bin
  $ llmcp export --to hf runs/a hf-model                                 # the best slot, f64
  $ llmcp export --to hf runs/a:step_000400 hf-model --dtype f32 --force
  $ llmcp export --to gguf runs/a -o stories.gguf                         # the best slot, f32
  $ llmcp export --to gguf runs/a:latest --dtype f16                     # writes a-latest.gguf
  $ llmcp export --to safetensors runs/a                                 # writes a-best.safetensors
  $ llmcp export --to safetensors runs/a:step_000600 --force             # replaces a-step_000600.safetensors
  $ llama-cli -m stories.gguf -p "One morning" -n 40 --temp 0            # llama.cpp (text goes through its own tokenizer)
`,
    )
    .action(async (file: string, dir: string | undefined, options: ExportOptions) => {
      setExit(await runExport(ctx, file, dir === undefined ? options : { ...options, dir }));
    });
}
