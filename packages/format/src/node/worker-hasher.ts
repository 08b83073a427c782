/**
 * FNV-1a on a worker thread for the streaming saver: the serial checksum runs
 * on a second core while the main thread validates the state and issues the
 * writes.
 *
 * Bytes travel through a ring of slots inside one *shared* WebAssembly
 * memory: the main thread copies a chunk into a free slot (the only copy),
 * the worker runs the FNV kernel (a variant importing that memory) directly
 * on the slot, in order, and hands the slot back. Memory is fixed
 * (slots × slot size), whatever the file size. The worker is plain
 * JavaScript evaluated from a string, so it runs the same from `src/` under
 * tests and from `dist/` when published.
 *
 * Starting a worker costs tens of milliseconds, so a finished worker is kept
 * idle (unreferenced, it never keeps the process alive) for a few seconds and
 * reused by the next save; one idle worker at most.
 */
import { Worker } from 'node:worker_threads';
import { fnvKernelBytes } from '../internal/fnv1a64-wasm.ts';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { kernel, memory } = workerData;
const instance = new WebAssembly.Instance(new WebAssembly.Module(kernel), { env: { memory } });
const fnv = instance.exports.fnv;
const result = new DataView(memory.buffer, 0, 8);
let hi = 0xcbf29ce4;
let lo = 0x84222325;
parentPort.on('message', (m) => {
  if (m.digest) {
    parentPort.postMessage({ hi, lo });
    hi = 0xcbf29ce4;
    lo = 0x84222325;
    return;
  }
  fnv(m.offset, m.length, hi, lo);
  lo = result.getUint32(0, true);
  hi = result.getUint32(4, true);
  parentPort.postMessage({ slot: m.slot });
});
`;

/** The slice of the WebAssembly JS API used here, typed locally (compiles without the DOM library). */
interface SharedWasmApi {
  readonly Memory: new (descriptor: { initial: number; maximum: number; shared: true }) => { readonly buffer: ArrayBufferLike };
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
  onMessage: (m: { slot?: number; hi?: number; lo?: number }) => void = () => undefined;
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
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { kernel: fnvKernelBytes(pages), memory } });
    this.worker.on('message', (m: { slot?: number; hi?: number; lo?: number }) => this.onMessage(m));
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

/** An FNV-1a 64 stream hashed on a worker thread. */
export class WorkerHasher {
  readonly #engine: Engine;
  readonly #free: number[];
  readonly #waiting: ((slot: number) => void)[] = [];
  readonly #failure: Promise<never>;
  #digest: ((value: bigint) => void) | undefined;
  #closed = false;

  private constructor(engine: Engine) {
    this.#engine = engine;
    this.#free = engine.slots.map((_, i) => i);
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
   * @param slotBytes - bytes per ring slot.
   * @param slotCount - ring slots.
   * @returns the hasher or null.
   */
  static start(slotBytes: number = SLOT_BYTES, slotCount: number = SLOT_COUNT): WorkerHasher | null {
    const wasm = (globalThis as { WebAssembly?: SharedWasmApi }).WebAssembly;
    if (wasm === undefined || typeof SharedArrayBuffer !== 'function') return null;
    try {
      return new WorkerHasher(takeIdle(slotBytes, slotCount) ?? new Engine(wasm, slotBytes, slotCount));
    } catch {
      return null;
    }
  }

  #post(slot: number, bytes: Uint8Array): void {
    (this.#engine.slots[slot] as Uint8Array).set(bytes);
    this.#engine.worker.postMessage({ slot, offset: this.#engine.offsets[slot], length: bytes.length });
  }

  /**
   * Queues as much of `bytes` as free slots take, without waiting.
   * @param bytes - the next bytes of the stream.
   * @returns how many bytes were queued.
   */
  pushAvailable(bytes: Uint8Array): number {
    let done = 0;
    while (done < bytes.length && this.#free.length > 0) {
      const n = Math.min(this.#engine.slotBytes, bytes.length - done);
      this.#post(this.#free.shift() as number, bytes.subarray(done, done + n));
      done += n;
    }
    return done;
  }

  /**
   * Queues `bytes`, waiting for free slots as needed.
   * @param bytes - the next bytes of the stream.
   * @returns when every byte is queued.
   */
  async push(bytes: Uint8Array): Promise<void> {
    for (let done = 0; done < bytes.length; ) {
      if (this.#closed) throw new Error('hash worker closed');
      const n = Math.min(this.#engine.slotBytes, bytes.length - done);
      const free = this.#free.shift();
      const slot = free ?? (await Promise.race([new Promise<number>((resolve) => this.#waiting.push(resolve)), this.#failure]));
      this.#post(slot, bytes.subarray(done, done + n));
      done += n;
    }
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
