/**
 * FNV-1a on a worker thread for the streaming saver and loader: the serial
 * checksum runs on a second core while the main thread validates the state
 * and issues the writes (save), or copies and validates what it reads (load).
 *
 * Bytes travel through a ring of slots inside one *shared* WebAssembly
 * memory: the main thread copies a chunk into a free slot (the only copy),
 * the worker runs the fused FNV + f64-screening kernel (a variant importing
 * that memory, `fnv1a64-scan-wasm.ts`) directly on the slot, in order, and
 * hands the slot back with the chunk's screen flags (meaningful for chunks
 * pushed with a tag: an f64 record's bytes from an element boundary; the
 * flags are OR-ed per tag). Memory is fixed
 * (slots × slot size), whatever the file size. The worker is plain
 * JavaScript evaluated from a string, so it runs the same from `src/` under
 * tests and from `dist/` when published.
 *
 * Starting a worker costs tens of milliseconds, so a finished worker is kept
 * idle (unreferenced, it never keeps the process alive) for a few seconds and
 * reused by the next save; one idle worker at most.
 */
import { Worker } from 'node:worker_threads';
import { scanKernelBytes } from '../internal/fnv1a64-scan-wasm.ts';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { kernel, memory } = workerData;
let failAfter = workerData.failAfter;
const instance = new WebAssembly.Instance(new WebAssembly.Module(kernel), { env: { memory } });
const scan = instance.exports.scan;
const result = new DataView(memory.buffer, 0, 16);
let hi = 0xcbf29ce4;
let lo = 0x84222325;
parentPort.on('message', (m) => {
  if (m.digest) {
    parentPort.postMessage({ hi, lo });
    hi = 0xcbf29ce4;
    lo = 0x84222325;
    return;
  }
  if (failAfter !== null && --failAfter < 0) throw new Error('injected hash worker failure');
  scan(m.offset, m.length, hi, lo);
  lo = result.getUint32(0, true);
  hi = result.getUint32(4, true);
  parentPort.postMessage({ slot: m.slot, flags: result.getUint32(8, true) });
});
`;

/** The slice of the WebAssembly JS API used here, typed locally (compiles without the DOM library). */
interface SharedWasmApi {
  readonly Memory: new (descriptor: { initial: number; maximum: number; shared: true }) => { readonly buffer: ArrayBufferLike };
}

/** A message from the worker: a slot hashed (with its screen flags), or the digest. */
interface WorkerReply {
  readonly slot?: number;
  readonly flags?: number;
  readonly hi?: number;
  readonly lo?: number;
}

/** Test hook state: the next worker started fails after this many chunks (null: never). */
let faultAfter: number | null = null;

/**
 * Test hook: the next hash worker started (a parked one is not reused) throws
 * after hashing `chunks` chunks, as a crashing worker would.
 * @param chunks - chunks hashed before the failure, or null to clear.
 */
export function injectWorkerFaultForTesting(chunks: number | null): void {
  faultAfter = chunks;
}

const PAGE = 65536;
/** Default ring: 12 slots of 4 MiB (48 MiB: enough to keep the worker busy while the state is validated). */
const SLOT_BYTES = 4 << 20;
const SLOT_COUNT = 12;
/** How long a finished worker waits for the next save. */
const IDLE_MS = 5000;

/** A worker with its shared ring; serves one hash stream at a time. */
class Engine {
  readonly worker: Worker;
  readonly slots: Uint8Array[];
  readonly offsets: number[];
  readonly slotBytes: number;
  onMessage: (m: WorkerReply) => void = () => undefined;
  onFailure: (e: Error) => void = () => undefined;
  broken = false;

  constructor(wasm: SharedWasmApi, slotBytes: number, slotCount: number) {
    // Page 0 holds the kernel's result; slot i starts at page 1 + i·(slot pages).
    const slotPages = Math.ceil(slotBytes / PAGE);
    const pages = 1 + slotPages * slotCount;
    const memory = new wasm.Memory({ initial: pages, maximum: pages, shared: true });
    this.slotBytes = slotBytes;
    this.offsets = Array.from({ length: slotCount }, (_, i) => PAGE * (1 + i * slotPages));
    this.slots = this.offsets.map((offset) => new Uint8Array(memory.buffer, offset, slotBytes));
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { kernel: scanKernelBytes(pages), memory, failAfter: faultAfter } });
    faultAfter = null;
    this.worker.on('message', (m: WorkerReply) => this.onMessage(m));
    const fail = (e: unknown): void => {
      this.broken = true;
      this.onFailure(e instanceof Error ? e : new Error(`hash worker stopped: ${String(e)}`));
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`hash worker exited with code ${code}`)));
  }
}

let idle: { engine: Engine; timer: ReturnType<typeof setTimeout> } | null = null;

function takeIdle(slotBytes: number, slotCount: number): Engine | null {
  if (faultAfter !== null) return null;
  if (idle === null || idle.engine.broken || idle.engine.slotBytes !== slotBytes || idle.engine.slots.length !== slotCount) return null;
  const { engine, timer } = idle;
  idle = null;
  clearTimeout(timer);
  engine.worker.ref();
  return engine;
}

function park(engine: Engine): void {
  if (engine.broken || idle !== null) {
    void engine.worker.terminate();
    return;
  }
  engine.onMessage = () => undefined;
  engine.onFailure = () => undefined;
  engine.worker.unref();
  const timer = setTimeout(() => {
    if (idle?.engine === engine) idle = null;
    void engine.worker.terminate();
  }, IDLE_MS);
  timer.unref();
  idle = { engine, timer };
}

/** An FNV-1a 64 stream hashed on a worker thread, tagged chunks screened as f64 words on the way. */
export class WorkerHasher {
  readonly #engine: Engine;
  readonly #free: number[];
  readonly #waiting: ((slot: number) => void)[] = [];
  readonly #failure: Promise<never>;
  /** Per slot in flight: the tag its chunk was pushed with. */
  readonly #slotTags: (number | undefined)[] = [];
  readonly #flags: number[] = [];
  #digest: ((value: bigint) => void) | undefined;
  #closed = false;

  private constructor(engine: Engine, slotsInUse: number) {
    this.#engine = engine;
    this.#free = engine.slots.slice(0, slotsInUse).map((_, i) => i);
    let reject: (e: Error) => void = () => undefined;
    this.#failure = new Promise<never>((_, r) => {
      reject = r;
    });
    this.#failure.catch(() => undefined); // observed through races only
    engine.onFailure = (e) => {
      if (!this.#closed) reject(e);
    };
    engine.onMessage = (m) => {
      if (m.slot !== undefined) {
        const tag = this.#slotTags[m.slot];
        if (tag !== undefined) this.#flags[tag] = (this.#flags[tag] ?? 0) | (m.flags ?? 0);
        const next = this.#waiting.shift();
        if (next !== undefined) next(m.slot);
        else this.#free.push(m.slot);
      } else if (m.hi !== undefined && m.lo !== undefined) {
        this.#digest?.((BigInt(m.hi) << 32n) | BigInt(m.lo));
      }
    };
  }

  /**
   * Starts (or reuses) a worker, or returns `null` when worker threads or
   * shared WebAssembly memory are unavailable (the caller then hashes in-thread).
   * @param slotBytes - bytes per ring slot (a multiple of 8 when chunks are tagged, so screened chunks keep element alignment).
   * @param slotCount - ring slots.
   * @param slotsInUse - how many of them this stream uses (default all): a smaller
   *   ring for a memory-bounded stream that can still reuse the same parked worker.
   * @returns the hasher or null.
   */
  static start(slotBytes: number = SLOT_BYTES, slotCount: number = SLOT_COUNT, slotsInUse: number = slotCount): WorkerHasher | null {
    const wasm = (globalThis as { WebAssembly?: SharedWasmApi }).WebAssembly;
    if (wasm === undefined || typeof SharedArrayBuffer !== 'function') return null;
    try {
      return new WorkerHasher(takeIdle(slotBytes, slotCount) ?? new Engine(wasm, slotBytes, slotCount), Math.max(1, Math.min(slotCount, slotsInUse)));
    } catch {
      return null;
    }
  }

  #post(slot: number, bytes: Uint8Array, tag: number | undefined): void {
    (this.#engine.slots[slot] as Uint8Array).set(bytes);
    this.#slotTags[slot] = tag;
    this.#engine.worker.postMessage({ slot, offset: this.#engine.offsets[slot], length: bytes.length });
  }

  /**
   * Queues as much of `bytes` as free slots take, without waiting.
   * @param bytes - the next bytes of the stream.
   * @param tag - screen these bytes as f64 words (from their first byte) and OR the flags into {@link flags}(tag).
   * @returns how many bytes were queued.
   */
  pushAvailable(bytes: Uint8Array, tag?: number): number {
    let done = 0;
    while (done < bytes.length && this.#free.length > 0) {
      const n = Math.min(this.#engine.slotBytes, bytes.length - done);
      this.#post(this.#free.shift() as number, bytes.subarray(done, done + n), tag);
      done += n;
    }
    return done;
  }

  /**
   * Queues `bytes`, waiting for free slots as needed.
   * @param bytes - the next bytes of the stream.
   * @param tag - screen these bytes (see {@link pushAvailable}).
   * @returns when every byte is queued.
   */
  async push(bytes: Uint8Array, tag?: number): Promise<void> {
    for (let done = 0; done < bytes.length; ) {
      if (this.#closed) throw new Error('hash worker closed');
      const n = Math.min(this.#engine.slotBytes, bytes.length - done);
      const free = this.#free.shift();
      const slot = free ?? (await Promise.race([new Promise<number>((resolve) => this.#waiting.push(resolve)), this.#failure]));
      this.#post(slot, bytes.subarray(done, done + n), tag);
      done += n;
    }
  }

  /**
   * The screen flags of the chunks pushed with `tag` (complete after {@link digest}).
   * @param tag - the tag.
   * @returns `SCAN_NON_FINITE` / `SCAN_NEGATIVE` bits; 0 proves neither occurs in those chunks.
   */
  flags(tag: number): number {
    return this.#flags[tag] ?? 0;
  }

  /**
   * The hash of everything pushed; the worker is then parked for reuse.
   * @returns the 64-bit value.
   */
  async digest(): Promise<bigint> {
    const value = new Promise<bigint>((resolve) => {
      this.#digest = resolve;
    });
    this.#engine.worker.postMessage({ digest: true });
    const result = await Promise.race([value, this.#failure]);
    this.#closed = true;
    this.#waiting.length = 0;
    park(this.#engine); // the worker reset its state when it sent the digest
    return result;
  }

  /** Abandons this stream without a digest (idempotent): the worker, holding a partial state, is terminated. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#waiting.length = 0;
    this.#engine.broken = true;
    void this.#engine.worker.terminate();
  }
}
