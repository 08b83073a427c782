/**
 * `llmcp export --to safetensors|andrea-bin <checkpoint>`: the model weights
 * (and optionally AdamW moments) as a standard safetensors file, or the raw
 * ANDREA `step_NNNNNN.bin` layout (lossy f64 → f32).
 */
import path from 'node:path';
import { Command, Option } from 'commander';
import { encodeAndreaBin } from '../andrea-bin.ts';
import type { SetExit } from '../cli.ts';
import { colorsFor, type CliContext } from '../context.ts';
import { CliError, EXIT_CODES } from '../errors.ts';
import { andreaImportConfigJson } from '../import-config.ts';
import { readCheckpointFile, writeOutputFile } from '../internal/files.ts';
import { plural } from '../internal/text.ts';
import { encodeSafetensors, SAFETENSORS_FIRST_MOMENT_PREFIX, SAFETENSORS_SECOND_MOMENT_PREFIX } from '../safetensors.ts';

/** Options of `llmcp export`. */
export interface ExportOptions {
  readonly to: 'safetensors' | 'andrea-bin';
  readonly out?: string;
  readonly moments?: boolean;
  readonly dtype?: 'f64' | 'f32';
  readonly configOut?: string;
  readonly force?: boolean;
}

function defaultOut(file: string, to: ExportOptions['to'], step: bigint): string {
  if (to === 'andrea-bin') return `step_${step.toString().padStart(6, '0')}.bin`;
  const base = path.basename(file).replace(/\.llmcp$/, '');
  return `${base}.safetensors`;
}

/**
 * Runs `llmcp export`.
 *
 * @param ctx - the command context.
 * @param file - checkpoint path.
 * @param options - target format, output, moments, dtype.
 * @returns 0.
 * @throws CliError for options that do not apply to the format, an invalid input, an existing output without `--force`, or a failed write.
 */
export async function runExport(ctx: CliContext, file: string, options: ExportOptions): Promise<number> {
  if (options.to === 'andrea-bin' && (options.moments === true || options.dtype === 'f32')) {
    throw new CliError('CLI_USAGE', `${options.moments === true ? '--moments' : '--dtype'} applies to --to safetensors only (an ANDREA .bin always holds f32 weights, m and v)`, { option: '--to' });
  }
  if (options.to === 'safetensors' && options.configOut !== undefined) {
    throw new CliError('CLI_USAGE', '--config-out applies to --to andrea-bin only (safetensors keeps the configuration in __metadata__)', { option: '--config-out' });
  }
  const { checkpoint } = readCheckpointFile(ctx, file);
  const out = options.out ?? defaultOut(file, options.to, checkpoint.selectedStep);
  const force = options.force === true;
  const c = colorsFor(ctx.stderr, ctx.env);
  if (options.to === 'safetensors') {
    const bytes = encodeSafetensors(checkpoint, { moments: options.moments === true, dtype: options.dtype === 'f32' ? 'F32' : 'F64', sourceChecksum: checkpoint.layout.checksum });
    await writeOutputFile(ctx, out, bytes, force);
    const tensors = checkpoint.parameters.length + (options.moments === true ? 2 * checkpoint.optimizer.moments.length : 0);
    ctx.stdout.write(`wrote ${out}: safetensors, ${plural(tensors, 'tensor')} (${options.dtype === 'f32' ? 'F32' : 'F64'}), ${plural(bytes.length, 'byte')}\n`);
    if (options.moments === true) ctx.stdout.write(`  AdamW moments as ${SAFETENSORS_FIRST_MOMENT_PREFIX}<name> and ${SAFETENSORS_SECOND_MOMENT_PREFIX}<name>\n`);
    if (options.dtype === 'f32') ctx.stderr.write(c.yellow('note: --dtype f32 rounds every f64 value to the nearest f32 (lossy)\n'));
  } else {
    const { bytes, report } = encodeAndreaBin(checkpoint);
    await writeOutputFile(ctx, out, bytes, force);
    ctx.stdout.write(`wrote ${out}: ANDREA .bin, step ${checkpoint.selectedStep}, n_params ${report.parameterCount}, ${bytes.length} bytes = 8 + 12·${report.parameterCount}\n`);
    ctx.stderr.write(
      c.yellow(
        `note: the .bin stores f32: ${report.roundedValues} of ${3 * report.parameterCount} values (weights, m, v) were rounded, max |Δ| ${report.maxAbsoluteError}; ` +
          'tokenizer, configuration, groups and sampling RNG state are not in the .bin (use --config-out to keep them for import)\n',
      ),
    );
    if (checkpoint.optimizer.moments.length === 0) ctx.stderr.write(c.yellow('note: step 0 has no AdamW state; m and v are written as zeros\n'));
    if (options.configOut !== undefined) {
      await writeOutputFile(ctx, options.configOut, new TextEncoder().encode(andreaImportConfigJson(checkpoint)), force);
      ctx.stdout.write(`wrote ${options.configOut}: import config (llmcp import --from andrea-bin ${out} --config ${options.configOut})\n`);
    }
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
    .summary('write a checkpoint as safetensors or as a raw ANDREA .bin')
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
        'Outputs are written atomically; an existing output is replaced only with --force.\n' +
        'Exit status: 0 ok, 2 bad options, 3 invalid input, 4 write failed or output exists.',
    )
    .addOption(new Option('--to <format>', 'target format').choices(['safetensors', 'andrea-bin']).makeOptionMandatory())
    .argument('<checkpoint>', 'checkpoint file (.llmcp)')
    .option('-o, --out <file>', 'output file (default: <name>.safetensors, or step_NNNNNN.bin)')
    .option('--moments', 'safetensors: include AdamW first and second moments')
    .addOption(new Option('--dtype <dtype>', 'safetensors: element type').choices(['f64', 'f32']).default('f64'))
    .option('--config-out <file>', 'andrea-bin: also write the import config (tokenizer, configuration, groups, RNG state)')
    .option('-f, --force', 'replace existing output files')
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp export --to safetensors state.llmcp -o model.safetensors
  $ llmcp export --to safetensors state.llmcp --moments -o with-adamw.safetensors
  $ llmcp export --to andrea-bin state.llmcp --config-out model.json      # writes step_000008.bin
`,
    )
    .action(async (file: string, options: ExportOptions) => {
      setExit(await runExport(ctx, file, options));
    });
}
