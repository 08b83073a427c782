/**
 * Run commands — `train`, `resume`, `pivot`, `fork`, `status` (alias `runs`):
 * thin wrappers over `@llmcp/trainer`, sharing its progress display (written
 * to stderr; the final summary goes to stdout).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import type { EngineFlags, RunResult, RunStatus, TrainerConfig, TrainingOptions } from '@llmcp/trainer';
import type { SetExit } from '../exit-codes.ts';
import { colorsFor, type CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { ERROR_SCHEMA_ID } from '../error-report.ts';
import { parseCheckpointAddress, runSlots } from '../internal/checkpoint-address.ts';
import { CONFIG_PRESETS, configOptions, readTrainConfig, type ConfigFlags } from './config.ts';
import { requireCreatableDirectory, requirePath, resolvePath } from '../internal/files.ts';
import { alignTable, plural } from '../internal/text.ts';
import { resumeReportLines } from '../resume-report.ts';
import { readSigningKey } from '../internal/keys.ts';
import { loadTrainer, trainer, type Trainer } from '../trainer.ts';

/** Identifier of the `status --json` document. */
export const STATUS_SCHEMA_ID = 'llmcp-status/1';

/** Identifier of the `train --dry-run --json` document. */
export const PLAN_SCHEMA_ID = 'llmcp-plan/1';

/** The document rules `--documents` accepts (`data.source.documents` of a text corpus). */
const DOCUMENT_RULES: readonly string[] = ['auto', 'lines', 'paragraphs', 'file', 'jsonl'];

/** Options shared by the commands that train. */
interface TrainFlags extends ConfigFlags, EngineFlags {
  readonly plain?: boolean;
  /** `--steps`: the step budget (train: overrides the config's; resume: a new budget, applied as a recorded pivot). */
  readonly steps?: number;
  /** `--threads`: model worker threads (default: this machine's cores; never changes bits). */
  readonly threads?: number;
  /** `--dry-run`: plan the run (read and tokenize the corpus, measure a few steps) and write nothing. */
  readonly dryRun?: boolean;
  /** `--json` (with `--dry-run`): the plan as a JSON document. */
  readonly json?: boolean;
  /** `--documents <rule>`: how a text corpus becomes documents (`data.source.documents`). */
  readonly documents?: string;
  /** `--sign-key`: the private key that signs every checkpoint's provenance manifest. */
  readonly signKey?: string;
}

/**
 * A positive integer option value parser (commander's argument parser).
 *
 * @param name - the option, for the message.
 * @returns the parser.
 */
function positiveInteger(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n <= 0) throw new CliError('CLI_USAGE', `${name} expects a positive integer, got ${JSON.stringify(value)}`, { option: name });
    return n;
  };
}

/**
 * The hint of a refused config change: the `llmcp pivot` command that applies
 * the fields when all are policy fields, else what cannot change.
 *
 * @param runDir - the run directory as typed.
 * @param configFile - the `--config` file as typed, if any.
 * @returns the hint of the fields a refusal names.
 */
function configChangedHint(runDir: string, configFile: string | undefined): (fields: readonly string[], t: Trainer) => string {
  return (fields, t) => {
    const fixed = fields.filter((f) => !t.isPolicyField(f));
    if (fixed.length > 0) return `${fixed.join(', ')} cannot change in an existing run; resume with the recorded settings, or start a new run ('llmcp fork' allows policy changes only)`;
    return `apply ${fields.length === 1 ? 'it' : 'them'} with: llmcp pivot ${runDir} --config ${configFile ?? '<config.json>'} --change ${fields.join(',')} && llmcp resume ${runDir}`;
  };
}

/** The config of `--config`/`--preset`/`--size`+`--corpus` with `--set` overrides (one home: commands/config.ts). */
async function readConfig(ctx: CliContext, flags: TrainFlags): Promise<TrainerConfig | undefined> {
  return readTrainConfig(ctx, flags);
}

