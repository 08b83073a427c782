/**
 * `llmcp eval <checkpoint|run[:slot]>`: the final evaluation (one access to
 * the test partition after selection, decoder vs frozen bigram on the same
 * window-target slots) — and `llmcp report <run>`: the end-to-end report of
 * a run (chapter 39). Thin wrappers over `@llmcp/trainer`.
 */
import { existsSync, statSync } from 'node:fs';
import { Command } from 'commander';
import type { FinalEvaluation, RunReport } from '@llmcp/trainer';
import type { SetExit } from '../exit-codes.ts';
import type { CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { ERROR_SCHEMA_ID } from '../error-report.ts';
import { evaluationLines, runReportLines, type EvaluationProvenance } from '../evaluation-report.ts';
import { parsePositiveInteger } from '../internal/arguments.ts';
import { parseCheckpointAddress, runSlots } from '../internal/checkpoint-address.ts';
import { requirePath, resolvePath } from '../internal/files.ts';
import { trainer } from '../trainer.ts';

/** Identifier of the `eval --json` document. */
export const EVAL_SCHEMA_ID = 'llmcp-eval/1';

/** Identifier of the `report --json` document. */
export const REPORT_SCHEMA_ID = 'llmcp-report/1';

/** Options of `llmcp eval`. */
export interface EvalOptions {
  readonly corpus?: string;
  readonly split?: string;
  readonly batchSize?: number;
  readonly context?: number;
  readonly json?: boolean;
}

const isDirectory = (p: string): boolean => existsSync(p) && statSync(p).isDirectory();

/** Splits `run[:slot]`: a trailing `:slot` counts only when the whole argument is not itself a path. */
function target(ctx: CliContext, arg: string): { path: string; slot?: string } {
  if (existsSync(resolvePath(ctx, arg))) return { path: arg };
  const colon = arg.lastIndexOf(':');
  if (colon > 0 && isDirectory(resolvePath(ctx, arg.slice(0, colon)))) return { path: arg.slice(0, colon), slot: arg.slice(colon + 1) };
  return { path: arg };
}

/** u64 values (RNG states) as decimal strings, as in every llmcp JSON document. */
const jsonReplacer = (_key: string, value: unknown): unknown => (typeof value === 'bigint' ? value.toString() : value);

/**
 * Runs `llmcp eval`.
 *
 * @param ctx - the command context.
 * @param arg - a run directory (optionally `:slot`, default the best slot) or an `.llmcp` file.
 * @param options - corpus and split (for a file), batch size, context, output.
 * @returns 0.
 * @throws CliError for a missing path, a file without --corpus/--split, or a failed evaluation.
 */
export async function runEval(ctx: CliContext, arg: string, options: EvalOptions): Promise<number> {
  // The shared checkpoint address: a run (its best slot), a slot directory, run:slot, or a checkpoint file.
  const address = await parseCheckpointAddress(ctx, arg, { what: 'checkpoint or run directory' });
  if (address.kind === 'run' && address.slot !== null) await runSlots(address.run, address.runDir, address.slot);
  const t = address.kind === 'run' ? { path: address.run, ...(address.slot === null ? {} : { slot: address.slot }) } : { path: address.file };
  const absolute = address.kind === 'run' ? address.runDir : address.absolute;
  let evaluation: FinalEvaluation;
  let provenance: EvaluationProvenance;
  let source: Record<string, unknown>;
  if (address.kind === 'run') {
    if (options.corpus !== undefined || options.split !== undefined || options.batchSize !== undefined || options.context !== undefined) {
      throw new CliError('CLI_USAGE', 'a run is evaluated on its recorded inputs and settings; --corpus, --split, --batch-size and --context are for a checkpoint file', { option: '--corpus' });
    }
    const r = await trainer((tr) => tr.evaluateRun(absolute, t.slot === undefined ? {} : { slot: t.slot }), `eval ${arg}`);
    evaluation = r.evaluation;
    provenance = { corpus: r.job.inputs.corpus.sha256, split: r.job.inputs.split.sha256, tokenizer: r.job.inputs.tokenizer.identity, vocabulary: r.job.inputs.tokenizer.vocabularySize };
    source = { run: absolute, slot: r.slot, step: r.job.step, inputs: r.job.inputs };
  } else {
    if (options.corpus === undefined || options.split === undefined) {
      throw new CliError('CLI_USAGE', 'evaluating a checkpoint file needs --corpus <file> and --split <file> (a run directory uses its own)', { option: '--corpus' });
    }
    const corpus = requirePath(ctx, options.corpus, 'file', 'corpus').absolute;
    const split = requirePath(ctx, options.split, 'file', 'split manifest').absolute;
    const r = await trainer(
      (tr) =>
        tr.evaluateCheckpointFile(absolute, {
          corpus,
          split,
          ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
          ...(options.context === undefined ? {} : { contextLength: options.context }),
        }),
      `eval ${arg}`,
    );
    evaluation = r.evaluation;
    const tokenizer = (await import('@llmcp/tokenizer')).tokenizerFromState(r.state.tokenizer);
    provenance = { corpus, split, tokenizer: tokenizer.identity(), vocabulary: tokenizer.vocabularySize };
    source = { checkpoint: absolute, corpus, split };
  }
  if (options.json === true) {
    ctx.stdout.write(`${JSON.stringify({ schema: EVAL_SCHEMA_ID, source, provenance, evaluation }, jsonReplacer, 2)}\n`);
  } else {
    ctx.stdout.write(`${evaluationLines(evaluation, provenance).join('\n')}\n`);
  }
  return EXIT_CODES.OK;
}

/** Options of `llmcp report`. */
export interface ReportOptions {
  readonly replay?: boolean;
  readonly json?: boolean;
}

/**
 * Runs `llmcp report`.
 *
 * @param ctx - the command context.
 * @param arg - a run directory, optionally `:slot` (default the best slot).
 * @param options - replay, output.
 * @returns 0.
 * @throws CliError for a path that is not a run, or a failed report.
 */
export async function runReport(ctx: CliContext, arg: string, options: ReportOptions): Promise<number> {
  const t = target(ctx, arg);
  const { absolute } = requirePath(ctx, t.path, 'directory', 'run directory');
  const report: RunReport = await trainer(
    (tr) => tr.reportRun(absolute, { ...(t.slot === undefined ? {} : { slot: t.slot }), replay: options.replay === true }),
    `report ${arg}`,
  );
  if (options.json === true) {
    ctx.stdout.write(`${JSON.stringify({ schema: REPORT_SCHEMA_ID, run: absolute, ...report }, jsonReplacer, 2)}\n`);
  } else {
    ctx.stdout.write(`${runReportLines(report).join('\n')}\n`);
  }
  return EXIT_CODES.OK;
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `eval` command.
 */
export function evalCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('eval')
    .summary('final evaluation on the held-out test partition (decoder vs frozen bigram)')
    .description(
      'Score the selected state once on the test partition: the test window list (stride and context of the run) is built after selection and read once; the decoder and an add-1 bigram fitted on the training partition score the same ordered window-target slots. ' +
        'Prints the selection, provenance, baseline, slot set (counts, transition multiplicities, FNV-1a fingerprint), decoder and bigram mean NLL, perplexity and total NLL (token-weighted), the comparison, and proof that parameters and gradients are bit-identical before and after.\n\n' +
        '<target> is a run directory (its best slot; run:slot for another, e.g. runs/a:latest; the inputs must be unchanged) or an .llmcp file with --corpus and --split (encoded with the checkpoint\'s tokenizer).\n\n' +
        'Exit status: 0 ok, 1 the run does not verify, 2 bad options, 3 missing or changed inputs, no test window, 4 evaluation failed.',
    )
    .argument('<target>', 'run directory (its best slot), slot directory, run:slot (runs/a:step_000600), or checkpoint file')
    .option('--corpus <file>', 'JSON corpus (checkpoint files only)')
    .option('--split <file>', 'split manifest (checkpoint files only)')
    .option('--batch-size <n>', 'evaluation batch size (checkpoint files only; default 128)', parsePositiveInteger)
    .option('--context <n>', "window context length (checkpoint files only; default the model's positions)", parsePositiveInteger)
    .option('--json', `print a JSON document (schema "${EVAL_SCHEMA_ID}"; a failure: "${ERROR_SCHEMA_ID}" on stdout)`)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp train runs/ch34 --preset ch34 && llmcp eval runs/ch34
  $ llmcp eval runs/a:latest --json | jq .evaluation.decoder
  $ llmcp eval state.llmcp --corpus corpus.json --split splits.json --batch-size 128
`,
    )
    .action(async (arg: string, options: EvalOptions) => {
      setExit(await runEval(ctx, arg, options));
    });
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `report` command.
 */
export function reportCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('report')
    .summary("end-to-end report of a run (the reference's chapter 39)")
    .description(
      'Print data=, tokenizer=, model=, training=, test=, slot_metric=, transition_metric=, evidence=, checkpoint=, generation= and history= lines for a run: the partitions and corpus checksum, the tokenizer (re-learned from the train partition to show it saw nothing else), ' +
        'window and batch counts, every validation with the selection, the one final evaluation, the checkpoint structure with byte round trip and reload checks, and generation from the reloaded checkpoint with the run\'s sampling settings.\n\n' +
        'Exit status: 0 ok, 1 the run does not verify, 2 bad options, 3 not a run or changed inputs, 4 report failed.',
    )
    .argument('<run>', 'run directory (optionally run:slot; default the best slot)')
    .option('--replay', 'train the recorded config again from scratch (in a temporary directory) and compare the selected state bit for bit')
    .option('--json', `print a JSON document (schema "${REPORT_SCHEMA_ID}"; a failure: "${ERROR_SCHEMA_ID}" on stdout)`)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp train runs/ch39 --preset ch39 && llmcp report runs/ch39 --replay
  $ llmcp report runs/ch39 --json | jq .checkpoint
`,
    )
    .action(async (arg: string, options: ReportOptions) => {
      setExit(await runReport(ctx, arg, options));
    });
}
