/**
 * `llmcp diff <a> <b>`: which header fields and tensors of two checkpoints
 * differ. Exit 0 when the files are bit-identical, 1 when they differ.
 */
import { Command } from 'commander';
import { tensorDifferenceText } from '@llmcp/format/inspect';
import { diffCheckpoints, type CheckpointDiff, type TensorDifference } from '../checkpoint-diff.ts';
import type { SetExit } from '../exit-codes.ts';
import { colorsFor, type CliContext } from '../context.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { ERROR_SCHEMA_ID } from '../error-report.ts';
import { resolveCheckpoint } from '../internal/checkpoint-address.ts';
import { alignTable, plural } from '../internal/text.ts';

/** Identifier of the JSON document (`schema` member). */
export const DIFF_SCHEMA_ID = 'llmcp-diff/1';

/** Options of `llmcp diff`. */
export interface DiffOptions {
  readonly json?: boolean;
  /** List identical tensors too. */
  readonly all?: boolean;
}

function deltaText(t: TensorDifference): string {
  if (t.status !== 'different') return '';
  return Number.isNaN(t.maxAbsDelta) ? 'NaN' : t.maxAbsDelta.toPrecision(6);
}


/** `a` and `b` name the two checkpoints as given; `all` lists identical tensors too. */
function render(ctx: CliContext, d: CheckpointDiff, view: { readonly a: string; readonly b: string; readonly all: boolean }): string {
  const { a, b, all } = view;
  const c = colorsFor(ctx.stdout, ctx.env);
  const out: string[] = [`a: ${a}  ${d.checksumA}`, `b: ${b}  ${d.checksumB}`, `bit-identical: ${d.bitIdentical ? c.green('yes') : c.yellow('no')}`];
  out.push('', d.fields.length === 0 ? 'header fields: all equal' : c.bold(`header fields that differ (${d.fields.length})`));
  if (d.fields.length > 0) out.push(...alignTable([[c.dim('field'), c.dim('a'), c.dim('b')], ...d.fields.map((f) => [f.field, f.a, f.b])], ['left', 'left', 'left']));
  const changed = d.tensors.filter((t) => t.status !== 'identical');
  out.push('', c.bold(`tensors: ${changed.length} of ${plural(d.tensors.length, 'tensor')} differ`));
  const shown = all ? d.tensors : changed;
  if (shown.length > 0) {
    const rows = [[c.dim('kind'), c.dim('name'), c.dim('status'), c.dim('max |Δ|'), c.dim('first difference (index: a bits → b bits)')]];
    for (const t of shown) {
      rows.push([t.kind, t.name, t.status === 'identical' ? c.green(tensorDifferenceText(t)) : c.yellow(tensorDifferenceText(t)), deltaText(t), t.first === null ? '' : `[${t.first.index}]: ${t.first.a} → ${t.first.b}`]);
    }
    out.push(...alignTable(rows, ['left', 'left', 'left', 'right', 'left']));
  }
  return `${out.join('\n')}\n`;
}

/**
 * Runs `llmcp diff`.
 *
 * @param ctx - the command context.
 * @param inputs - the two checkpoints `[a, b]`, each a file, run directory (its best slot), slot directory or `run:slot`.
 * @param options - `--json`, `--all`.
 * @returns 0 when bit-identical, 1 when they differ.
 * @throws CliError when either file is missing or not a valid checkpoint.
 */
export async function runDiff(ctx: CliContext, inputs: readonly [a: string, b: string], options: DiffOptions): Promise<number> {
  const [a, b] = inputs;
  // Each side: a checkpoint file, a run directory (its best slot), a slot directory or run:slot.
  const left = await resolveCheckpoint(ctx, a);
  const right = await resolveCheckpoint(ctx, b);
  const d = diffCheckpoints(left.bytes, right.bytes);
  if (options.json === true) {
    const tensors = (options.all === true ? d.tensors : d.tensors.filter((t) => t.status !== 'identical')).map((t) => ({
      ...t,
      maxAbsDelta: Number.isNaN(t.maxAbsDelta) ? 'NaN' : t.maxAbsDelta,
    }));
    const doc = { schema: DIFF_SCHEMA_ID, a, b, bitIdentical: d.bitIdentical, checksumA: d.checksumA, checksumB: d.checksumB, fields: d.fields, tensorsCompared: d.tensors.length, tensors };
    ctx.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  } else {
    ctx.stdout.write(render(ctx, d, { a, b, all: options.all === true }));
  }
  return d.bitIdentical ? EXIT_CODES.OK : EXIT_CODES.FAILED;
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `diff` command.
 */
export function diffCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('diff')
    .summary('compare two checkpoints field by field and tensor by tensor')
    .description(
      'Compare two valid checkpoints: header fields that differ (tokenizer, decoder and AdamW configuration, groups, steps, beta powers, ' +
        'sampling RNG state, sizes, checksum), and per tensor (parameters, first and second moments) the number of elements whose bit patterns ' +
        'differ, the largest |Δ| and the first differing element with both bit patterns.\n\n' +
        'Exit status: 0 bit-identical, 1 different, 3 a file is missing or invalid.',
    )
    .argument('<a>', 'first checkpoint: a file, run directory (its best slot), slot directory or run:slot')
    .argument('<b>', 'second checkpoint (the same forms)')
    .option('--all', 'list identical tensors too')
    .option('--json', `print a JSON document (schema "${DIFF_SCHEMA_ID}"; a failure: "${ERROR_SCHEMA_ID}" on stdout)`)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp diff runs/a/checkpoints/latest/state.llmcp runs/b/checkpoints/latest/state.llmcp
  $ llmcp diff runs/a:step_000400 runs/a:best       # two slots of one run
  $ llmcp diff before.llmcp after.llmcp --json | jq '.tensors[] | {name, differing, maxAbsDelta}'
`,
    )
    .action(async (a: string, b: string, options: DiffOptions) => {
      setExit(await runDiff(ctx, [a, b], options));
    });
}
