/**
 * `llmcp import --from andrea-bin <file.bin> --config <file>`: rebuild an
 * LLMCP35 checkpoint from a raw ANDREA `step_NNNNNN.bin`, restoring the AdamW
 * step and checking every size.
 */
import path from 'node:path';
import { Command, Option } from 'commander';
import { encodeCheckpoint } from '@llmcp/format';
import { checkpointFromAndreaBin, decodeAndreaBin } from '../andrea-bin.ts';
import type { SetExit } from '../exit-codes.ts';
import type { CliContext } from '../context.ts';
import { CliError, isCliError } from '../errors.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { parseAndreaImportConfig } from '../import-config.ts';
import { readInputFile, resolvePath, writeOutputFile } from '../internal/files.ts';
import { plural } from '../internal/text.ts';

/** Options of `llmcp import`. */
export interface ImportOptions {
  readonly from: 'andrea-bin';
  readonly config: string;
  readonly out?: string;
  readonly force?: boolean;
}

/**
 * Runs `llmcp import`.
 *
 * @param ctx - the command context.
 * @param file - the `.bin` path.
 * @param options - source format, config, output.
 * @returns 0.
 * @throws CliError `CLI_ANDREA_BIN_INVALID` for a malformed `.bin`, `CLI_INVALID_INPUT` for a bad config, or a file error.
 */
export async function runImport(ctx: CliContext, file: string, options: ImportOptions): Promise<number> {
  const bytes = readInputFile(ctx, file, '.bin');
  let bin;
  try {
    bin = decodeAndreaBin(bytes);
  } catch (e) {
    if (!isCliError(e)) throw e;
    throw new CliError(e.code, `${file}: ${e.message}`, {
      path: resolvePath(ctx, file),
      ...(e.offset === undefined ? {} : { offset: e.offset }),
      hint: 'an ANDREA .bin is [i32 step][i32 n_params][f32 weights × n][f32 m × n][f32 v × n], exactly 8 + 12·n bytes',
      cause: e,
    });
  }
  const config = parseAndreaImportConfig(readInputFile(ctx, options.config, 'config'), options.config);
  const state = checkpointFromAndreaBin(bin, config);
  const out = options.out ?? `${path.basename(file).replace(/\.bin$/, '')}.llmcp`;
  const encoded = encodeCheckpoint(state);
  await writeOutputFile(ctx, out, encoded, options.force === true);
  ctx.stdout.write(
    `wrote ${out}: LLMCP35 v1, step ${bin.step}, ${plural(state.parameters.length, 'parameter tensor')} (${bin.weights.length} values from f32), ${plural(state.optimizer.moments.length, 'moment pair')}, ${encoded.length} bytes\n`,
  );
  return EXIT_CODES.OK;
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `import` command.
 */
export function importCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('import')
    .summary('rebuild a checkpoint from a raw ANDREA .bin')
    .description(
      'Rebuild an LLMCP35 v1 checkpoint from a raw ANDREA step_NNNNNN.bin ([i32 step][i32 n_params][f32 weights][f32 m][f32 v], ' +
        'little-endian, exactly 8 + 12·n bytes, parameters in model order). The AdamW step is the .bin\'s step; the beta powers are ' +
        'recomputed as the optimizer does (repeated multiplication from 1.0); at step 0 m and v must be zero. Values are widened f32 → f64 exactly.\n\n' +
        '--config gives what the .bin lacks: either an LLMCP35 checkpoint used as a template (its tokenizer, decoder and AdamW configuration, ' +
        'groups and sampling RNG state) or a JSON document {"format":"llmcp-andrea-import/1","tokenizer":<llmcp-tokenizer JSON>,"decoder":{…},' +
        '"adamw":{…},"groups":{"decay":[…],"noDecay":[…]}|null,"samplingRngState":"0x…"} as written by export --config-out. ' +
        'Every size is checked and the result must pass every LLMCP35 rule.\n\n' +
        'The output is written atomically, never inside a run directory, and --force replaces only a regular file.\n\n' +
        'Exit status: 0 ok, 2 bad options, 3 malformed .bin or config, or an output path inside a run or not a regular file, 4 write failed or output exists.',
    )
    .addOption(new Option('--from <format>', 'source format').choices(['andrea-bin']).makeOptionMandatory())
    .argument('<file>', 'the .bin file')
    .requiredOption('--config <file>', 'template checkpoint (.llmcp) or import config JSON')
    .option('-o, --out <file>', 'output checkpoint (default: <name>.llmcp)')
    .option('-f, --force', 'replace an existing output file')
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp import --from andrea-bin step_000008.bin --config model.json -o restored.llmcp
  $ llmcp import --from andrea-bin step_112700.bin --config previous.llmcp
`,
    )
    .action(async (file: string, options: ImportOptions) => {
      setExit(await runImport(ctx, file, options));
    });
}
