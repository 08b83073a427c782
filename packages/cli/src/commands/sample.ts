/**
 * `llmcp sample <checkpoint>`: generation with the ch36 rules (../../../../docs/spec/training.md
 * §9: ranking with ties to the smaller id, temperature/top-k weights, Kahan
 * normalization, one 53-bit draw per token, interval selection in id order),
 * with the decoder's key/value cache unless `--no-cache` (identical tokens
 * and RNG state either way), continuing the checkpoint's stored sampling RNG
 * state unless `--seed` gives a new one; past the context window by sliding
 * it (unless `--no-slide`); a run's own sampling settings as defaults.
 */
import { Command } from 'commander';
import { hexBytes, SplitMix64, u64Hex } from '@llmcp/format';
import type { SamplingMode } from '@llmcp/model';
import { tokenizerFromState } from '@llmcp/tokenizer';
import type { SetExit } from '../exit-codes.ts';
import { colorsFor, type CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { ERROR_SCHEMA_ID } from '../error-report.ts';
import { parseIdList, parseNonNegativeNumber, parsePositiveInteger, parseU64 } from '../internal/arguments.ts';
import { resolveCheckpoint } from '../internal/checkpoint-address.ts';

/** Identifier of the JSON document (`schema` member). */
export const SAMPLE_SCHEMA_ID = 'llmcp-sample/1';

/** Options of `llmcp sample`. */
export interface SampleOptions {
  readonly prompt?: string;
  readonly promptIds?: number[];
  /** 0 = greedy. */
  readonly temperature?: number;
  readonly topK?: number;
  readonly maxTokens?: number;
  readonly seed?: bigint;
  readonly count?: number;
  readonly json?: boolean;
  /** false with `--no-cache`: recompute the whole prefix for every token. */
  readonly cache?: boolean;
  /** `--ids`: print the new token ids instead of the text. */
  readonly ids?: boolean;
  /** false with `--no-slide`: stop at the context limit (the ch36 rule) instead of sliding the window. */
  readonly slide?: boolean;
  /** A run's newest verified checkpoint instead of its best. */
  readonly latest?: boolean;
}

/** One generated sample in the JSON document. */
export interface SampleJson {
  readonly promptTokens: readonly number[];
  readonly tokens: readonly number[];
  /** UTF-8 text of the new tokens (a final EOS dropped), or null when not valid UTF-8. */
  readonly text: string | null;
  /** Hex of the new tokens' bytes. */
  readonly bytesHex: string;
  readonly stopReason: string;
}

/**
 * Runs `llmcp sample`.
 *
 * @param ctx - the command context.
 * @param file - a checkpoint file, run directory (its best slot), slot directory or `run:slot`.
 * @param options - prompt, mode, limits, seed, count, output; unset sampling settings come from the run's config when the checkpoint has a job.
 * @returns 0.
 * @throws CliError for an invalid checkpoint, a bad prompt, or sampling options the model rejects.
 */
export async function runSample(ctx: CliContext, file: string, options: SampleOptions): Promise<number> {
  if (options.prompt !== undefined && options.promptIds !== undefined) {
    throw new CliError('CLI_USAGE', 'give either --prompt or --prompt-ids, not both', { option: '--prompt-ids' });
  }
  const source = await resolveCheckpoint(ctx, file, options.latest === true ? { latest: true } : {});
  const { checkpoint } = source;
  // The run's own sampling settings (its config's sampling section) are the defaults of what is not given.
  const recorded = source.job?.config.sampling ?? null;
  const tokenizer = tokenizerFromState(checkpoint.tokenizer);
  const V = checkpoint.decoder.vocabularySize;
  const P = checkpoint.decoder.maxPositions;
  let prompt: number[];
  if (options.promptIds !== undefined) {
    prompt = options.promptIds;
    const bad = prompt.find((id) => id >= V);
    if (bad !== undefined) throw new CliError('CLI_USAGE', `--prompt-ids: token id ${bad} is outside the vocabulary [0, ${V})`, { option: '--prompt-ids' });
  } else {
    try {
      prompt = Array.from(tokenizer.encode(options.prompt ?? recorded?.prompt ?? ''));
    } catch (e) {
      throw new CliError('CLI_SAMPLE_FAILED', `--prompt cannot be encoded by the checkpoint's ${tokenizer.kind} tokenizer: ${(e as Error).message}`, {
        option: '--prompt',
        hint: 'use --prompt-ids to give token ids directly',
        cause: e,
      });
    }
    if (prompt.length === 0) {
      if (tokenizer.bosId === null) {
        throw new CliError('CLI_SAMPLE_FAILED', 'the prompt is empty and this literal tokenizer has no begin-of-document token to start from', {
          option: '--prompt',
          hint: 'give a --prompt or --prompt-ids',
        });
      }
      prompt = [tokenizer.bosId];
    }
  }
  if (prompt.length > P) prompt = prompt.slice(prompt.length - P);
  const temperature = options.temperature ?? recorded?.temperature ?? 1;
  const topK = options.topK ?? Math.min(recorded?.topK ?? V, V);
  if (topK > V) throw new CliError('CLI_USAGE', `--top-k ${topK} exceeds the vocabulary size ${V}`, { option: '--top-k' });
  const mode: SamplingMode = temperature === 0 ? { kind: 'greedy' } : { kind: 'temperature', temperature, topK };
  const rng = new SplitMix64(options.seed ?? checkpoint.samplingRngState);
  const rngState = rng.state;
  const { Decoder, generate, isModelError } = await import('@llmcp/model');
  const model = Decoder.fromCheckpoint(checkpoint);
  // One cache for every sample (reset by generate, its storage reused).
  const cache = options.cache === false ? false : model.createKvCache();
  const eos = tokenizer.eosId;
  const samples: SampleJson[] = [];
  /** The new tokens' bytes of each sample (what `bytesHex` spells). */
  const sampleBytes: Uint8Array[] = [];
  for (let i = 0; i < (options.count ?? 1); i++) {
    let out;
    try {
      out = generate(model, {
        prompt,
        mode,
        rng,
        maxNewTokens: options.maxTokens ?? recorded?.maxNewTokens ?? 32,
        cache,
        contextOverflow: options.slide === false ? 'stop' : 'slide',
        ...(eos === null ? {} : { endOfSequence: eos }),
      });
    } catch (e) {
      if (!isModelError(e)) throw e;
      throw new CliError('CLI_SAMPLE_FAILED', `sampling failed: ${e.code}: ${e.message}`, { causeCode: e.code, cause: e });
    }
    const content = out.stopReason === 'end-of-sequence' ? out.tokens.slice(0, -1) : out.tokens;
    let bytes: Uint8Array = new Uint8Array(0);
    let text: string | null = null;
    try {
      bytes = tokenizer.decode(content.filter((id) => id !== tokenizer.bosId));
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      text = null;
    }
    samples.push({ promptTokens: prompt, tokens: out.tokens, text, bytesHex: hexBytes(bytes, ''), stopReason: out.stopReason });
    sampleBytes.push(bytes);
  }
  if (options.json === true) {
    const doc = {
      schema: SAMPLE_SCHEMA_ID,
      checkpoint: source.description,
      settings: recorded === null ? 'options' : 'run config',
      contextOverflow: options.slide === false ? 'stop' : 'slide',
      mode: mode.kind === 'greedy' ? { kind: 'greedy' } : mode,
      rngState: u64Hex(rngState),
      rngStateAfter: u64Hex(rng.state),
      seeded: options.seed !== undefined,
      cached: cache !== false,
      samples,
    };
    ctx.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    return EXIT_CODES.OK;
  }
  // Plain text on stdout (the prompt and what followed it; --ids: the new token ids), what was done on stderr.
  const lenient = new TextDecoder('utf-8');
  let promptBytes: Uint8Array;
  try {
    promptBytes = tokenizer.decode(prompt.filter((id) => id !== tokenizer.bosId));
  } catch {
    promptBytes = new Uint8Array(0);
  }
  samples.forEach((s, k) => {
    if (options.ids === true) ctx.stdout.write(`${s.tokens.join(',')}\n`);
    else ctx.stdout.write(`${lenient.decode(promptBytes)}${s.text ?? lenient.decode(sampleBytes[k] as Uint8Array)}\n`);
  });
  const c = colorsFor(ctx.stderr, ctx.env);
  const how = mode.kind === 'greedy' ? 'greedy' : `temperature ${temperature}, top-k ${topK}`;
  const stops = [...new Set(samples.map((s) => s.stopReason))].join(', ');
  ctx.stderr.write(
    c.dim(
      `${source.description}: ${how}${recorded === null ? '' : " (defaults from the run's config)"}; ${cache === false ? 'uncached (--no-cache)' : 'key/value cache'}; ` +
        `${options.slide === false ? 'stops at' : 'slides past'} the ${P}-token context; stopped: ${stops}; sampling RNG ${u64Hex(rngState)} (${options.seed === undefined ? 'from the checkpoint' : '--seed'}) → ${u64Hex(rng.state)}\n`,
    ),
  );
  return EXIT_CODES.OK;
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `sample` command.
 */
export function sampleCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('sample')
    .summary('generate text from a checkpoint (ch36 sampling rules)')
    .description(
      'Generate from a checkpoint with the ch36 rules (training.md §9): temperature/top-k weights with Kahan normalization, one 53-bit ' +
        'SplitMix64 draw per token, interval selection in token-id order; generation stops at end-of-document, ' +
        '--max-tokens or the context limit. Generation uses a key/value cache (the prompt is run once, then each new token is ' +
        'one single-row step; the logits have the same bits as recomputing the whole prefix); --no-cache recomputes the whole ' +
        'prefix for every token instead, for comparison — tokens, text and RNG state are identical. The draws continue the checkpoint\'s stored sampling RNG state unless --seed is given ' +
        '(the seed is the raw SplitMix64 state). An empty prompt starts from the begin-of-document token (BPE).\n\n' +
        'Generation goes past the context window (maxPositions) by sliding it: once the text is longer than the window, each new token ' +
        'is predicted from the last maxPositions tokens only (with the cache, the window is re-fed, since every rotary position moves; ' +
        'the logits equal the uncached path on the same window, bit for bit). --no-slide stops at the context limit instead (the ch36 rule).\n\n' +
        'The checkpoint is a file, a run directory (its best slot; --latest: its newest verified checkpoint), a slot directory or run:slot. ' +
        "When it belongs to a run, the run's own sampling settings (its config's sampling prompt, temperature, top-k and maxNewTokens) " +
        'are the defaults of the options not given.\n\n' +
        'Output: the prompt and its continuation as plain text, one sample a line (--ids: the new token ids); what was done ' +
        '(mode, stop reason, RNG states) goes to stderr; --json prints everything as one document.\n\n' +
        'Exit status: 0 ok, 2 bad options, 3 invalid checkpoint or prompt.',
    )
    .argument('<checkpoint>', 'checkpoint file (.llmcp), run directory (its best slot), slot directory, or run:slot (runs/a:step_000600)')
    .option('--prompt <text>', 'prompt text, encoded by the checkpoint\'s tokenizer (default: the run\'s sampling prompt, else empty)')
    .option('--prompt-ids <ids>', 'prompt as comma-separated token ids, e.g. 0,4', parseIdList)
    .option('--temperature <t>', 'temperature > 0, or 0 for greedy (default: the run\'s, else 1)', parseNonNegativeNumber)
    .option('--top-k <k>', 'keep the k best-ranked tokens (default: the run\'s, else the whole vocabulary)', parsePositiveInteger)
    .option('--max-tokens <n>', 'stop after n new tokens (default: the run\'s maxNewTokens, else 32)', parsePositiveInteger)
    .option('--seed <u64>', 'start the sampling RNG from this raw state instead of the checkpoint\'s (decimal or 0x hex)', parseU64)
    .option('--count <n>', 'number of samples (the RNG stream continues between them)', parsePositiveInteger, 1)
    .option('--no-cache', 'recompute the whole prefix for every token instead of using the key/value cache (same output, slower)')
    .option('--no-slide', 'stop at the context limit (the ch36 rule) instead of sliding the context window')
    .option('--ids', 'print the new token ids (comma-separated, one sample a line) instead of the text')
    .option('--latest', "a run's newest verified checkpoint (the one a resume would use) instead of its best slot")
    .option('--json', `print a JSON document (schema "${SAMPLE_SCHEMA_ID}"; a failure: "${ERROR_SCHEMA_ID}" on stdout)`)
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp sample runs/a --prompt "Once upon a time" --max-tokens 80      # the best slot, the run's temperature and top-k
  $ llmcp sample runs/a:step_000600 --max-tokens 500                     # slides past the context window
  $ llmcp sample runs/a --ids --temperature 0                            # greedy, token ids
  $ llmcp sample state.llmcp --prompt-ids 0 --temperature 1 --top-k 3 --max-tokens 4
  $ llmcp sample state.llmcp --prompt "The" --temperature 0            # greedy, no draws
  $ llmcp sample state.llmcp --prompt "The" --seed 42 --count 3 --json
  $ llmcp sample state.llmcp --prompt "The" --seed 42 --no-cache      # uncached: same tokens, slower
`,
    )
    .action(async (file: string, options: SampleOptions) => {
      setExit(await runSample(ctx, file, options));
    });
}
