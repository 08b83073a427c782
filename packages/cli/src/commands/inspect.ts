/**
 * `llmcp inspect <file>`: the layout audit of an LLMCP35 v1 file, as text or
 * JSON; works on damaged files as far as they parse. Exit 0 when the file is
 * valid, 1 when it is not.
 */
import { Command } from 'commander';
import { inspectCheckpoint, renderInspection } from '@llmcp/format';
import type { SetExit } from '../cli.ts';
import { colorsFor, type CliContext } from '../context.ts';
import { EXIT_CODES } from '../errors.ts';
import { ERROR_SCHEMA_ID } from '../error-report.ts';
import { inspectReportJson } from '../inspect-report.ts';
import { parsePositiveInteger } from '../internal/arguments.ts';
import { readInputFile } from '../internal/files.ts';

/** Options of `llmcp inspect`. */
export interface InspectOptions {
  readonly json?: boolean;
  readonly tokens?: number;
}

/**
 * Runs `llmcp inspect`.
 *
 * @param ctx - the command context.
 * @param file - the checkpoint path.
 * @param options - `--json`, `--tokens`.
 * @returns 0 when the file is valid, 1 when it is not.
 * @throws CliError for a missing or unreadable file.
 */
export function runInspect(ctx: CliContext, file: string, options: InspectOptions): number {
  const bytes = readInputFile(ctx, file, 'checkpoint');
  const inspection = inspectCheckpoint(bytes);
  if (options.json === true) {
    ctx.stdout.write(`${JSON.stringify(inspectReportJson(bytes, inspection, file), null, 2)}\n`);
  } else {
    const c = colorsFor(ctx.stdout, ctx.env);
    ctx.stdout.write(renderInspection(bytes, { inspection, file, style: { ok: c.green, bad: c.red, dim: c.dim, bold: c.bold }, tokens: options.tokens ?? 16 }));
  }
  return inspection.verdict.valid ? EXIT_CODES.OK : EXIT_CODES.FAILED;
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `inspect` command.
 */
export function inspectCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('inspect')
    .summary('layout audit of a checkpoint file (also damaged ones)')
    .description(
      'Audit the layout of an LLMCP35 v1 file before trusting its payload: the first 16 bytes annotated, the fixed header with offsets and raw bytes, ' +
        'the checksum (stored vs computed), the variable header, tokenizer, decoder and AdamW configuration, step and sampling RNG state, ' +
        'the descriptor table with half-open byte ranges and a per-row check (contiguity, length = shape × width), and the verdict: ' +
        'valid, or the first failing rule with its code and offset. A damaged file is shown as far as it parses.\n\n' +
        'Exit status: 0 valid, 1 invalid, 3 file missing or unreadable.',
    )
    .argument('<file>', 'checkpoint file (.llmcp)')
    .option('--json', `print a JSON report (JSON Schema: @llmcp/cli/schema/inspect.schema.json; a failure: "${ERROR_SCHEMA_ID}" on stdout)`)
    .option('--tokens <n>', 'tokenizer pieces or BPE merges to list', parsePositiveInteger, 16)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp inspect runs/a/checkpoints/latest/state.llmcp
  $ llmcp inspect damaged.llmcp            # shows what parsed and the failing rule
  $ llmcp inspect state.llmcp --json | jq '.descriptors[] | .range'
`,
    )
    .action((file: string, options: InspectOptions) => {
      setExit(runInspect(ctx, file, options));
    });
}