/** The engine options of `train` and `resume` (one home: the trainer's engineSettings splits them into config and machine settings). */
function engineFlagOptions(): Option[] {
  return [
    new Option('--engine <kind>', 'what computes the steps: llmcp (this process, the reference bits) or torch (PyTorch processes, one per rank)').choices(['llmcp', 'torch']),
    new Option('--nproc <n>', 'torch engine: ranks on this node (and the world size, unless --world-size is given)').argParser(positiveInteger('--nproc')),
    new Option('--world-size <n>', 'torch engine: ranks in all, when the others join from other nodes (python -m llmcp.engine --rank r …)').argParser(positiveInteger('--world-size')),
    new Option('--device <device>', 'torch engine: cpu or cuda').choices(['cpu', 'cuda']),
    new Option('--dtype <dtype>', 'torch engine: f64 (default on the CPU) or f32 (default for a new engine on CUDA)').choices(['f64', 'f32']),
    new Option('--threads-per-rank <n>', 'torch engine: intra-op threads of each rank (default 1; part of the numerics)').argParser(positiveInteger('--threads-per-rank')),
    new Option('--python <interpreter>', 'torch engine: the Python with PyTorch (default: $LLMCP_PYTHON, else python3)'),
    new Option('--master-addr <host>', 'torch engine: this node\'s address as other nodes reach it (default 127.0.0.1)'),
    new Option('--master-port <port>', 'torch engine: the rendezvous port (default: a free one; required when ranks join from other nodes)').argParser(positiveInteger('--master-port')),
  ];
}

async function trainingOptions(ctx: CliContext, flags: TrainFlags): Promise<{ options: TrainingOptions; finish: () => void }> {
  // A key that cannot sign is refused before anything starts (and is never written anywhere).
  const signingKey = await readSigningKey(ctx, flags.signKey);
  const { createProgressRenderer } = await loadTrainer();
  const { torch } = await trainer((t) => t.engineSettings(flags), 'engine options');
  const progress = createProgressRenderer({ stream: ctx.stderr, env: ctx.env, ...(flags.plain === true ? { live: false } : {}), plainIntervalMs: 5000 });
  const options: TrainingOptions = {
    onEvent: (e) => {
      // A new step budget is said before training goes on (the progress display shows the rest).
      if (e.type === 'budget-changed') ctx.stdout.write(`${e.description}\n`);
      // A second Ctrl-C: one line, then the process exits (the live progress line is ended first).
      if (e.type === 'exiting') {
        finish();
        ctx.stderr.write(`${e.description}\n`);
        return;
      }
      progress.onEvent(e);
    },
    handleSignals: ctx.handleSignals === true,
    ...(ctx.signal === undefined ? {} : { signal: ctx.signal }),
    torch,
    signingKey,
  };
  let finished = false;
  const finish = (): void => {
    if (!finished) progress.finish();
    finished = true;
  };
  return { options, finish };
}

function summarize(ctx: CliContext, result: RunResult): number {
  const c = colorsFor(ctx.stdout, ctx.env);
  // What the resume did beyond continuing: the slot, slots it refused, records cut, work a crash had left undone.
  for (const line of resumeReportLines(result, c)) ctx.stdout.write(`${line}\n`);
  const best = result.best === null ? 'no validation yet' : `best validation loss ${result.best.validationLoss.toFixed(6)} at step ${result.best.step}`;
  if (result.status === 'stopped') {
    ctx.stdout.write(`${c.yellow('stopped')} at step ${result.step}/${result.totalSteps} (${result.stopReason ?? 'stop requested'}); checkpoint in ${path.join(result.runDir, 'checkpoints', 'latest')}; ${best}\n`);
    ctx.stdout.write(`resume with: llmcp resume ${result.runDir}\n`);
    return EXIT_CODES.INTERRUPTED;
  }
  const verb = result.status === 'already-complete' ? 'already complete' : 'completed';
  ctx.stdout.write(`${c.green(verb)}: ${result.runDir} at step ${result.step}/${result.totalSteps}${result.resumedFrom === null || result.status === 'already-complete' ? '' : ` (resumed from ${result.resumedFrom})`}; ${best}\n`);
  return EXIT_CODES.OK;
}

/**
 * Runs `llmcp train`.
 *
 * @param ctx - the command context.
 * @param runDir - the new run directory.
 * @param flags - config or preset, display.
 * @returns 0 when the run completed, 130 when it was stopped by a signal.
 * @throws CliError for a missing config, a path that is not (and cannot become) a directory, a directory that already holds a run, or a failed run.
 */
