/**
 * The llmcp trainer app (`pnpm start`): trains a small decoder on the embedded
 * story corpus with a live progress display, writes `./runs/default`, and
 * prints the best checkpoint and a generated sample at the end. Ctrl-C (or
 * SIGTERM) finishes the current step, writes a checkpoint and exits with 130;
 * running it again resumes. Every option is listed by `--help`. Exit codes are
 * those of `llmcp` (`EXIT_CODES` of `@llmcp/cli`), and all output goes through
 * its `processOutput`, so a pipe reader that dies (`pnpm start | tee log`, then
 * Ctrl-C) never costs the stop checkpoint.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { EXIT_CODES, processOutput, trainerExitCode, type ExitCode } from '@llmcp/cli';
import {
  ch39Config,
  createProgressRenderer,
  isTrainerError,
  loadBestCheckpoint,
  loadConfig,
  parseConfig,
  resumeRun,
  runSampleAudit,
  trainRun,
  type RunResult,
  type TrainerConfig,
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
  --steps <n>         update steps (default: ${SIZES.small.steps} for the default size)
  --size <name>       model size: ${Object.keys(SIZES).join(', ')} (default: small)
  --config <file>     a full trainer config file (JSON); other options are ignored
  --preset ch39       the reference's chapter-39 recipe on the bilingual corpus
                      (32 updates, exactly as llmcp train --preset ch39); other
                      options but --run-dir and --plain are ignored
  --no-timing         leave timing out of loss.jsonl (byte-reproducible logs)
  --plain             plain progress lines even on a terminal
  -h, --help          show this help

Examples:
  pnpm start
  pnpm start -- --steps 300 --size tiny --run-dir runs/quick
  pnpm start -- --corpus bilingual --run-dir runs/bilingual
  pnpm start -- --preset ch39 --run-dir runs/ch39   (then: llmcp report runs/ch39)

Exit status (as llmcp): 0 finished, 130 stopped by Ctrl-C or SIGTERM after writing
its checkpoint (run again to resume), 2 bad options, 3 bad input or a run trained
with other options, 4 training failed.`;

interface Options {
  readonly runDir: string;
  readonly config: TrainerConfig;
  readonly plain: boolean;
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
  if (values.config !== undefined && values.preset === undefined) {
    try {
      return { runDir, config: loadConfig(path.resolve(base, values.config)), plain: values.plain === true };
    } catch (e) {
      failWith(e);
    }
  }
  if (values.preset !== undefined) {
    if (values.preset !== 'ch39') fail(`--preset must be ch39, got ${JSON.stringify(values.preset)}`);
    if (values.config !== undefined) fail('give either --config or --preset, not both');
    try {
      return { runDir, config: ch39Config(), plain: values.plain === true };
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
  try {
    const input = appConfigInput({ corpus, size, ...(steps === undefined ? {} : { steps }), timing: values['no-timing'] !== true });
    return { runDir, config: parseConfig(input), plain: values.plain === true };
  } catch (e) {
    failWith(e);
  }
}

async function main(): Promise<void> {
  // `pnpm start -- --steps 10` passes the `--` through; it separates nothing here.
  const argv = process.argv.slice(2).filter((a, i, all) => !(a === '--' && all.slice(0, i).every((b) => b === '--')));
  const { runDir, config, plain } = parseOptions(argv);
  const progress = createProgressRenderer({ stream: out, ...(plain ? { live: false } : {}), plainIntervalMs: 5000 });
  const resuming = existsSync(path.join(runDir, 'run.json'));
  let result: RunResult;
  try {
    if (resuming) {
      out.write(`Resuming the run in ${runDir} (the same options continue it; Ctrl-C checkpoints and exits).\n`);
      result = await resumeRun(runDir, { config, handleSignals: true, onEvent: (e) => progress.onEvent(e) });
    } else {
      out.write(`Starting a new run in ${runDir} (Ctrl-C checkpoints and exits; run again to resume).\n`);
      result = await trainRun({ runDir, config, handleSignals: true, onEvent: (e) => progress.onEvent(e) });
    }
  } catch (e) {
    progress.finish();
    if (isTrainerError(e)) {
      err.write(`error (${e.code}): ${e.message}\n`);
      if (e.code === 'TRAINER_CONFIG_CHANGED' || e.code === 'TRAINER_INPUT_CHANGED') {
        err.write(`${runDir} was trained with other settings; use the same options to resume it, or --run-dir <new dir> for a new run.\n`);
      }
      process.exit(trainerExitCode(e.code));
    }
    throw e;
  }
  progress.finish();
  if (result.status === 'stopped') {
    out.write(`Stopped at step ${result.step}/${result.totalSteps} with a checkpoint in ${path.join(runDir, 'checkpoints', 'latest')}. Run the same command again to resume.\n`);
    process.exitCode = EXIT_CODES.INTERRUPTED;
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

main().catch((e: unknown) => {
  err.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(EXIT_CODES.RUNTIME);
});
