/**
 * The config of a new run, one way for `llmcp train` and `llmcp config`:
 * a config file, a built-in preset (`ch33`, `ch34`, `ch39`), or a model size
 * (`--size tiny|small|medium`, the trainer's size presets) on a corpus
 * (`--corpus`), then `--set key.path=value` overrides, all validated by the
 * trainer's zod schema. And `llmcp config <run|preset|file>`: the full
 * effective config as JSON (for a run: the config it records, after pivots).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import type { DataSourceConfigInput, TrainerConfig } from '@llmcp/trainer';
import type { SetExit } from '../exit-codes.ts';
import type { CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { requirePath, resolvePath } from '../internal/files.ts';
import { trainer } from '../trainer.ts';

/** The built-in reference configs (`--preset`). */
export const CONFIG_PRESETS: readonly string[] = ['ch33', 'ch34', 'ch39'];

/** The named corpus `--corpus` accepts besides a path: the reference's tiny bilingual corpus shipped with `@llmcp/data`. */
const BUNDLED_CORPORA: Readonly<Record<string, 'tiny-bilingual'>> = { bilingual: 'tiny-bilingual', 'tiny-bilingual': 'tiny-bilingual' };

/** The flags that choose a config. */
export interface ConfigFlags {
  readonly config?: string;
  readonly preset?: string;
  /** `--size tiny|small|medium`: the trainer's size presets on `--corpus`. */
  readonly size?: string;
  /** `--corpus <file|folder|bilingual>`. */
  readonly corpus?: string;
  /** `--split <manifest>` for a JSON corpus. */
  readonly split?: string;
  /** `--set key.path=value`, in order. */
  readonly set?: readonly string[];
}

/**
 * commander collector of repeatable `--set` values.
 *
 * @param value - one `key.path=value`.
 * @param previous - the values so far.
 * @returns all values, in order.
 */