export async function runTrain(ctx: CliContext, runDir: string, flags: TrainFlags): Promise<number> {
  if (flags.json === true && flags.dryRun !== true) throw new CliError('CLI_USAGE', '--json goes with --dry-run (a run reports its progress on stderr)', { option: '--json' });
  if (flags.documents !== undefined && !DOCUMENT_RULES.includes(flags.documents)) {
    throw new CliError('CLI_USAGE', `--documents must be one of ${DOCUMENT_RULES.join(', ')}, found ${JSON.stringify(flags.documents)}`, { option: '--documents' });
  }
  // `--documents R`, `--steps N` and `--threads N` are `--set data.source.documents=R` / `--set steps=N` / `--set threads=N`
  // (last): validated with the config, and a size's warm-up and cadence follow the budget of a new run.
  const extra = [...(flags.steps === undefined ? [] : [`steps=${flags.steps}`]), ...(flags.threads === undefined ? [] : [`threads=${flags.threads}`])];
  let read = await readConfig(ctx, extra.length === 0 ? flags : { ...flags, set: [...(flags.set ?? []), ...extra] });
  if (read === undefined) throw new CliError('CLI_USAGE', 'a new run needs --config <file> or --preset <name>', { option: '--config' });
  if (flags.documents !== undefined) {
    if (read.data.source.kind !== 'text') throw new CliError('CLI_USAGE', '--documents applies to a text corpus (a .txt or .jsonl file or a folder of them)', { option: '--documents' });
    read = (await readConfig(ctx, { ...flags, set: [...(flags.set ?? []), `data.source.documents=${flags.documents}`, ...extra] })) as TrainerConfig;
  }
  const chosen = read;
  const config = await trainer((t) => t.withEngine(chosen, t.engineSettings(flags).overrides), `train ${runDir}`);
  if (flags.dryRun === true) return runDryRun(ctx, { runDir, config, json: flags.json === true, flags });
  const absolute = requireCreatableDirectory(ctx, runDir, 'run directory');
  const { options, finish } = await trainingOptions(ctx, flags);
  try {
    const result = await trainer((t) => t.trainRun({ ...options, runDir: absolute, config }), `train ${runDir}`);
    finish();
    return summarize(ctx, result);
  } finally {
    finish();
  }
}

/**
 * `llmcp train … --dry-run`: the plan of the run — what it trains on, its
 * epoch, its validation budget, its model size, memory and time — from the
 * corpus read and tokenized and a few measured updates; nothing is written.
 *
 * @param ctx - the command context.
 * @param run - the run directory as typed (not created), its validated config, and whether to print the `llmcp-plan/1` document.
 * @returns 0.
 */
async function runDryRun(ctx: CliContext, run: { readonly runDir: string; readonly config: TrainerConfig; readonly json: boolean; readonly flags: EngineFlags }): Promise<number> {
  const { runDir, config, json } = run;
  const t = await loadTrainer();
  const plan = await trainer((tr) => tr.planRun(config, { torch: tr.engineSettings(run.flags).torch }), `train ${runDir} --dry-run`);
  if (json) {
    ctx.stdout.write(`${JSON.stringify({ schema: PLAN_SCHEMA_ID, runDir, steps: config.steps, ...plan }, null, 2)}\n`);
    return EXIT_CODES.OK;
  }
  const mb = (bytes: number): string => `${Math.round(bytes / 2 ** 20).toLocaleString('en-US')} MiB`;
  const clock = (seconds: number): string => t.formatDuration(seconds * 1000);
  const m = config.model;
  const lines = [
    `dry run of ${runDir}: nothing was written`,
    `model: ${plan.parameters.toLocaleString('en-US')} parameters (width ${m.width}, ${m.layers} layers, ${m.heads} heads, context ${config.data.contextLength}); memory at peak about ${mb(plan.peakMemoryBytes)}`,
    ...t.describeRunPlan(plan),
    `time: an update takes ${plan.stepMs.toFixed(1)} ms (median of ${plan.measuredSteps}), a validation pass ${(plan.evaluationPassMs / 1000).toFixed(1)} s; ` +
      `an epoch about ${clock(plan.estimatedSecondsPerEpoch)}, the whole run (${config.steps.toLocaleString('en-US')} steps and ${plan.evaluation.passes} validation passes) about ${clock(plan.estimatedSecondsTotal)}`,
    `start it: drop --dry-run`,
  ];
  ctx.stdout.write(`${lines.join('\n')}\n`);
  return EXIT_CODES.OK;
}

/**
 * Runs `llmcp resume`.
 *
 * @param ctx - the command context.
 * @param runDir - the run directory.
 * @param flags - optional config (must equal the recorded one but for the step budget), `--steps` (a new budget, applied as a recorded pivot), `--threads`, display.
 * @returns 0 when the run completed, 130 when it was stopped by a signal.
 * @throws CliError for a directory that is not a run, a changed config or inputs, or a run that does not verify.
 */
