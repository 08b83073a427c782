/**
 * A synchronous FNV-1a + f64-screen hasher on a worker thread, for the
 * in-memory decoder (`internal/parallel-hash.ts`): `decodeCheckpoint` stays
 * synchronous, yet the serial checksum runs on another core while the calling
 * thread copies the records and validates.
 *
 * Bytes travel through a ring of slots in one shared WebAssembly memory; the
 * two threads coordinate through an Int32Array control block in the same
 * memory with `Atomics.wait`/`notify` only (the caller's event loop is busy
 * for the whole decode, so no messages: the worker is plain JavaScript
 * evaluated from a string, spinning on the ring's head index). The worker
 * reports its own failure in the control block; a worker that makes no
 * progress for {@link STALL_MS} is given up. Either way `finish()` returns
 * null and the decoder hashes in-thread instead — same result.
 *
 * The worker is started on first use (streams of 16 MiB and more)
 * and kept idle (unreferenced) for a few seconds for the next decode.
 */
import { Worker } from 'node:worker_threads';
import { scanKernelBytes } from '../internal/fnv1a64-scan-wasm.ts';
import type { ParallelScanHasher } from '../internal/parallel-hash.ts';

const PAGE = 65536;
const SLOT_COUNT = 8;
/** Byte offset of the control block (page 0; the kernel's result is at bytes 0..15). */
const CONTROL_OFFSET = 1024;
/** Control words: HEAD chunks queued, TAIL chunks hashed, STATE (0 starting, 1 running, -1 failed), HI, LO; per slot (from word 8): length, reset, flags. */
const HEAD = 0;
const TAIL = 1;
const STATE = 2;
const HI = 3;
const LO = 4;
const SLOT_WORDS = 8;
/** Ring geometry and threshold (tests shrink them to cross slot boundaries in small files). */
const tuning = {
  /** Bytes per slot (a multiple of 8: screened chunks keep element alignment). */
  slotBytes: 2 << 20,
  /** Streams shorter than this are hashed in-thread (a worker start costs tens of milliseconds). */
  minBytes: 16 << 20,
};
const DEFAULT_TUNING = { ...tuning };
/** A worker that hashes nothing for this long while work is queued is given up. */
const STALL_MS = 5000;
/** How long a finished worker waits for the next decode. */
const IDLE_MS = 5000;

