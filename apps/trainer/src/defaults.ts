/**
 * The app's default run: the embedded story corpus, a byte-level BPE tokenizer
 * of 512 ids, and model sizes chosen so that `pnpm start` shows a falling loss
 * and improving samples within minutes on a small machine.
 */
import { fileURLToPath } from 'node:url';
import { bundledCorpusFiles } from '@llmcp/data/node';
import { SIZE_PRESETS, sizePresetConfigInput, type SizePresetName } from '@llmcp/trainer';

const corpusFile = (name: string): string => fileURLToPath(new URL(`../corpus/${name}`, import.meta.url));
const [bilingualCorpus, bilingualSplit] = bundledCorpusFiles('tiny-bilingual');

/** A data source of the trainer config. */
export type CorpusChoice =
  | { readonly kind: 'corpus'; readonly corpus: string; readonly split: string }
  | { readonly kind: 'text'; readonly path: string };

/** Embedded corpora. */
export const CORPORA = {
  default: { kind: 'corpus', corpus: corpusFile('stories.json'), split: corpusFile('stories-split.json') },
  // The reference's tiny bilingual corpus, as shipped once by @llmcp/data.
  bilingual: { kind: 'corpus', corpus: bilingualCorpus, split: bilingualSplit },
} as const satisfies Record<string, CorpusChoice>;

/** Model sizes (and the step budget that suits each): the trainer's size presets, shared with `llmcp train --size`. */
export const SIZES = SIZE_PRESETS;

/** A size name. */
export type SizeName = SizePresetName;

/**
 * The config input of an app run (validated later by `parseConfig`).
 *
 * @param options - corpus, size, steps, timing.
 * @returns a trainer config input.
 */
export function appConfigInput(options: { readonly corpus: CorpusChoice; readonly size: SizeName; readonly steps?: number; readonly timing: boolean }): unknown {
  return sizePresetConfigInput({ source: options.corpus, size: options.size, ...(options.steps === undefined ? {} : { steps: options.steps }), timing: options.timing });
}
