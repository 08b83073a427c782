/**
 * `llmcp inspect <file>`: the layout audit of an LLMCP35 v1 file, as text or
 * JSON; works on damaged files as far as they parse. Exit 0 when the file is
 * valid, 1 when it is not.
 */
import { Command } from 'commander';
import { inspectCheckpoint, renderInspection } from '@llmcp/format';
import { foreignFileJson, renderForeignFile, type ForeignFileJson } from '@llmcp/format/foreign';
import type { SetExit } from '../cli.ts';
import { colorsFor, type CliContext } from '../context.ts';
import { EXIT_CODES } from '../errors.ts';
import { ERROR_SCHEMA_ID } from '../error-report.ts';
import { inspectReportJson } from '../inspect-report.ts';
import { parsePositiveInteger } from '../internal/arguments.ts';
import { readInputFile } from '../internal/files.ts';
import { foreignErrorJson, foreignErrorText, foreignKindName, readForeignInput, type ForeignErrorJson, type ForeignInput } from '../internal/foreign.ts';

/** Identifier of the `inspect --json` document for a safetensors or GGUF file (`schema` member). */
export const INSPECT_FOREIGN_SCHEMA_ID = 'llmcp-inspect-foreign/1';

/** `llmcp inspect --json` of a safetensors or GGUF file: what it is, its header, or why the header does not parse. */
export interface InspectForeignJson {
  readonly schema: typeof INSPECT_FOREIGN_SCHEMA_ID;
  readonly path: string;
  readonly kind: 'safetensors' | 'gguf';
  readonly ok: boolean;
  readonly file: ForeignFileJson | null;
  readonly error: ForeignErrorJson | null;
}

function inspectForeign(ctx: CliContext, file: string, foreign: ForeignInput, options: InspectOptions): number {
  const { header, error } = foreign;
  if (options.json === true) {
    const doc: InspectForeignJson = {
      schema: INSPECT_FOREIGN_SCHEMA_ID,
      path: file,
      kind: foreign.kind,
      ok: header !== null,
      file: header === null ? null : foreignFileJson(header),
      error: foreignErrorJson(error),
    };
    ctx.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  } else {
    const c = colorsFor(ctx.stdout, ctx.env);
    if (header !== null) ctx.stdout.write(renderForeignFile(header, { file, style: { ok: c.green, bad: c.red, dim: c.dim, bold: c.bold } }));
    else if (error !== null) {
      ctx.stdout.write(`${c.bold(`${file}: ${foreign.size} bytes, ${foreignKindName(foreign.kind)} — not an LLMCP35 checkpoint`)}\n${c.red('header does not parse')}: ${foreignErrorText(error)}\n`);
    }
  }
  return header === null ? EXIT_CODES.FAILED : EXIT_CODES.OK;
}

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
 * A safetensors or GGUF file is recognised and shown as what it is: its
 * header, metadata and tensor table (0 when its header parses, else 1).
 *
 * @returns 0 when the file is valid, 1 when it is not.
 * @throws CliError for a missing or unreadable file.
 */
export function runInspect(ctx: CliContext, file: string, options: InspectOptions): number {
  const foreign = readForeignInput(ctx, file, 'checkpoint');
  if (foreign !== null) return inspectForeign(ctx, file, foreign, options);
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
        'A safetensors or GGUF file is recognised by its first bytes and shown as what it is: its header, metadata and tensor table ' +
        `(dtype or ggml type, shape, byte range), never a bad LLMCP35 magic; with --json the document is "${INSPECT_FOREIGN_SCHEMA_ID}".\n\n` +
        'Exit status: 0 valid, 1 invalid, 3 file missing or unreadable.',
    )
    .argument('<file>', 'checkpoint file (.llmcp), or a safetensors / GGUF file')
    .option('--json', `print a JSON report (JSON Schema: @llmcp/cli/schema/inspect.schema.json; a failure: "${ERROR_SCHEMA_ID}" on stdout)`)
    .option('--tokens <n>', 'tokenizer pieces or BPE merges to list', parsePositiveInteger, 16)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp inspect runs/a/checkpoints/latest/state.llmcp
  $ llmcp inspect damaged.llmcp            # shows what parsed and the failing rule
  $ llmcp inspect state.llmcp --json | jq '.descriptors[] | .range'
  $ llmcp inspect hf-model/model.safetensors       # a safetensors or GGUF file: its tensor table
`,
    )
    .action((file: string, options: InspectOptions) => {
      setExit(runInspect(ctx, file, options));
    });
}
