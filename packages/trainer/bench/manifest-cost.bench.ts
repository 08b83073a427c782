/**
 * What the provenance manifest costs a checkpoint save, at 252 MB
 * (`pnpm bench manifest`; target: ≤ 1%).
 *
 * The trainer's save (performSave, inline, on this thread: the thread that
 * streams the state through the format's atomic writer and its FNV-1a pass)
 * of a 252 MB state (10.5M parameters with both AdamW moments), publishing
 * `latest`, in three variants:
 *
 * - `none`: no manifest (the save before manifests);
 * - `unsigned`: the manifest, its shards hashed by the hash thread as they
 *   are written (read back from the page cache), the store entry in lineage/;
 * - `signed`: the same, signed with ECDSA P-256.
 *
 * Saves alternate none, unsigned, signed, then rotate the order, so a drift of
 * the machine's speed cancels; each save goes to a fresh run directory. Per
 * variant it reports the median wall time of the save (durationMs), the CPU
 * time of the writing thread (Linux schedstat of this thread) and of the whole
 * process, and the ratios to `none`; the minimum wall time too (the save the
 * machine's other work disturbed least), and the hash tail: how long the save
 * waits, after the state file is synced, for shards not hashed yet. The
 * hashing must overlap the write: the wall and writing-thread ratios are the
 * cost; the process CPU shows the SHA-256's own work, done on another
 * thread. On a machine with fewer free cores than the save's two threads,
 * that work competes with the writer and shows in the wall time.
 *
 * Run: `pnpm bench manifest [-- --repeats=N]` (or `node --conditions=@llmcp/source --import tsx packages/trainer/bench/manifest-cost.bench.ts [--repeats N]`).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performSave, type SaveRequest } from '../src/save.ts';
import { generateSigningKeyPair, signingKeyFromPem } from '../src/signing-key.ts';
import { WrittenShardHasher } from '../src/written-shards.ts';
import { fakeJob, fakeState } from '../test/helpers/fake-checkpoint.ts';

/** 10.5M parameters: 252 MB with both moments (the format bench's size). */
const DECODER = { vocabularySize: 5, modelWidth: 512, heads: 8, feedForwardWidth: 1600, layers: 3, maxPositions: 2, ropeBase: 10000, rmsEpsilon: 1e-6 };
type Variant = 'none' | 'unsigned' | 'signed';
const VARIANTS: readonly Variant[] = ['none', 'unsigned', 'signed'];

/** `--name value` or `--name=value` (run-bench passes only arguments that start with `--`, so use the second form there). */
function option(name: string): string | undefined {
  const eq = process.argv.find((a) => a.startsWith(`${name}=`));
  if (eq !== undefined) return eq.slice(name.length + 1);
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}

/** CPU milliseconds of this thread so far (Linux schedstat), or NaN. */
function threadCpuMs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return Number.NaN;
  }
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const repeats = Number(option('--repeats') ?? 8);
const state = fakeState(1000, DECODER);
const { state: _s, digest: _d, format: _f, ...draft } = fakeJob(1000, { bytes: 0, checksum: 'fnv1a64:0000000000000000' });
const key = signingKeyFromPem(generateSigningKeyPair('ecdsa-p256').privatePem, 'bench key');
const root = mkdtempSync(path.join(process.env.LLMCP_BENCH_DIR ?? tmpdir(), 'llmcp-manifest-bench-'));
const results = new Map<Variant, { wall: number[]; thread: number[]; cpu: number[]; tail: number[]; bytes: number }>(
  VARIANTS.map((v) => [v, { wall: [], thread: [], cpu: [], tail: [], bytes: 0 }]),
);
// The tail: how long the save waits, once the state file is written and synced, for the shards the hash thread has not hashed yet.
let tail = 0;
const digests = WrittenShardHasher.prototype.digests;
WrittenShardHasher.prototype.digests = async function timed(this: WrittenShardHasher) {
  const t = performance.now();
  try {
    return await digests.call(this);
  } finally {
    tail += performance.now() - t;
  }
};
const loadBefore = loadavg();
let serial = 0;

async function save(variant: Variant): Promise<void> {
  const runDir = path.join(root, `run-${serial++}`);
  const request: SaveRequest = {
    runDir,
    state,
    job: draft,
    slots: { latest: true, best: false, step: false },
    audit: null,
    retention: { keepSteps: 0, keepEvery: null },
    latestIsValid: true,
    bestIsValid: true,
    ...(variant === 'none' ? {} : { provenance: { lineage: { via: 'init' as const, parent: null }, key: variant === 'signed' ? key : null } }),
  };
  tail = 0;
  const t0 = threadCpuMs();
  const c0 = process.cpuUsage();
  const result = await performSave(request);
  const c = process.cpuUsage(c0);
  const r = results.get(variant) as NonNullable<ReturnType<typeof results.get>>;
  r.wall.push(result.durationMs);
  r.thread.push(threadCpuMs() - t0);
  r.cpu.push((c.user + c.system) / 1000);
  r.tail.push(tail);
  r.bytes = result.stateBytes;
  rmSync(runDir, { recursive: true, force: true });
}

try {
  await save('unsigned'); // warm-up: JIT, the hash thread's start, the page cache
  for (const r of results.values()) {
    r.wall.length = 0;
    r.thread.length = 0;
    r.cpu.length = 0;
    r.tail.length = 0;
  }
  for (let i = 0; i < repeats; i += 1) {
    for (let k = 0; k < VARIANTS.length; k += 1) await save(VARIANTS[(i + k) % VARIANTS.length] as Variant);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
const base = results.get('none') as NonNullable<ReturnType<typeof results.get>>;
console.log(`manifest cost of a checkpoint save: state.llmcp ${(base.bytes / 1e6).toFixed(1)} MB, latest only, inline saves, ${repeats} rounds alternating none/unsigned/signed; ${availableParallelism()} cores`);
console.log('variant     wall ms: median  ÷ none     min  ÷ none   writing thread cpu ms  ÷ none   process cpu ms  ÷ none   hash tail ms');
const ratio = (a: number, b: number): string => (a / b).toFixed(4).padStart(6);
for (const [v, r] of results) {
  const min = (xs: readonly number[]): number => Math.min(...xs);
  console.log(
    `${v.padEnd(10)} ${median(r.wall).toFixed(1).padStart(15)}  ${ratio(median(r.wall), median(base.wall))}  ${min(r.wall).toFixed(1).padStart(6)}  ${ratio(min(r.wall), min(base.wall))}  ${median(r.thread).toFixed(1).padStart(21)}  ${ratio(median(r.thread), median(base.thread))}  ${median(r.cpu).toFixed(1).padStart(14)}  ${ratio(median(r.cpu), median(base.cpu))}  ${median(r.tail).toFixed(1).padStart(12)}`,
  );
}
const pairs = (v: Variant): string => (results.get(v) as NonNullable<ReturnType<typeof results.get>>).wall.map((w, i) => (w / (base.wall[i] as number)).toFixed(3)).join(' ');
console.log(`per round wall ÷ none: unsigned ${pairs('unsigned')}; signed ${pairs('signed')}`);
console.log(`load average ${loadBefore.map((x) => x.toFixed(2)).join(' ')} → ${loadavg().map((x) => x.toFixed(2)).join(' ')} (target: ≤ 1% wall; other work on the machine widens the spread)`);