export async function runResume(ctx: CliContext, runDir: string, flags: TrainFlags): Promise<number> {
  requirePath(ctx, runDir, 'directory', 'run directory');
  const config = await readConfig(ctx, flags);
  const { options, finish } = await trainingOptions(ctx, flags);
  try {
    const result = await trainer(
      (t) =>
        t.resumeRun(resolvePath(ctx, runDir), {
          ...options,
          ...(config === undefined ? {} : { config }),
          ...(flags.steps === undefined ? {} : { steps: flags.steps }),
          ...(flags.threads === undefined ? {} : { threads: flags.threads }),
          engine: t.engineSettings(flags).overrides,
        }),
      `resume ${runDir}`,
      { TRAINER_CONFIG_CHANGED: configChangedHint(runDir, flags.config) },
    );
    finish();
    return summarize(ctx, result);
  } finally {
    finish();
  }
}

interface PolicyFlags {
  readonly config?: string;
  readonly change?: string[];
  readonly set?: readonly string[];
  readonly reason?: string;
  /** `--sign-key`: signs the manifest of the checkpoint the pivot or fork writes. */
  readonly signKey?: string;
}

/**
 * The new config of a pivot or fork: `--config <file>` (with `--set` applied), or the recorded config with `--set`
 * applied (a function of it, evaluated by the trainer on the checkpoint it uses). The declared changes are `--change`
 * and the keys `--set` names.
 */
async function policyConfig(
  ctx: CliContext,
  flags: PolicyFlags,
  what: 'pivot' | 'fork',
): Promise<{ config: TrainerConfig | ((recorded: TrainerConfig) => TrainerConfig) | undefined; changes: string[] }> {
  const set = flags.set ?? [];
  const t = await loadTrainer();
  const setKeys = await trainer((tr) => set.map((a) => tr.parseConfigAssignment(a).key), `${what} --set`);
  const changes = [...new Set([...(flags.change ?? []), ...setKeys])];
  if (flags.config !== undefined) return { config: await readConfig(ctx, { config: flags.config, set }), changes };
  if (set.length === 0) {
    if (what === 'fork') return { config: undefined, changes };
    throw new CliError('CLI_USAGE', 'a pivot needs the new policy: --set key.path=value (repeatable) or --config <file> with --change', { option: '--set' });
  }
  // Relative paths given with --set resolve against the working directory, as for train.
  return { config: (recorded) => t.resolveConfigPaths(t.parseConfig(t.applyConfigOverrides(recorded, set)), ctx.cwd), changes };
}

/** The hint of a refused pivot or fork change: what the command may change, and how to declare it. */
function policyChangeHint(what: 'pivot' | 'fork'): (fields: readonly string[], t: Trainer) => string {
  return (fields, t) => {
    const fixed = fields.filter((f) => !t.isPolicyField(f));
    if (fixed.length > 0) return `${fixed.join(', ')} cannot change in a ${what} (policy fields only); start a new run for that`;
    return `declare ${fields.length === 1 ? 'it' : 'them'}: --change ${fields.join(',')} (keys given with --set are declared already)`;
  };
}

/**
 * Runs `llmcp pivot`.
 *
 * @param ctx - the command context.
 * @param runDir - the run directory.
 * @param flags - new config, declared changes, reason.
 * @returns 0.
 * @throws CliError for undeclared or non-policy changes, or a run that does not verify.
 */
export async function runPivot(ctx: CliContext, runDir: string, flags: PolicyFlags): Promise<number> {
  requirePath(ctx, runDir, 'directory', 'run directory');
  const { config, changes } = await policyConfig(ctx, flags, 'pivot');
  if (config === undefined) throw new CliError('CLI_USAGE', 'a pivot needs the new policy: --set key.path=value or --config <file>', { option: '--set' });
  const signingKey = await readSigningKey(ctx, flags.signKey);
  const r = await trainer(
    (t) => t.pivotRun(resolvePath(ctx, runDir), { config, changes, ...(flags.reason === undefined ? {} : { reason: flags.reason }), signingKey }),
    `pivot ${runDir}`,
    { TRAINER_CONFIG_CHANGED: policyChangeHint('pivot') },
  );
  ctx.stdout.write(`pivot ${r.pivot} of ${runDir} at step ${r.step} (from ${r.slot}): changed ${r.changed.length === 0 ? 'nothing' : r.changed.join(', ')}\n`);
  if (r.unchanged.length > 0) ctx.stdout.write(`  declared but unchanged: ${r.unchanged.join(', ')}\n`);
  ctx.stdout.write(`  archived the replaced policy in ${path.isAbsolute(r.archive) ? r.archive : path.join(runDir, r.archive)}\n  continue with: llmcp resume ${runDir}\n`);
  return EXIT_CODES.OK;
}