const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { kernel, memory, offsets, failAfter } = workerData;
const slots = offsets.length;
const ctl = new Int32Array(memory.buffer, ${CONTROL_OFFSET}, ${SLOT_WORDS} + 3 * slots);
const fail = (e) => { Atomics.store(ctl, ${STATE}, -1); Atomics.notify(ctl, ${TAIL}); throw e; };
let scan;
try {
  scan = new WebAssembly.Instance(new WebAssembly.Module(kernel), { env: { memory } }).exports.scan;
} catch (e) { fail(e); }
const result = new DataView(memory.buffer, 0, 16);
let left = failAfter;
let tail = Atomics.load(ctl, ${TAIL});
let hi = 0;
let lo = 0;
Atomics.store(ctl, ${STATE}, 1);
for (;;) {
  while (Atomics.load(ctl, ${HEAD}) === tail) Atomics.wait(ctl, ${HEAD}, tail, 1000);
  const slot = tail % slots;
  const m = ${SLOT_WORDS} + 3 * slot;
  if (left !== null && --left < 0) fail(new Error('injected hash worker failure'));
  if (ctl[m + 1] === 1) { hi = 0xcbf29ce4; lo = 0x84222325; }
  scan(offsets[slot], ctl[m], hi, lo);
  lo = result.getUint32(0, true);
  hi = result.getUint32(4, true);
  ctl[m + 2] = result.getUint32(8, true);
  ctl[${HI}] = hi | 0;
  ctl[${LO}] = lo | 0;
  tail = (tail + 1) | 0;
  Atomics.store(ctl, ${TAIL}, tail);
  Atomics.notify(ctl, ${TAIL});
}
`;

/** The slice of the WebAssembly JS API used here, typed locally. */
interface SharedWasmApi {
  readonly Memory: new (descriptor: { initial: number; maximum: number; shared: true }) => { readonly buffer: ArrayBufferLike };
}

/** Test hook: the next worker started fails after this many chunks (null: never). */
let faultAfter: number | null = null;

/**
 * Test hook: ring slot size and the threshold below which the decoder hashes
 * in-thread (no argument: the defaults).
 * @param options - slot bytes (a multiple of 8) and minimum stream length.
 * @param options.slotBytes - bytes per slot.
 * @param options.minBytes - shortest stream hashed on the worker.
 */
export function tuneSyncWorkerForTesting(options: { slotBytes?: number; minBytes?: number } = {}): void {
  tuning.slotBytes = options.slotBytes ?? DEFAULT_TUNING.slotBytes;
  tuning.minBytes = options.minBytes ?? DEFAULT_TUNING.minBytes;
}

/**
 * Test hook: the next synchronous hash worker started (a parked one is not
 * reused) fails after hashing `chunks` chunks.
 * @param chunks - chunks hashed before the failure, or null to clear.
 */
export function injectSyncWorkerFaultForTesting(chunks: number | null): void {
  faultAfter = chunks;
}

/** A worker with its ring; serves one stream at a time. */
class SyncEngine {
  readonly worker: Worker;
  readonly slots: Uint8Array[];
  readonly control: Int32Array;
  readonly slotBytes: number;
  broken = false;

  constructor(wasm: SharedWasmApi, slotBytes: number) {
    this.slotBytes = slotBytes;
    const slotPages = Math.ceil(slotBytes / PAGE);
    const pages = 1 + slotPages * SLOT_COUNT;
    const memory = new wasm.Memory({ initial: pages, maximum: pages, shared: true });
    const offsets = Array.from({ length: SLOT_COUNT }, (_, i) => PAGE * (1 + i * slotPages));
    this.slots = offsets.map((offset) => new Uint8Array(memory.buffer, offset, slotBytes));
    this.control = new Int32Array(memory.buffer, CONTROL_OFFSET, SLOT_WORDS + 3 * SLOT_COUNT);
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { kernel: scanKernelBytes(pages), memory, offsets, failAfter: faultAfter } });
    faultAfter = null;
    this.worker.unref();
    this.worker.on('error', () => {
      this.broken = true;
    });
    this.worker.on('exit', () => {
      this.broken = true;
    });
  }
}

let idle: { engine: SyncEngine; timer: ReturnType<typeof setTimeout> } | null = null;

function park(engine: SyncEngine): void {
  if (engine.broken || idle !== null) {
    void engine.worker.terminate();
    return;
  }
  const timer = setTimeout(() => {
    if (idle?.engine === engine) idle = null;
    void engine.worker.terminate();
  }, IDLE_MS);
  timer.unref();
  idle = { engine, timer };
}

/** One stream on a {@link SyncEngine}. */
class SyncWorkerHasher implements ParallelScanHasher {
  readonly #engine: SyncEngine;
  readonly #control: Int32Array;
  #head: number;
  #first = true;
  #failed = false;
  readonly #slotTags: (number | undefined)[] = [];
  readonly #flags: number[] = [];

  constructor(engine: SyncEngine) {
    this.#engine = engine;
    this.#control = engine.control;
    this.#head = Atomics.load(this.#control, HEAD);
  }

  /** Waits until at most `pending` chunks are unhashed; false when the worker failed or stalled. */
  #waitUntil(pending: number): boolean {
    let tail = Atomics.load(this.#control, TAIL);
    let since = performance.now();
    while (((this.#head - tail) | 0) > pending) {
      if (Atomics.load(this.#control, STATE) === -1 || this.#engine.broken) return false;
      Atomics.wait(this.#control, TAIL, tail, 100);
      const now = Atomics.load(this.#control, TAIL);
      if (now !== tail) {
        tail = now;
        since = performance.now();
      } else if (performance.now() - since > STALL_MS) return false;
    }
    return true;
  }

  #harvest(slot: number): void {
    const tag = this.#slotTags[slot];
    if (tag !== undefined) this.#flags[tag] = (this.#flags[tag] ?? 0) | (this.#control[SLOT_WORDS + 3 * slot + 2] as number);
    this.#slotTags[slot] = undefined;
  }

  #fail(): void {
    this.#failed = true;
    this.#engine.broken = true;
    void this.#engine.worker.terminate();
  }

  push(bytes: Uint8Array, tag?: number): void {
    for (let done = 0; done < bytes.length && !this.#failed; ) {
      if (!this.#waitUntil(SLOT_COUNT - 1)) {
        this.#fail();
        return;
      }
      const slot = ((this.#head % SLOT_COUNT) + SLOT_COUNT) % SLOT_COUNT;
      this.#harvest(slot);
      const n = Math.min(this.#engine.slotBytes, bytes.length - done);
      (this.#engine.slots[slot] as Uint8Array).set(bytes.subarray(done, done + n));
      const m = SLOT_WORDS + 3 * slot;
      this.#control[m] = n;
      this.#control[m + 1] = this.#first ? 1 : 0;
      this.#first = false;
      this.#slotTags[slot] = tag;
      this.#head = (this.#head + 1) | 0;
      Atomics.store(this.#control, HEAD, this.#head);
      Atomics.notify(this.#control, HEAD);
      done += n;
    }
  }

  finish(): { readonly checksum: bigint; readonly flags: (tag: number) => number } | null {
    if (this.#failed || !this.#waitUntil(0)) {
      if (!this.#failed) this.#fail();
      return null;
    }
    for (let slot = 0; slot < SLOT_COUNT; slot++) this.#harvest(slot);
    const hi = (this.#control[HI] as number) >>> 0;
    const lo = (this.#control[LO] as number) >>> 0;
    const checksum = this.#first ? 0xcbf29ce484222325n : (BigInt(hi) << 32n) | BigInt(lo);
    park(this.#engine);
    const flags = this.#flags;
    return { checksum, flags: (t) => flags[t] ?? 0 };
  }
}

/**
 * A synchronous worker hasher for a stream of `byteLength` bytes, or null
 * (short stream, no worker threads or shared WebAssembly memory).
 * @param byteLength - the stream's length.
 * @returns the hasher or null.
 */
export function startSyncWorkerHasher(byteLength: number): ParallelScanHasher | null {
  if (byteLength < tuning.minBytes) return null;
  const wasm = (globalThis as { WebAssembly?: SharedWasmApi }).WebAssembly;
  if (wasm === undefined || typeof SharedArrayBuffer !== 'function') return null;
  let engine: SyncEngine;
  if (idle !== null && !idle.engine.broken && faultAfter === null && idle.engine.slotBytes === tuning.slotBytes) {
    engine = idle.engine;
    clearTimeout(idle.timer);
    idle = null;
  } else {
    try {
      engine = new SyncEngine(wasm, tuning.slotBytes);
    } catch {
      return null;
    }
  }
  return new SyncWorkerHasher(engine);
}
