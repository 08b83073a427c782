/**
 * `llmcp inspect <file>`: the layout audit of an LLMCP35 v1 file, as text or
 * JSON; works on damaged files as far as they parse. Exit 0 when the file is
 * valid, 1 when it is not.
 */
import { Command } from 'commander';
import { u64Hex } from '@llmcp/format';
import { inspectCheckpoint, renderInspection, type CheckpointInspection } from '@llmcp/format/inspect';
import { foreignFileJson, renderForeignFile, type ForeignFileJson } from '@llmcp/format/foreign';
import type { SetExit } from '../exit-codes.ts';
import { colorsFor, type CliContext } from '../context.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { ERROR_SCHEMA_ID } from '../error-report.ts';
import { inspectReportJson } from '../inspect-report.ts';
import { parsePositiveInteger } from '../internal/arguments.ts';
import { locateCheckpoint } from '../internal/checkpoint-address.ts';
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

/** A foreign file (safetensors, GGUF) as read, with the name it is reported under. */
interface NamedForeignInput {
  /** The name the report uses for the file. */
  readonly file: string;
  /** The file's header, or why it does not parse. */
  readonly foreign: ForeignInput;
}

function inspectForeign(ctx: CliContext, input: NamedForeignInput, options: InspectOptions): number {
  const { file, foreign } = input;
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
  /** About a dozen lines instead of the full audit. */
  readonly summary?: boolean;
  /** A run's newest checkpoint instead of its best. */
  readonly latest?: boolean;
}

const n = (v: bigint | number | null | undefined): string => (v === null || v === undefined ? '?' : v.toString());

/**
 * The short form of the audit (`--summary`): kind, file size, header and
 * payload sizes, tokenizer and model one-liners, optimizer, step, records,
 * checksum, sampling state and the verdict.
 *
 * @param file - how the checkpoint was named (e.g. `runs/a:best`).
 * @param stateFile - the file read, when it differs from `file`.
 * @param inspection - `inspectCheckpoint` of its bytes.
 * @returns the lines.
 */
export function inspectSummaryLines(file: string, stateFile: string | null, inspection: CheckpointInspection): string[] {
  const i = inspection;
  const t = i.tokenizer;
  const d = i.decoder;
  const a = i.adamw;
  const tokenizer =
    t === null
      ? '?'
      : t.kind === 'bpe'
        ? `byte-level BPE, ${n(t.declaredVocabulary)} ids (${n(t.merges)} merges)`
        : t.kind === 'literal'
          ? `literal, ${n(t.declaredVocabulary)} pieces`
          : `unknown kind tag ${t.kindTag}`;
  const verdict = i.verdict.valid ? `VALID (${i.verdict.checkpoint.layout.checksumLabel})` : `INVALID ${i.verdict.error.code}${i.verdict.error.offset === undefined ? '' : ` at offset ${i.verdict.error.offset}`}: ${i.verdict.error.message}`;
  const checksum = i.checksum === null ? '?' : `stored ${i.checksum.storedLabel}, computed ${i.checksum.computedLabel} (${i.checksum.matches ? 'matches' : 'MISMATCH'})`;
  return [
    `${file}${stateFile === null ? '' : ` (${stateFile})`}`,
    'kind: LLMCP35 v1 checkpoint',
    `file: ${i.fileLength} bytes`,
    `header: ${n(i.headerBytes)} bytes, payload: ${n(i.payloadBytes)} bytes, records: ${n(i.descriptorCount)} (${n(i.modelParameterCount)} parameters, ${n(i.optimizerStateCount)} AdamW moment pairs)`,
    `tokenizer: ${tokenizer}`,
    `model: ${d === null ? '?' : `vocabulary ${d.vocabularySize}, width ${d.modelWidth}, heads ${d.heads}, feed-forward ${d.feedForwardWidth}, layers ${d.layers}, positions ${d.maxPositions}, rope base ${d.ropeBase}, rms eps ${d.rmsEpsilon}`}`,
    `optimizer: ${a === null ? '?' : `AdamW lr ${a.learningRate}, betas ${a.beta1}/${a.beta2}, eps ${a.epsilon}, weight decay ${a.weightDecay}`}, step ${n(i.optimizerStep)}`,
    `step: ${n(i.selectedStep)}`,
    `sampling rng: ${i.samplingRngState === null ? '?' : u64Hex(i.samplingRngState)}`,
    `checksum: ${checksum}`,
    `verdict: ${verdict}`,
  ];
}