/**
 * Runs `llmcp fork`.
 *
 * @param ctx - the command context.
 * @param dirs - `[source, target]`: the run to fork (`run:slot` or a slot directory names the slot) and the new run directory.
 * @param flagsGiven - slot, config, declared changes, reason.
 * @returns 0.
 * @throws CliError for a `--slot` that is not a slot of the run, a damaged slot, a target that is occupied or cannot be created, or undeclared or non-policy changes.
 */
export async function runFork(ctx: CliContext, dirs: readonly [source: string, target: string], flagsGiven: PolicyFlags & { readonly slot?: string }): Promise<number> {
  const [source, target] = dirs;
  // The source may name its slot as a checkpoint address does: run:slot, or a slot directory.
  const named = await forkSourceSlot(ctx, source);
  if (named !== null && flagsGiven.slot !== undefined && flagsGiven.slot !== named.slot) {
    throw new CliError('CLI_USAGE', `${source} names the slot ${named.slot}; give either it or --slot ${flagsGiven.slot}, not both`, { option: '--slot' });
  }
  const flags = named === null ? flagsGiven : { ...flagsGiven, slot: named.slot };
  const { absolute: sourceDir } = named === null ? requirePath(ctx, source, 'directory', 'run directory') : { absolute: named.runDir };
  // A plain slot name (never a path: `../../etc` must not reach the file system) that the run has; else CLI_UNKNOWN_SLOT listing its slots.
  if (flags.slot !== undefined) await runSlots(named?.run ?? source, sourceDir, flags.slot, named === null ? '--slot' : 'slot');
  const { config, changes } = await policyConfig(ctx, flags, 'fork');
  const signingKey = await readSigningKey(ctx, flags.signKey);
  const targetDir = requireCreatableDirectory(ctx, target, 'fork target');
  const r = await trainer(
    (t) =>
      t.forkRun(sourceDir, targetDir, {
        ...(flags.slot === undefined ? {} : { slot: flags.slot }),
        ...(config === undefined ? {} : { config }),
        changes,
        ...(flags.reason === undefined ? {} : { reason: flags.reason }),
        signingKey,
      }),
    `fork ${source}`,
    { TRAINER_CONFIG_CHANGED: policyChangeHint('fork') },
  );
  ctx.stdout.write(`forked ${source} (${r.slot}, step ${r.step}) into ${target} as run ${r.runId}; changed ${r.changed.length === 0 ? 'nothing' : r.changed.join(', ')}\n`);
  ctx.stdout.write(`  train the branch with: llmcp resume ${target}\n`);
  return EXIT_CODES.OK;
}

/** The run and slot of a fork source given as `run:slot` or a slot directory; null for a plain run directory (or anything else). */
async function forkSourceSlot(ctx: CliContext, source: string): Promise<{ run: string; runDir: string; slot: string } | null> {
  const whole = resolvePath(ctx, source);
  const slotDir = existsSync(whole) && path.basename(path.dirname(whole)) === 'checkpoints';
  if (!slotDir && (existsSync(whole) || source.lastIndexOf(':') <= 0)) return null;
  const address = await parseCheckpointAddress(ctx, source, { what: 'run directory' });
  return address.kind === 'run' && address.slot !== null ? { run: address.run, runDir: address.runDir, slot: address.slot } : null;
}

/** `status --json` for one run. */
export interface StatusJson extends RunStatus {
  /** Seconds since `checkpoints/latest/state.llmcp` was written, or null. */
  readonly lastCheckpointAgeSeconds: number | null;
}

function checkpointAge(ctx: CliContext, runDir: string): number | null {
  const file = path.join(runDir, 'checkpoints', 'latest', 'state.llmcp');
  if (!existsSync(file)) return null;
  const now = ctx.now?.() ?? Date.now();
  return Math.max(0, Math.round((now - statSync(file).mtimeMs) / 1000));
}

function statusOf(ctx: CliContext, t: Trainer, absolute: string): StatusJson {
  const status = t.runStatus(absolute);
  return { ...status, lastCheckpointAgeSeconds: checkpointAge(ctx, absolute) };
}

/**
 * Runs `llmcp status`: one run, or every run directly inside a directory.
 *
 * @param ctx - the command context.
 * @param dir - a run directory, or a directory of runs.
 * @param options - `--json`.
 * @returns 0.
 * @throws CliError when the directory holds no run.
 */
