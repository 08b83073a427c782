/**
 * Tokenizer throughput against a peer: llmcp's byte-level BPE encoder vs
 * `gpt-tokenizer` (o200k_base and cl100k_base, pure JavaScript) on the same
 * text, plus BPE training time on 4 MB with 3000 merges.
 *
 * What is compared: MB/s of UTF-8 input per second of encoding the app's
 * story corpus (apps/trainer/corpus/stories.json, every document's text, one
 * `encode(text)` call per document), each tokenizer with its own vocabulary:
 * llmcp trained on that corpus with `--merges` merges (default 3000; no
 * pre-splitting, as the spec requires) and with the app's default 254 merges,
 * gpt-tokenizer with its 200k / 100k vocabularies (regex pre-splitting plus a
 * chunk cache). Different vocabularies give different token counts, which
 * are printed too. Rounds are interleaved (llmcp, o200k, cl100k, llmcp, …);
 * each figure is the median of `--rounds` (default 7), and the ratio is the
 * median of the per-round ratios. Both libraries keep caches (gpt-tokenizer:
 * chunk → tokens; llmcp: which token pairs are compatible), so the first,
 * cold pass over the corpus is printed on its own.
 *
 * Training: `--train-mb` MB (default 4) of the story corpus, documents
 * repeated in order (never joined), 3000 merges; wall and CPU seconds.
 *
 * `gpt-tokenizer` is a devDependency of `@llmcp/tools` (this package stays
 * free of it), so it is loaded from `tools/node_modules` at run time.
 *
 * Run: `pnpm bench tokenizer` (with `bench/bpe.bench.ts`), `pnpm bench peer`, or
 * `pnpm exec tsx --conditions=@llmcp/source packages/tokenizer/bench/peer.bench.ts`.
 * Options: `--merges=<n>` (default 3000), `--rounds=<n>` (default 7), `--repeat=<n>`
 * passes over the corpus per round (default 4), `--train-mb=<size>` (default 4).
 */
import { trainBpe } from '../src/bpe-training.ts';

type CpuUsage = { user: number; system: number };
const nodeProcess = (globalThis as { process?: { argv: readonly string[]; cpuUsage(previous?: CpuUsage): CpuUsage } }).process;

function option(name: string, fallback: number): number {
  const arg = (nodeProcess?.argv ?? []).find((a) => a.startsWith(`--${name}=`));
  return arg === undefined ? fallback : Number(arg.slice(name.length + 3));
}

type Encode = (text: string) => number[];
async function peerEncoder(encoding: string): Promise<Encode> {
  const url = new URL(`../../../tools/node_modules/gpt-tokenizer/esm/encoding/${encoding}.js`, import.meta.url);
  return ((await import(url.href)) as { encode: Encode }).encode;
}
const encodeO200k = await peerEncoder('o200k_base');
const encodeCl100k = await peerEncoder('cl100k_base');

