/**
 * The llmcp trainer app (`pnpm start`): trains a small decoder on the embedded
 * story corpus with a live progress display, writes `./runs/default`, and
 * prints the best checkpoint and a generated sample at the end. Ctrl-C (or
 * SIGTERM) finishes the current step, writes a checkpoint and exits with 0 (a
 * stop that was asked for and lost nothing is a success here, and `pnpm start`
 * then prints no ELIFECYCLE failure); running it again resumes. Every option
 * is listed by `--help`. Other exit codes are those of `llmcp` (`EXIT_CODES`
 * of `@llmcp/cli`; a second Ctrl-C exits at once with 130), and all output goes through
 * its `processOutput`, so a pipe reader that dies (`pnpm start | tee log`, then
 * Ctrl-C) never costs the stop checkpoint.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { colorsFor, EXIT_CODES, processOutput, resumeReportLines, trainerExitCode, type ExitCode } from '@llmcp/cli';
import {
  ch39Config,
  createProgressRenderer,
  defaultThreads,
  engineSettings,
  isPolicyField,
  isTrainerError,
  loadBestCheckpoint,
  loadConfig,
  loadSigningKey,
  parseConfig,
  readRunManifest,
  resumeRun,
  runSampleAudit,
  runStatus,
  trainRun,
  withEngine,
  type RunResult,
  type SigningKey,
  type TrainerConfig,
  type TrainerEvent,
  type TorchEngineOptions,
} from '@llmcp/trainer';
import { appConfigInput, CORPORA, SIZES, type CorpusChoice, type SizeName } from './defaults.ts';

const HELP = `Usage: pnpm start [-- options]

Trains a small language model with resumable, verified checkpoints.
Run it again with the same options to resume; Ctrl-C checkpoints and exits.

Options:
  --run-dir <dir>     run directory (default: runs/default)
  --corpus <name|path> default (embedded stories), bilingual (the reference corpus),
                      a JSON corpus (with --split), or a .txt file / folder of them
  --split <file>      split manifest for a JSON corpus given by path
  --steps <n>         update steps (default: ${SIZES.small.steps} for the default size); on an existing
                      run, a new budget extends it (recorded as a pivot; the cadence and
                      warm-up stay those the run was started with)
  --size <name>       model size: ${Object.keys(SIZES).join(', ')} (default: small)
  --config <file>     a full trainer config file (JSON); other options but --run-dir,
                      --threads and --plain are ignored
  --preset ch39       the reference's chapter-39 recipe on the bilingual corpus
                      (32 updates, exactly as llmcp train --preset ch39); other
                      options but --run-dir and --plain are ignored
  --threads <n>       model worker threads (default: this machine's cores, ${defaultThreads()}; the
                      bits never depend on it, and it never stops a resume)
  --engine torch      compute the steps with PyTorch (python -m llmcp.engine), one process
                      per rank; the trainer still owns the run (default: llmcp)
  --nproc <n>         torch: ranks on this machine (and the world size)
  --device <d>        torch: cpu (default) or cuda
  --dtype <t>         torch: f64 (default on the CPU) or f32 (default on CUDA)
  --python <path>     torch: the Python with PyTorch (default: $LLMCP_PYTHON, else python3)
  --sign-key <file>   sign every checkpoint's provenance manifest with this private key
                      (llmcp keygen, or an ECDSA P-256/P-384 or Ed25519 PEM key); it is
                      never written anywhere (without it the manifests are unsigned)
  --no-timing         leave timing out of loss.jsonl (byte-reproducible logs)
  --plain             plain progress lines even on a terminal
  -h, --help          show this help

Examples:
  pnpm start
  pnpm start -- --steps 300 --size tiny --run-dir runs/quick
  pnpm start -- --steps 600 --size tiny --run-dir runs/quick   (extends it to 600 steps)
  pnpm start -- --corpus bilingual --run-dir runs/bilingual
  pnpm start -- --preset ch39 --run-dir runs/ch39   (then: llmcp report runs/ch39)
  pnpm start -- --size medium --engine torch --nproc 2 --run-dir runs/torch

Exit status: 0 finished, or stopped by Ctrl-C or SIGTERM after writing its
checkpoint (run again to resume); 130 a second Ctrl-C exited at once; as llmcp:
2 bad options, 3 bad input or a run trained with other options, 4 training failed.`;

interface Options {
  readonly runDir: string;
  /**
   * The config of the options, its cadence and warm-up derived from
   * `derivedFrom` steps (default: the budget itself). A full `--config` or
   * `--preset` ignores it.
   */
  readonly config: (derivedFrom?: number) => TrainerConfig;
  /** `--steps` as given (undefined: the size's default for a new run, the run's own budget on resume). */
  readonly steps: number | undefined;
  /** Whether the config comes from `--config` or `--preset` (used as is) rather than from the app's options. */
  readonly explicit: boolean;
  readonly threads: number | undefined;
  readonly plain: boolean;
  /** The torch engine's machine settings (`--nproc`, `--python`). */
  readonly torch: TorchEngineOptions;
  /** `--sign-key`: signs the checkpoints' provenance manifests (null: unsigned). */
  readonly signingKey: SigningKey | null;
}