export async function runStatusCommand(ctx: CliContext, dir: string, options: { readonly json?: boolean }): Promise<number> {
  const { absolute } = requirePath(ctx, dir, 'directory', 'run directory');
  const isRun = existsSync(path.join(absolute, 'run.json'));
  const runs = isRun
    ? [absolute]
    : readdirSync(absolute, { withFileTypes: true })
        .filter((e) => e.isDirectory() && existsSync(path.join(absolute, e.name, 'run.json')))
        .map((e) => path.join(absolute, e.name))
        .sort();
  if (runs.length === 0) {
    throw new CliError('CLI_WRONG_FILE_KIND', `${dir} is not a run directory and holds none (no run.json)`, { path: absolute, hint: "start one with 'llmcp train <run-dir> --config <file>'" });
  }
  const statuses = await trainer((t) => runs.map((r) => statusOf(ctx, t, r)), `status ${dir}`);
  if (options.json === true) {
    ctx.stdout.write(`${JSON.stringify({ schema: STATUS_SCHEMA_ID, runs: statuses }, null, 2)}\n`);
    return EXIT_CODES.OK;
  }
  const c = colorsFor(ctx.stdout, ctx.env);
  const { formatDuration } = await loadTrainer();
  const age = (s: StatusJson): string => (s.lastCheckpointAgeSeconds === null ? '--' : `${formatDuration(s.lastCheckpointAgeSeconds * 1000)} ago`);
  if (isRun) {
    const s = statuses[0] as StatusJson;
    const state = s.state === 'complete' ? c.green(s.state) : s.state === 'damaged' ? c.red(s.state) : c.yellow(s.state);
    const lines = [
      `run ${dir}${s.runId === null ? '' : ` (${s.runId})`}: ${state}`,
      `  latest step: ${s.step ?? '--'}${s.totalSteps === null ? '' : ` of ${s.totalSteps}`}${s.slot === null ? '' : ` (slot ${s.slot})`}, last checkpoint ${age(s)}`,
      `  best: ${s.best === null ? '--' : `step ${s.best.step}${s.bestSlot === null ? '' : ` (slot ${s.bestSlot})`}, validation loss ${s.best.validationLoss.toFixed(6)}`}`,
      `  losses: last training ${s.lastLoss === null ? '--' : s.lastLoss.toFixed(6)} (${plural(s.lossRecords, 'step record')}${s.lossEvaluations > 0 ? ` + ${plural(s.lossEvaluations, 'evaluation record')}` : ''} in loss.jsonl), last validation ${s.lastValidationLoss === null ? '--' : s.lastValidationLoss.toFixed(6)}`,
      `  slots: ${s.slots.length === 0 ? '--' : s.slots.join(', ')}; pivots ${s.pivots}; ${plural(s.events, 'event')} in run.json`,
    ];
    ctx.stdout.write(`${lines.join('\n')}\n`);
    return EXIT_CODES.OK;
  }
  const rows = [['run', 'state', 'step', 'best (step: loss)', 'last loss', 'last checkpoint'].map((t) => c.dim(t))];
  for (const s of statuses) {
    rows.push([
      path.basename(s.runDir),
      s.state,
      s.step === null ? '--' : `${s.step}/${s.totalSteps ?? '?'}`,
      s.best === null ? '--' : `${s.best.step}: ${s.best.validationLoss.toFixed(4)}`,
      s.lastLoss === null ? '--' : s.lastLoss.toFixed(4),
      age(s),
    ]);
  }
  ctx.stdout.write(`${alignTable(rows, ['left', 'left', 'right', 'left', 'right', 'left']).join('\n')}\n`);
  return EXIT_CODES.OK;
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), ...value.split(',').map((s) => s.trim()).filter((s) => s !== '')];

const SIGN_KEY_HELP = "sign every checkpoint's provenance manifest (model.sig) with this private key (llmcp keygen, or any ECDSA P-256/P-384 or Ed25519 PEM key); it is never written anywhere. Without it the manifests are unsigned (hashes and lineage are still checked)";

const SIGNALS_HELP = 'Ctrl-C (SIGINT) or SIGTERM finishes the current step, writes a checkpoint and exits with 130; SIGUSR1 writes a checkpoint and continues.';

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `train` command.
 */