export function collectAssignments(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * The `data.source` of `--corpus`: `bilingual` (bundled), a JSON corpus with
 * `--split`, or a text file or folder of `.txt` files (absolute paths).
 */
async function corpusSource(ctx: CliContext, corpus: string, split: string | undefined): Promise<DataSourceConfigInput> {
  const bundled = BUNDLED_CORPORA[corpus];
  if (bundled !== undefined && !existsSync(resolvePath(ctx, corpus))) {
    if (split !== undefined) throw new CliError('CLI_USAGE', `--split applies to a JSON corpus given by path; --corpus ${corpus} has its own`, { option: '--split' });
    const [file, manifest] = (await import('@llmcp/data/node')).bundledCorpusFiles(bundled);
    return { kind: 'corpus', corpus: file, split: manifest };
  }
  const { absolute, isDirectory } = requirePath(ctx, corpus, 'file-or-directory', 'corpus');
  if (!isDirectory && absolute.endsWith('.json')) {
    if (split === undefined) throw new CliError('CLI_USAGE', `a JSON corpus needs its split manifest: --corpus ${corpus} --split <manifest.json>`, { option: '--split' });
    return { kind: 'corpus', corpus: absolute, split: requirePath(ctx, split, 'file', 'split manifest').absolute };
  }
  if (split !== undefined) throw new CliError('CLI_USAGE', '--split applies to a JSON corpus only (a text corpus is split by document hash)', { option: '--split' });
  return { kind: 'text', path: absolute };
}

/**
 * The config a new run starts from: `--config`, `--preset`, or `--size` on
 * `--corpus` (size `small` when only `--corpus` is given), with `--set`
 * overrides applied in order; validated by the trainer's schema. Relative
 * paths (of a config file, or given with `--set`) are resolved against the
 * config file's directory, else against the working directory.
 *
 * @param ctx - the command context.
 * @param flags - config, preset, size, corpus, split, set.
 * @returns the validated config, or undefined when no source was given.
 * @throws CliError `CLI_USAGE` for conflicting sources or a size without a corpus, `CLI_RUN_FAILED` (exit 3) for an invalid config or unknown key (with the nearest key).
 */
export async function readTrainConfig(ctx: CliContext, flags: ConfigFlags): Promise<TrainerConfig | undefined> {
  const sources = [flags.config === undefined ? null : '--config', flags.preset === undefined ? null : '--preset', flags.size === undefined && flags.corpus === undefined ? null : '--size/--corpus'].filter(
    (s): s is string => s !== null,
  );
  if (sources.length > 1) throw new CliError('CLI_USAGE', `give one of --config, --preset or --size/--corpus, not ${sources.join(' and ')}`, { option: sources[1] as string });
  if (flags.split !== undefined && flags.corpus === undefined) throw new CliError('CLI_USAGE', '--split needs --corpus <corpus.json>', { option: '--split' });
  const t = await import('@llmcp/trainer');
  const set = flags.set ?? [];
  let input: unknown;
  let baseDir = ctx.cwd;
  let what: string;
  if (flags.preset !== undefined) {
    what = `preset ${flags.preset}`;
    const preset = flags.preset;
    if (!CONFIG_PRESETS.includes(preset)) throw new CliError('CLI_USAGE', `unknown preset ${JSON.stringify(preset)}; the presets are ${CONFIG_PRESETS.join(', ')}`, { option: '--preset' });
    input = await trainer((tr) => (preset === 'ch33' ? tr.ch33Config() : preset === 'ch34' ? tr.ch34Config() : tr.ch39Config()), what);
  } else if (flags.config !== undefined) {
    const file = flags.config;
    what = `config ${file}`;
    const { absolute } = requirePath(ctx, file, 'file', 'config');
    baseDir = path.dirname(absolute);
    input = await trainer((tr) => tr.readConfigFile(absolute), what);
  } else if (flags.size !== undefined || flags.corpus !== undefined) {
    const size = flags.size ?? 'small';
    if (!t.isSizePresetName(size)) throw new CliError('CLI_USAGE', `--size must be one of ${Object.keys(t.SIZE_PRESETS).join(', ')}, found ${JSON.stringify(size)}`, { option: '--size' });
    if (flags.corpus === undefined) throw new CliError('CLI_USAGE', `--size ${size} needs --corpus <file|folder|bilingual>: the text to train on`, { option: '--corpus' });
    what = `size ${size} on ${flags.corpus}`;
    // A size's warm-up and cadence derive from its budget: `--set steps=N` sets the budget they derive from.
    const budget = await trainer((tr) => set.map((a) => tr.parseConfigAssignment(a)).filter((a) => a.key === 'steps').at(-1)?.value, `${what} with --set`);
    const steps = typeof budget === 'number' && Number.isSafeInteger(budget) && budget > 0 ? budget : undefined;
    input = t.sizePresetConfigInput({ source: await corpusSource(ctx, flags.corpus, flags.split), size, ...(steps === undefined ? {} : { steps }) });
  } else {
    if (set.length > 0) throw new CliError('CLI_USAGE', '--set changes a config: give --config <file>, --preset <name> or --size/--corpus too', { option: '--set' });
    return undefined;
  }
  if (set.length === 0 && flags.preset !== undefined) return input as TrainerConfig;
  // Relative paths (of the file, or given with --set) resolve against the config file's directory, else the working directory.
  return trainer((tr) => tr.resolveConfigPaths(tr.parseConfig(tr.applyConfigOverrides(input, set)), baseDir), set.length === 0 ? what : `${what} with --set`);
}

/** Options of `llmcp config`. */
export type ConfigCommandOptions = Omit<ConfigFlags, 'config' | 'preset'>;

/**
 * Runs `llmcp config`: prints the full effective config as JSON, `$schema`
 * first (the JSON Schema shipped with `@llmcp/trainer`).
 *
 * @param ctx - the command context.
 * @param target - a run directory (the config it records, after pivots), a preset (`ch33`, `ch34`, `ch39`; a size `tiny`, `small`, `medium` with `--corpus`), or a config file.
 * @param options - `--corpus`, `--split`, `--set`.
 * @returns 0.
 * @throws CliError for a target that is none of those, or an invalid config.
 */
export async function runConfig(ctx: CliContext, target: string, options: ConfigCommandOptions): Promise<number> {
  const t = await import('@llmcp/trainer');
  const absolute = resolvePath(ctx, target);
  let config: TrainerConfig | undefined;
  if (existsSync(absolute) && t.isRunDirectory(absolute)) {
    if (options.size !== undefined || options.corpus !== undefined || options.split !== undefined) {
      throw new CliError('CLI_USAGE', `${target} is a run: its config is the recorded one; --size, --corpus and --split apply to a preset`, { option: options.size !== undefined ? '--size' : options.corpus !== undefined ? '--corpus' : '--split' });
    }
    const loaded = await trainer((tr) => tr.loadRunCheckpoint(absolute), `config ${target}`);
    const set = options.set ?? [];
    // With --set: the recorded config as 'llmcp pivot <run> --set …' would make it (validated the same way).
    config = set.length === 0 ? loaded.checkpoint.job.config : await trainer((tr) => tr.resolveConfigPaths(tr.parseConfig(tr.applyConfigOverrides(loaded.checkpoint.job.config, set)), ctx.cwd), `config ${target} with --set`);
  } else if (CONFIG_PRESETS.includes(target) && !existsSync(absolute)) {
    config = await readTrainConfig(ctx, { ...options, preset: target });
  } else if (t.isSizePresetName(target) && !existsSync(absolute)) {
    config = await readTrainConfig(ctx, { ...options, size: target });
  } else if (existsSync(absolute)) {
    const { isDirectory } = requirePath(ctx, target, 'file-or-directory', 'config');
    if (isDirectory) {
      throw new CliError('CLI_WRONG_FILE_KIND', `${target} is a directory but not a run directory (no run.json, run.lock or checkpoints/)`, { path: absolute, hint: 'give a run directory, a preset name or a config file' });
    }
    config = await readTrainConfig(ctx, { ...options, config: target });
  } else {
    throw new CliError('CLI_FILE_NOT_FOUND', `${target} is not a run directory, a preset (${[...CONFIG_PRESETS, ...Object.keys(t.SIZE_PRESETS)].join(', ')}) or a config file`, {
      path: absolute,
      hint: 'check the path (relative paths start from the current directory)',
    });
  }
  const { $schema: _ignored, ...rest } = config as TrainerConfig & { $schema?: string };
  ctx.stdout.write(`${JSON.stringify({ $schema: t.CONFIG_SCHEMA_REF, ...rest }, null, 2)}\n`);
  return EXIT_CODES.OK;
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `config` command.
 */
export function configCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('config')
    .summary('print the full effective config of a run, preset or config file (JSON)')
    .description(
      'Print the full effective trainer config as JSON, every default filled in, with "$schema" first (the JSON Schema generated from the trainer\'s ' +
        'zod schema, shipped as @llmcp/trainer/config.schema.json): of a run (the config it records at its newest verified checkpoint, after every pivot), ' +
        'of a preset (ch33, ch34, ch39; a size tiny, small or medium on --corpus), or of a config file — with --set overrides applied, as llmcp train would ' +
        '(for a run: as llmcp pivot <run> --set … would make it). ' +
        'Save it, edit it, and train it with llmcp train <run-dir> --config <file>.\n\n' +
        'Exit status: 0 ok, 1 no checkpoint of the run verifies, 2 bad options, 3 not a run, preset or config file, or an invalid config.',
    )
    .argument('<run|preset|file>', 'run directory, preset name (ch33, ch34, ch39, tiny, small, medium) or config file')
    .option('--corpus <file|folder|bilingual>', 'a size preset: the corpus (a .txt file or folder, a JSON corpus with --split, or bilingual)')
    .option('--split <file>', 'the split manifest of a JSON corpus')
    .option('--set <key=value>', 'override one config key (repeatable; the value is JSON when it parses, else text)', collectAssignments)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp config runs/a                        # what the run trains with, after pivots
  $ llmcp config runs/a --set steps=4000       # what 'llmcp pivot runs/a --set steps=4000' would make it
  $ llmcp config ch33 > ch33.json && llmcp train runs/b --config ch33.json
  $ llmcp config tiny --corpus stories.txt --set steps=300
`,
    )
    .action(async (target: string, options: ConfigCommandOptions) => {
      setExit(await runConfig(ctx, target, options));
    });
}

/**
 * The `--size`, `--corpus`, `--split` and `--set` options of `llmcp train`.
 *
 * @returns fresh commander options.
 */
export function configOptions(): { readonly size: Option; readonly corpus: Option; readonly split: Option; readonly set: Option } {
  return {
    size: new Option('--size <name>', "model size preset on --corpus instead of --config: tiny, small (default with --corpus) or medium (the trainer app's sizes)"),
    corpus: new Option('--corpus <file|folder|bilingual>', 'the corpus of a --size run: a .txt file or folder of them, a JSON corpus with --split, or bilingual (the bundled reference corpus)'),
    split: new Option('--split <file>', 'the split manifest of a JSON --corpus'),
    set: new Option('--set <key=value>', 'override one config key, e.g. --set optimizer.learningRate=0.01 (repeatable; JSON when it parses, else text; an unknown key gets the nearest known key)').argParser(collectAssignments),
  };
}
