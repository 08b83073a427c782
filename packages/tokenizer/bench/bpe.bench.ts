/**
 * BPE benchmarks: training on a few MB of deterministic pseudo-text with a
 * few thousand merges, then encode and decode throughput.
 *
 * Run: `pnpm exec tsx --conditions=@llmcp/source packages/tokenizer/bench/bpe.bench.ts`
 * (or through `pnpm bench`). Options: `--mb=<size>` (default 4), `--merges=<n>` (default 3000).
 */
import { SplitMix64 } from '@llmcp/format';
import { trainBpe } from '../src/bpe-training.ts';

function option(name: string, fallback: number): number {
  const argv = (globalThis as { process?: { argv: readonly string[] } }).process?.argv ?? [];
  const arg = argv.find((a) => a.startsWith(`--${name}=`));
  return arg === undefined ? fallback : Number(arg.slice(name.length + 3));
}

const SYLLABLES = [
  'ka', 'lo', 'mi', 'ren', 'tor', 'sa', 'vel', 'du', 'pre', 'ost', 'an', 'ith', 'qu', 'el', 'ro', 'ne', 'ta', 'zu', 'ch', 'er',
  'ра', 'ско', 'ли', 'то', 'ве', 'ни', 'ка', 'про', 'ст', 'ой', 'же', 'ду',
];

/** Deterministic pseudo-text: a Zipf-like draw from 6000 pseudo-words, sentences, paragraphs. */
function makeText(bytes: number, seed: bigint): Uint8Array[] {
  const rng = new SplitMix64(seed);
  const words: string[] = [];
  for (let i = 0; i < 6000; i++) {
    const n = 1 + rng.nextBelow(4);
    let w = '';
    for (let k = 0; k < n; k++) w += SYLLABLES[rng.nextBelow(SYLLABLES.length)];
    words.push(w);
  }
  const enc = new TextEncoder();
  const docs: Uint8Array[] = [];
  let total = 0;
  while (total < bytes) {
    let doc = '';
    const sentences = 3 + rng.nextBelow(12);
    for (let s = 0; s < sentences; s++) {
      const length = 4 + rng.nextBelow(14);
      const parts: string[] = [];
      for (let k = 0; k < length; k++) parts.push(words[Math.floor(words.length * rng.nextUnit() ** 3)] as string);
      const sentence = parts.join(' ');
      doc += `${sentence.charAt(0).toUpperCase()}${sentence.slice(1)}${rng.nextBelow(5) === 0 ? ',' : '.'} `;
    }
    const b = enc.encode(doc);
    docs.push(b);
    total += b.length;
  }
  return docs;
}

type CpuUsage = { user: number; system: number };
const nodeProcess = (globalThis as { process?: { cpuUsage(previous?: CpuUsage): CpuUsage } }).process;

/** Runs `fn`, returning wall and CPU milliseconds (CPU time is steadier on a shared machine). */
function time<T>(fn: () => T): { value: T; wallMs: number; cpuMs: number } {
  const c0 = nodeProcess?.cpuUsage();
  const t0 = performance.now();
  const value = fn();
  const wallMs = performance.now() - t0;
  const c = c0 === undefined ? undefined : nodeProcess?.cpuUsage(c0);
  return { value, wallMs, cpuMs: c === undefined ? wallMs : (c.user + c.system) / 1000 };
}

function mbPerSecond(bytes: number, ms: number): string {
  return ((bytes / 1e6) / (ms / 1000)).toFixed(1);
}

const sizeMb = option('mb', 4);
const requested = option('merges', 3000);
const docs = makeText(sizeMb * 1e6, 2024n);
const totalBytes = docs.reduce((n, d) => n + d.length, 0);

const training = time(() => trainBpe(docs, requested));
const result = training.value;
console.log(
  `bpe.train: ${(totalBytes / 1e6).toFixed(2)} MB, ${docs.length} documents, ${result.learnedMerges} merges in ${(training.wallMs / 1000).toFixed(2)} s (cpu ${(training.cpuMs / 1000).toFixed(2)} s)`,
);

const tok = result.tokenizer;
const joined = new Uint8Array(totalBytes);
let o = 0;
for (const d of docs) {
  joined.set(d, o);
  o += d.length;
}
// Warm up, then time encoding of the whole text as one input and as documents.
tok.encode(joined.subarray(0, 100_000));
const whole = time(() => tok.encode(joined));
const ids = whole.value;
console.log(
  `bpe.encode: ${mbPerSecond(totalBytes, whole.wallMs)} MB/s (cpu ${mbPerSecond(totalBytes, whole.cpuMs)} MB/s; one ${(totalBytes / 1e6).toFixed(2)} MB input, ${ids.length} tokens, ${(totalBytes / ids.length).toFixed(2)} bytes/token)`,
);
const perDocument = time(() => {
  let n = 0;
  for (const d of docs) n += tok.encodeDocument(d).length;
  return n;
});
console.log(`bpe.encodeDocument: ${mbPerSecond(totalBytes, perDocument.wallMs)} MB/s (cpu ${mbPerSecond(totalBytes, perDocument.cpuMs)} MB/s; ${docs.length} documents, ${perDocument.value} tokens)`);
// Near-linear check: CPU time per byte on 1/8 of the input vs the whole input.
const eighth = time(() => tok.encode(joined.subarray(0, Math.floor(totalBytes / 8))));
console.log(`bpe.encode.scaling: ${(whole.cpuMs / eighth.cpuMs).toFixed(2)}x cpu time for 8x input`);
const decoding = time(() => tok.decode(ids));
if (decoding.value.length !== totalBytes) throw new Error('decode did not round-trip');
console.log(`bpe.decode: ${mbPerSecond(totalBytes, decoding.wallMs)} MB/s (cpu ${mbPerSecond(totalBytes, decoding.cpuMs)} MB/s)`);