export function trainCommand(ctx: CliContext, setExit: SetExit): Command {
  const { size, corpus, split, set } = configOptions();
  const command = new Command('train')
    .summary('start a new training run')
    .description(
      `Start a new run in <run-dir> from a trainer config (JSON; see @llmcp/trainer) or a built-in preset, training to its step budget with verified, resumable checkpoints. Progress goes to stderr (live on a terminal); the summary to stdout. ${SIGNALS_HELP}\n\n` +
        'The config: --config <file> (JSON Schema: @llmcp/trainer/config.schema.json), --preset <name>, or --size tiny|small|medium on --corpus <file|folder|bilingual> (the trainer app\'s sizes). ' +
        '--set key.path=value (repeatable) overrides one key of it; the value is JSON when it parses (0.01, true, null, {"kind":"constant"}), else text; ' +
        'the result is validated like a config file, and an unknown key is answered with the nearest known one. llmcp config prints the full effective config.\n\n' +
        'Exit status: 0 completed, 130 stopped by a signal (resume it), 2 bad options, 3 bad config, not a directory, or the directory already holds a run, 4 the directory cannot be created or training failed.',
    )
    .argument('<run-dir>', 'new run directory (created)')
    .option('-c, --config <file>', 'trainer config (JSON)')
    .addOption(new Option('--preset <name>', 'built-in config instead of --config (ch33: the 8-step reference fixture; ch34: ch33 plus its two test documents, for llmcp eval; ch39: the end-to-end recipe on the bundled bilingual corpus, for llmcp report)').choices(CONFIG_PRESETS))
    .addOption(size)
    .addOption(corpus)
    .addOption(split)
    .addOption(set)
    .option('--steps <n>', "step budget (overrides the config's)", positiveInteger('--steps'))
    .option('--threads <n>', "model worker threads (default: this machine's cores; the bits never depend on it)", positiveInteger('--threads'))
    .option('--documents <rule>', `how a text --corpus becomes documents: ${DOCUMENT_RULES.join(', ')} (default auto: JSON Lines for .jsonl, paragraphs where blank lines separate text, else one document per line)`)
    .option('--dry-run', 'read and tokenize the corpus, measure a few steps and print the plan (tokens trained on, epoch, validation budget, parameters, memory, time); write nothing')
    .option('--json', `with --dry-run: print the plan as a JSON document (schema "${PLAN_SCHEMA_ID}")`)
    .option('--plain', 'plain progress lines even on a terminal')
    .option('--sign-key <private.pem>', SIGN_KEY_HELP);
  for (const option of engineFlagOptions()) command.addOption(option);
  return command
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp train runs/a --size small --corpus book.txt --dry-run      # the plan, nothing written
  $ llmcp train runs/a --config train.json
  $ llmcp train runs/ch33 --preset ch33 && llmcp diff runs/ch33/checkpoints/best/state.llmcp golden-6330.llmcp
  $ llmcp train runs/ch34 --preset ch34 && llmcp eval runs/ch34
  $ llmcp train runs/ch39 --preset ch39 && llmcp report runs/ch39 --replay
  $ llmcp train runs/tiny --size tiny --corpus stories.txt                # a model size on your own text
  $ llmcp train runs/b --preset ch33 --set steps=4 --set checkpoint.every=2
  $ llmcp train runs/c --config train.json --set optimizer.learningRate=0.01 --set sampling.prompt="Once upon"
  $ llmcp train runs/big --size small --corpus text.txt --engine torch --nproc 2   # PyTorch, two ranks on this machine
  $ llmcp train runs/gpu --config big.json --engine torch --device cuda             # PyTorch on a GPU (f32)
`,
    )
    .action(async (runDir: string, flags: TrainFlags) => {
      setExit(await runTrain(ctx, runDir, flags));
    });
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `resume` command.
 */
export function resumeCommand(ctx: CliContext, setExit: SetExit): Command {
  const command = new Command('resume')
    .summary('continue a run from its newest verified checkpoint')
    .description(
      `Resume <run-dir> from its newest checkpoint that fully verifies (latest, else latest.backup, else the newest step snapshot) and train on, bit for bit as if it had never stopped. Everything is checked before anything changes on disk. ${SIGNALS_HELP}\n\n` +
        'Exit status: 0 completed (or already complete), 130 stopped by a signal, 1 no checkpoint verifies, 3 not a run or changed config/inputs, 4 training failed.',
    )
    .argument('<run-dir>', 'run directory')
    .option('-c, --config <file>', 'config to continue with (must equal the recorded one but for steps; use pivot to change other policy)')
    .option('--steps <n>', 'a new step budget (extend a finished or interrupted run): applied as a recorded pivot of steps, then training goes on', positiveInteger('--steps'))
    .option('--threads <n>', 'model worker threads (default: the recorded value; never a config change, the bits never depend on it)', positiveInteger('--threads'))
    .option('--plain', 'plain progress lines even on a terminal')
    .option('--sign-key <private.pem>', SIGN_KEY_HELP);
  for (const option of engineFlagOptions()) command.addOption(option);
  return command
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp resume runs/a
  $ llmcp resume runs/a --steps 2000          # extend a finished 1000-step run (recorded as a pivot)
  $ llmcp resume runs/a --plain 2> progress.log
  $ llmcp resume runs/big --nproc 1 --world-size 2 --master-addr 10.0.0.1 --master-port 29500   # rank 1 joins from another node
`,
    )
    .action(async (runDir: string, flags: TrainFlags) => {
      setExit(await runResume(ctx, runDir, flags));
    });
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `pivot` command.
 */