function median(values: readonly number[]): number {
  const s = [...values].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

const merges = option('merges', 3000);
const rounds = option('rounds', 7);
const repeat = option('repeat', 4);
const trainMb = option('train-mb', 4);

const storiesUrl = new URL('../../../apps/trainer/corpus/stories.json', import.meta.url).href;
const stories = ((await import(storiesUrl, { with: { type: 'json' } })) as { default: { text: string }[] }).default;
const texts = stories.map((d) => d.text);
const enc = new TextEncoder();
const bytes = texts.map((t) => enc.encode(t));
const totalBytes = bytes.reduce((n, b) => n + b.length, 0);

// The llmcp tokenizer: trained on the same corpus (all documents) with a realistic merge count.
const trainT0 = performance.now();
const trained = trainBpe(bytes, merges);
const storiesTrainS = (performance.now() - trainT0) / 1000;
const tok = trained.tokenizer;
const appTok = trainBpe(bytes, 254).tokenizer;
console.log(
  `tokenizer.corpus: stories.json, ${texts.length} documents, ${(totalBytes / 1e6).toFixed(3)} MB; llmcp trained with ${trained.learnedMerges} merges in ${storiesTrainS.toFixed(2)} s (vocabulary ${tok.vocabularySize})`,
);

interface Contender {
  readonly name: string;
  readonly encode: (text: string) => ArrayLike<number>;
}
const contenders: Contender[] = [
  { name: `llmcp bpe (${tok.vocabularySize} ids)`, encode: (t) => tok.encode(t) },
  { name: `llmcp bpe (${appTok.vocabularySize} ids, app)`, encode: (t) => appTok.encode(t) },
  { name: 'gpt-tokenizer o200k_base', encode: (t) => encodeO200k(t) },
  { name: 'gpt-tokenizer cl100k_base', encode: (t) => encodeCl100k(t) },
];

function pass(c: Contender): { seconds: number; tokens: number } {
  let tokens = 0;
  const t0 = performance.now();
  for (let k = 0; k < repeat; k++) for (const t of texts) tokens += c.encode(t).length;
  return { seconds: (performance.now() - t0) / 1000, tokens: tokens / repeat };
}

// Cold pass (each library's caches empty, code not yet optimized), then the warm rounds.
const cold = contenders.map((c) => {
  const t0 = performance.now();
  for (const t of texts) c.encode(t);
  return totalBytes / 1e6 / ((performance.now() - t0) / 1000);
});
console.log(`tokenizer.encode.cold: ${contenders.map((c, i) => `${c.name} ${(cold[i] as number).toFixed(2)} MB/s`).join(', ')}`);
for (const c of contenders) pass(c);
const mbps: number[][] = contenders.map(() => []);
const tokenCounts: number[] = contenders.map(() => 0);
for (let r = 0; r < rounds; r++) {
  contenders.forEach((c, i) => {
    const { seconds, tokens } = pass(c);
    (mbps[i] as number[]).push((totalBytes * repeat) / 1e6 / seconds);
    tokenCounts[i] = tokens;
  });
}
const LLMCP = 2; // contenders[0] and [1] are llmcp's
contenders.forEach((c, i) => {
  const per = mbps[i] as number[];
  const ratio = (l: number): string => `llmcp ${(contenders[l] as Contender).name.replace('llmcp bpe ', '')}/this = ${median((mbps[l] as number[]).map((v, r) => v / (per[r] as number))).toFixed(2)}x`;
  console.log(
    `tokenizer.encode: ${c.name.padEnd(32)} ${median(per).toFixed(2).padStart(7)} MB/s (min ${Math.min(...per).toFixed(2)}, max ${Math.max(...per).toFixed(2)}; ${tokenCounts[i]} tokens, ${(totalBytes / (tokenCounts[i] as number)).toFixed(2)} bytes/token)${i < LLMCP ? '' : `  ${ratio(0)}, ${ratio(1)}`}`,
  );
});

// Training: 4 MB of the story corpus (repeated documents, never joined) with 3000 merges.
const trainDocs: Uint8Array[] = [];
for (let n = 0, k = 0; n < trainMb * 1e6; k++) {
  const b = bytes[k % bytes.length] as Uint8Array;
  trainDocs.push(b);
  n += b.length;
}
const trainBytes = trainDocs.reduce((n, b) => n + b.length, 0);
const c0 = nodeProcess?.cpuUsage() ?? { user: 0, system: 0 };
const t0 = performance.now();
const big = trainBpe(trainDocs, 3000);
const wall = (performance.now() - t0) / 1000;
const c = nodeProcess?.cpuUsage(c0) ?? { user: 0, system: 0 };
console.log(
  `tokenizer.train: stories x${(trainBytes / totalBytes).toFixed(1)}, ${(trainBytes / 1e6).toFixed(2)} MB, ${trainDocs.length} documents, ${big.learnedMerges} merges in ${wall.toFixed(2)} s (cpu ${((c.user + c.system) / 1e6).toFixed(2)} s)`,
);