/**
 * Runs `llmcp inspect`.
 *
 * @param ctx - the command context.
 * @param file - a checkpoint file, a run directory (its best slot; `--latest`: its newest), a slot directory, or `run:slot`.
 * @param options - `--json`, `--tokens`, `--summary`, `--latest`.
 * A safetensors or GGUF file is recognised and shown as what it is: its
 * header, metadata and tensor table (0 when its header parses, else 1).
 *
 * @returns 0 when the file is valid, 1 when it is not.
 * @throws CliError for a missing or unreadable file, or a run or slot that holds no checkpoint file.
 */
export async function runInspect(ctx: CliContext, file: string, options: InspectOptions): Promise<number> {
  // Found, not verified: the audit shows a damaged slot as far as it parses.
  const located = await locateCheckpoint(ctx, file, options.latest === true ? { latest: true } : {});
  const target = located.address.kind === 'file' ? file : located.stateFile;
  const name = located.address.kind === 'file' ? file : located.description;
  const foreign = readForeignInput(ctx, target, 'checkpoint');
  if (foreign !== null) return inspectForeign(ctx, { file: name, foreign }, options);
  const bytes = readInputFile(ctx, target, 'checkpoint');
  const inspection = inspectCheckpoint(bytes);
  if (options.json === true) {
    ctx.stdout.write(`${JSON.stringify(inspectReportJson(bytes, inspection, name), null, 2)}\n`);
  } else if (options.summary === true) {
    const c = colorsFor(ctx.stdout, ctx.env);
    const lines = inspectSummaryLines(name, target === file ? null : target, inspection);
    const last = lines.length - 1;
    lines[last] = inspection.verdict.valid ? c.green(lines[last] as string) : c.red(lines[last] as string);
    ctx.stdout.write(`${lines.join('\n')}\n`);
  } else {
    const c = colorsFor(ctx.stdout, ctx.env);
    ctx.stdout.write(renderInspection(bytes, { inspection, file: name, style: { ok: c.green, bad: c.red, dim: c.dim, bold: c.bold }, tokens: options.tokens ?? 16 }));
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
        'The checkpoint is a file, a run directory (its best slot, else latest, else its newest step snapshot; with --latest: latest first), ' +
        'a slot directory, or run:slot; a slot is audited as it is, not verified first. --summary prints about a dozen lines instead of the full audit.\n\n' +
        'Exit status: 0 valid, 1 invalid, 3 file missing or unreadable, or a slot the run does not have (the message lists its slots).',
    )
    .argument('<checkpoint>', 'checkpoint file (.llmcp), run directory (its best slot), slot directory, run:slot (runs/a:step_000600), or a safetensors / GGUF file')
    .option('--summary', 'about a dozen lines (kind, sizes, config, step, checksum, verdict) instead of the full audit')
    .option('--latest', "a run's newest slot (latest, else its newest step snapshot) instead of its best")
    .option('--json', `print a JSON report (JSON Schema: @llmcp/cli/schema/inspect.schema.json; a failure: "${ERROR_SCHEMA_ID}" on stdout)`)
    .option('--tokens <n>', 'tokenizer pieces or BPE merges to list', parsePositiveInteger, 16)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp inspect runs/a/checkpoints/latest/state.llmcp
  $ llmcp inspect runs/a --summary           # the best slot, in a dozen lines
  $ llmcp inspect runs/a:step_000600         # a step snapshot; runs/a --latest for the newest slot
  $ llmcp inspect damaged.llmcp            # shows what parsed and the failing rule
  $ llmcp inspect state.llmcp --json | jq '.descriptors[] | .range'
  $ llmcp inspect hf-model/model.safetensors       # a safetensors or GGUF file: its tensor table
`,
    )
    .action(async (file: string, options: InspectOptions) => {
      setExit(await runInspect(ctx, file, options));
    });
}