export function pivotCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('pivot')
    .summary('change policy fields of a run in place')
    .description(
      'Change policy fields (step budget, schedule, learning rate, weight decay, clipping, evaluation, checkpoint cadence and retention, sampling other than the seed, logging, threads) of a run at its latest verified checkpoint. ' +
        'The new policy is the recorded config with --set applied (the keys it names are declared), or a --config file; every changed field must be declared (--change a,b); samples.json, the old config and job are archived; weights, moments, data order, history and loss.jsonl continue. Then resume it.\n\n' +
        'Exit status: 0 ok, 1 the run does not verify, 2 bad options, 3 undeclared or non-policy change, not a run.',
    )
    .argument('<run-dir>', 'run directory')
    .option('-c, --config <file>', 'the new config (JSON); default: the recorded one, with --set applied')
    .addOption(configOptions().set)
    .option('--change <fields>', 'declared changed fields, comma-separated dotted keys (repeatable), e.g. steps,schedule; keys given with --set are declared', collect)
    .option('--reason <text>', 'why (recorded in run.json)')
    .option('--sign-key <private.pem>', SIGN_KEY_HELP)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp pivot runs/a --set steps=4000 --set schedule.floor=0.0005 --reason "longer, lower floor"
  $ llmcp pivot runs/a --config polish.json --change steps,schedule --reason "polish phase"
  $ llmcp resume runs/a
`,
    )
    .action(async (runDir: string, flags: PolicyFlags) => {
      setExit(await runPivot(ctx, runDir, flags));
    });
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `fork` command.
 */
export function forkCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('fork')
    .summary('branch a run from one of its checkpoints into a new run')
    .description(
      'Copy a verified checkpoint slot of <run-dir> into the new run <new-run-dir> with its own config (policy changes only, declared with --change) and a new run id, with loss.jsonl up to that step; both manifests record the lineage. Train the branch with resume.\n\n' +
        'Exit status: 0 ok, 1 the slot does not verify, 2 bad options, 3 a --slot the run does not have or that is not a slot name (the message lists the slots it has), occupied target, undeclared or non-policy change, not a run, 4 the target cannot be created.',
    )
    .argument('<run-dir>', 'run to fork; run:slot (runs/a:step_000400) or a slot directory names the slot as --slot does')
    .argument('<new-run-dir>', 'new run directory (must not exist or be empty)')
    .option('--slot <slot>', 'slot to fork from, by name: latest, latest.backup, best, best.backup, step_000400, … (default: the one a resume would use)')
    .option('-c, --config <file>', "the fork's config (default: the checkpoint's, with --set applied)")
    .addOption(configOptions().set)
    .option('--change <fields>', 'declared changed fields, comma-separated dotted keys (repeatable); keys given with --set are declared', collect)
    .option('--reason <text>', 'why (recorded in both run.json files)')
    .option('--sign-key <private.pem>', SIGN_KEY_HELP)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp fork runs/a runs/a-lowlr --slot step_000400 --set schedule.peak=0.003
  $ llmcp fork runs/a runs/a-lowlr --slot step_000400 --config lowlr.json --change optimizer.learningRate,schedule
  $ llmcp resume runs/a-lowlr
`,
    )
    .action(async (source: string, target: string, flags: PolicyFlags & { slot?: string }) => {
      setExit(await runFork(ctx, [source, target], flags));
    });
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `status` command.
 */
export function statusCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('status')
    .alias('runs')
    .summary('latest and best steps, losses and checkpoint age of runs')
    .description(
      'Summarize a run directory (or every run directly inside a directory): state, latest step of the step budget, best validation step and loss, last training and validation losses, last checkpoint age, slots, pivots. ' +
        "Reads job files only (fast); 'llmcp verify <run-dir>' checks everything.\n\n" +
        'Exit status: 0 ok, 3 not a run directory.',
    )
    .argument('<dir>', 'run directory, or a directory of runs')
    .option('--json', `print a JSON document (schema "${STATUS_SCHEMA_ID}"; a failure: "${ERROR_SCHEMA_ID}" on stdout)`)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp status runs/a
  $ llmcp runs runs/                        # one line per run
  $ llmcp status runs/a --json | jq .runs[0].best
`,
    )
    .action(async (dir: string, options: { json?: boolean }) => {
      setExit(await runStatusCommand(ctx, dir, options));
    });
}