// Installed once, before anything is written: output errors (EPIPE from a dead `tee`) end output, never the run.
const { stdout: out, stderr: err } = processOutput();

function fail(message: string, code: ExitCode = EXIT_CODES.USAGE): never {
  err.write(`error: ${message}\n`);
  process.exit(code);
}

/** Fails with the message and exit code of a trainer error (config, corpus), else as a usage error. */
function failWith(e: unknown): never {
  if (isTrainerError(e)) fail(e.message, trainerExitCode(e.code));
  fail((e as Error).message);
}

function positiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) fail(`--${name} expects a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

function parseOptions(argv: readonly string[]): Options {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        'run-dir': { type: 'string' },
        corpus: { type: 'string' },
        split: { type: 'string' },
        steps: { type: 'string' },
        size: { type: 'string' },
        threads: { type: 'string' },
        engine: { type: 'string' },
        nproc: { type: 'string' },
        device: { type: 'string' },
        dtype: { type: 'string' },
        python: { type: 'string' },
        'sign-key': { type: 'string' },
        config: { type: 'string' },
        preset: { type: 'string' },
        'no-timing': { type: 'boolean' },
        plain: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    fail(`${(e as Error).message}\n\n${HELP}`);
  }
  if (values.help === true) {
    out.write(`${HELP}\n`);
    process.exit(EXIT_CODES.OK);
  }
  // pnpm runs scripts inside the package; resolve paths against where `pnpm start` was typed.
  const base = process.env.INIT_CWD ?? process.cwd();
  const runDir = path.resolve(base, values['run-dir'] ?? path.join('runs', 'default'));
  const threads = positiveInt(values.threads, 'threads');
  const nproc = positiveInt(values.nproc, 'nproc');
  let engine: ReturnType<typeof engineSettings>;
  try {
    engine = engineSettings({
      ...(values.engine === undefined ? {} : { engine: values.engine }),
      ...(nproc === undefined ? {} : { nproc }),
      ...(values.device === undefined ? {} : { device: values.device }),
      ...(values.dtype === undefined ? {} : { dtype: values.dtype }),
      ...(values.python === undefined ? {} : { python: values.python }),
    });
  } catch (e) {
    failWith(e);
  }
  let signingKey: SigningKey | null = null;
  try {
    if (values['sign-key'] !== undefined) signingKey = loadSigningKey(path.resolve(base, values['sign-key']));
  } catch (e) {
    failWith(e);
  }
  const common = { runDir, steps: undefined, explicit: true, threads, plain: values.plain === true, torch: engine.torch, signingKey };
  const withThreads = (config: TrainerConfig): TrainerConfig => withEngine(threads === undefined ? config : { ...config, threads }, engine.overrides);
  if (values.config !== undefined && values.preset === undefined) {
    try {
      const config = withThreads(loadConfig(path.resolve(base, values.config)));
      return { ...common, config: () => config };
    } catch (e) {
      failWith(e);
    }
  }
  if (values.preset !== undefined) {
    if (values.preset !== 'ch39') fail(`--preset must be ch39, got ${JSON.stringify(values.preset)}`);
    if (values.config !== undefined) fail('give either --config or --preset, not both');
    try {
      const config = withThreads(ch39Config());
      return { ...common, config: () => config };
    } catch (e) {
      failWith(e);
    }
  }
  const size = (values.size ?? 'small') as SizeName;
  if (!(size in SIZES)) fail(`--size must be one of ${Object.keys(SIZES).join(', ')}, got ${JSON.stringify(values.size)}`);
  const corpusArg = values.corpus ?? 'default';
  let corpus: CorpusChoice;
  if (corpusArg in CORPORA) corpus = CORPORA[corpusArg as keyof typeof CORPORA];
  else {
    const p = path.resolve(base, corpusArg);
    if (!existsSync(p)) fail(`--corpus ${corpusArg}: no such file or folder`, EXIT_CODES.INPUT);
    if (p.endsWith('.json')) {
      if (values.split === undefined) fail('a JSON corpus needs --split <manifest>');
      corpus = { kind: 'corpus', corpus: p, split: path.resolve(base, values.split) };
    } else corpus = { kind: 'text', path: p };
  }
  const steps = positiveInt(values.steps, 'steps');
  const timing = values['no-timing'] !== true;
  const config = (derivedFrom?: number): TrainerConfig => {
    try {
      const input = appConfigInput({ corpus, size, ...(derivedFrom === undefined ? (steps === undefined ? {} : { steps }) : { steps: derivedFrom }), timing });
      return withEngine(parseConfig(threads === undefined ? input : { ...(input as object), threads }), engine.overrides);
    } catch (e) {
      failWith(e);
    }
  };
  config(); // options that make no valid config fail now, before anything else
  return { ...common, config, steps, explicit: false };
}

/**
 * The app's option behind a config field, to name what the user changed.
 *
 * @param field - a dotted config key.
 * @returns the option, or null for fields derived from the size and budget (not named).
 */
function optionOf(field: string): string | null {
  if (field === 'steps') return '--steps';
  if (field.startsWith('log.')) return '--no-timing';
  if (field.startsWith('data.source') || field.startsWith('tokenizer')) return '--corpus';
  if (field.startsWith('model.') || field.startsWith('data.') || field === 'evaluation.stride') return '--size';
  if (field === 'threads') return '--threads';
  if (field.startsWith('engine')) return '--engine';
  // evaluation.validateEvery, checkpoint.every, schedule.warmupSteps: derived from --size and the step budget
  return null;
}

/** A refused resume, as {@link explainRefusal} explains it. */
interface Refusal {
  /** The run directory. */
  readonly runDir: string;
  /** The differing config keys. */
  readonly fields: readonly string[];
  /** The config the options ask for. */
  readonly requested: TrainerConfig;
  /** Whether the config came whole from a file or preset. */
  readonly explicit: boolean;
  /** The app's arguments. */
  readonly argv: readonly string[];
}

/**
 * Explains a refused resume: what the user changed, and the command that
 * applies it when it can be applied (the requested config is written to a
 * file for `llmcp pivot`).
 *
 * @param refusal - the run directory, the differing config keys, the config the options ask for, whether that
 *   config came whole from a file or preset, and the app's arguments.
 * @returns the lines to print.
 */
function explainRefusal(refusal: Refusal): string {
  const { runDir, fields, requested, explicit, argv } = refusal;
  const set = explicit ? [...fields] : [...new Set(fields.map(optionOf).filter((o): o is string => o !== null))];
  const named = set.length === 0 ? [...fields] : set;
  const what = `${runDir} was trained with other settings: ${explicit ? '' : 'you changed '}${named.map((o) => (explicit ? o : `${o} (${fields.filter((f) => optionOf(f) === o).join(', ')})`)).join(', ')}`;
  if (fields.some((f) => !isPolicyField(f))) {
    return `${what}.\nThese cannot change in an existing run: use the same options to resume it, or --run-dir <new dir> for a new run.\n`;
  }
  // In a fresh folder of its own (mkdtemp): a fixed name in the shared temporary folder could be a link or a FIFO
  // someone else put there, which writeFileSync would follow or block on.
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'llmcp-pivot-')), `${path.basename(runDir)}.json`);
  writeFileSync(file, `${JSON.stringify(requested, null, 2)}\n`, { flag: 'wx' });
  return `${what}.\nTo apply ${fields.length === 1 ? 'it' : 'them'} (a recorded pivot), then resume:\n  llmcp pivot ${runDir} --config ${file} --change ${fields.join(',')}\n  pnpm start -- ${argv.join(' ')}\n`;
}

async function main(): Promise<void> {
  // `pnpm start -- --steps 10` passes the `--` through; it separates nothing here.
  const argv = process.argv.slice(2).filter((a, i, all) => !(a === '--' && all.slice(0, i).every((b) => b === '--')));
  const options = parseOptions(argv);
  const { runDir, plain } = options;
  const progress = createProgressRenderer({ stream: out, ...(plain ? { live: false } : {}), plainIntervalMs: 5000 });
  const onEvent = (e: TrainerEvent): void => {
    // A new step budget is said before training goes on.
    if (e.type === 'budget-changed') out.write(`${e.description[0]?.toUpperCase() ?? ''}${e.description.slice(1)}.\n`);
    // A second Ctrl-C: the one line before the process exits (progress.finish ends a live line first).
    if (e.type === 'exiting') {
      progress.finish();
      out.write(`${e.description[0]?.toUpperCase() ?? ''}${e.description.slice(1)}.\n`);
      return;
    }
    progress.onEvent(e);
  };
  const resuming = existsSync(path.join(runDir, 'run.json'));
  let result: RunResult;
  let config: TrainerConfig = options.config();
  let steps = options.steps;
  try {
    if (resuming) {
      out.write(`Resuming the run in ${runDir} (the same options continue it; Ctrl-C checkpoints and exits).\n`);
      if (!options.explicit) {
        // The derived-field rule: cadence and warm-up stay those the run was started with (derived from its first
        // budget); --steps changes only the budget, and without it the run keeps its own.
        const created = readRunManifest(runDir)?.events.find((e) => e.event === 'created');
        const first = created?.event === 'created' ? created.steps : undefined;
        config = options.config(first);
        steps ??= safeBudget(runDir) ?? first;
      }
      result = await resumeRun(runDir, {
        config,
        ...(steps === undefined ? {} : { steps }),
        ...(options.threads === undefined ? {} : { threads: options.threads }),
        handleSignals: true,
        onEvent,
        torch: options.torch,
        signingKey: options.signingKey,
      });
    } else {
      out.write(`Starting a new run in ${runDir} (Ctrl-C checkpoints and exits; run again to resume).\n`);
      result = await trainRun({ runDir, config, handleSignals: true, onEvent, torch: options.torch, signingKey: options.signingKey });
    }
  } catch (e) {
    progress.finish();
    if (isTrainerError(e)) {
      err.write(`error (${e.code}): ${e.message}\n`);
      if (e.code === 'TRAINER_CONFIG_CHANGED') {
        err.write(explainRefusal({ runDir, fields: e.fields ?? [], requested: { ...config, ...(steps === undefined ? {} : { steps }) }, explicit: options.explicit, argv }));
      } else if (e.code === 'TRAINER_INPUT_CHANGED') {
        err.write(`${runDir} was trained with other inputs; use the same options to resume it, or --run-dir <new dir> for a new run.\n`);
      }
      process.exit(trainerExitCode(e.code));
    }
    throw e;
  }
  progress.finish();
  for (const line of resumeReportLines(result, colorsFor(out, process.env))) out.write(`${line}\n`);
  if (result.status === 'stopped') {
    out.write(`Stopped at step ${result.step}/${result.totalSteps} with a checkpoint in ${path.join(runDir, 'checkpoints', 'latest')}. Run the same command again to resume.\n`);
    // A clean, checkpointed stop is what was asked for: success (pnpm reports any other status as a failure).
    process.exitCode = EXIT_CODES.OK;
    return;
  }
  if (result.status === 'already-complete') out.write(`The run in ${runDir} is already complete (${result.step} steps).\n`);
  const best = await loadBestCheckpoint(runDir);
  if (best === null) {
    out.write('No best checkpoint was recorded.\n');
    return;
  }
  out.write(
    `Best checkpoint: ${best.dir} (step ${best.job.step}, validation loss ${best.job.best?.validationLoss.toFixed(4) ?? '?'})\n`,
  );
  // A fresh sample: the sampling stream continued past the checkpoint's own audit.
  const state = { ...best.state, samplingRngState: BigInt(best.job.sampling.nextState) };
  const audit = runSampleAudit(state, { ...config.sampling, count: 1 }, best.job.step);
  const sample = audit.samples[0];
  out.write(`Sample from the best checkpoint (prompt ${JSON.stringify(config.sampling.prompt)}):\n${config.sampling.prompt}${sample?.text ?? '(not valid UTF-8)'}\n`);
}

/**
 * The run's current step budget from its job files (cheap).
 *
 * @param runDir - the run directory.
 * @returns the budget, or undefined.
 */
function safeBudget(runDir: string): number | undefined {
  try {
    return runStatus(runDir).totalSteps ?? undefined;
  } catch {
    return undefined;
  }
}

main().catch((e: unknown) => {
  err.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(EXIT_CODES.RUNTIME);
});
