/**
 * The SHA-256 of a checkpoint's shards, taken while the state file is being
 * written, on a thread that is not the one writing it.
 *
 * A save streams the state once through `@llmcp/format/node`'s atomic
 * writer, whose thread computes the LLMCP35 checksum (FNV-1a, serial: the
 * busiest thread of a save) while the libuv pool writes. The manifest needs
 * the SHA-256 of every shard of the same file. {@link WrittenShardHasher}
 * wraps the writer's file system (its public `fileSystem` option): it sees
 * each write complete, and as soon as a shard is wholly written, a hash
 * thread reads it back from the page cache (the bytes were just written:
 * a memory copy in the kernel, on the hash thread) and hashes it with
 * node:crypto's hardware SHA-256. The writing thread only posts a message
 * per shard. The first shard holds the header, whose checksum field is
 * written last: any shard written to again after it was handed out is
 * hashed again once the writer syncs the file, when every write is done.
 *
 * The hashes are of the file's bytes as written, not of memory. When the
 * save ends, the calling thread waits for the hash thread while it makes
 * progress, and takes over the shards left only when it makes none for
 * {@link STALL_MS} (a thread the machine does not schedule) or is gone (a failed or
 * missing worker), so a save never waits on a thread that does not run.
 */
import { Worker } from 'node:worker_threads';
import { closeSync, openSync, readSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { nodeFileSystem, type AtomicFileHandle, type AtomicFileSystem } from '@llmcp/format/node';
import { SHARD_SIZE } from './provenance.ts';
import type { ShardDigest } from './shard-hasher.ts';

/** The hash thread: reads `[start, end)` of `fd` and hashes it; answers a release once every job before it is done. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { readSync } = require('node:fs');
const { createHash } = require('node:crypto');
const buffer = new Uint8Array(workerData.bufferBytes);
parentPort.on('message', (m) => {
  if (m.release !== undefined) {
    parentPort.postMessage({ released: m.release });
    return;
  }
  try {
    const h = createHash('sha256');
    let at = m.start;
    while (at < m.end) {
      const n = readSync(m.fd, buffer, 0, Math.min(buffer.length, m.end - at), at);
      if (n <= 0) throw new Error('read returned ' + n + ' at ' + at);
      h.update(buffer.subarray(0, n));
      at += n;
    }
    parentPort.postMessage({ id: m.id, digest: h.digest('hex') });
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: String(e && e.message) });
  }
});
`;

/** Bytes the hash thread reads at a time. */
const READ_BYTES = 1 << 20;
/** How long a finished hash thread waits for the next save. */
const IDLE_MS = 30_000;
/** A hash thread that finishes no shard for this long while shards wait is starved: the calling thread hashes what is left. */
const STALL_MS = 50;

/** The parked hash thread of this JavaScript thread (one at most), and its idle timer. */
let parked: { worker: Worker; timer: ReturnType<typeof setTimeout> } | null = null;

function takeWorker(): Worker | null {
  if (parked !== null) {
    clearTimeout(parked.timer);
    const { worker } = parked;
    parked = null;
    worker.ref();
    return worker;
  }
  try {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { bufferBytes: READ_BYTES } });
    // A parked thread that ends (terminated, or crashed) is never handed out again.
    worker.once('exit', () => {
      if (parked?.worker === worker) {
        clearTimeout(parked.timer);
        parked = null;
      }
    });
    return worker;
  } catch {
    return null; // no worker threads here: the calling thread hashes
  }
}

function parkWorker(worker: Worker): void {
  worker.unref();
  if (parked !== null) {
    void worker.terminate();
    return;
  }
  const timer = setTimeout(() => {
    if (parked?.worker === worker) parked = null;
    void worker.terminate();
  }, IDLE_MS);
  timer.unref();
  parked = { worker, timer };
}

let releases = 0;

/**
 * Closes `fd` once `worker` has done every job posted before now (it may
 * still be reading it: a job the caller no longer waits for), or exits.
 */
function closeAfterWorker(worker: Worker, fd: number): void {
  releases += 1;
  const token = releases;
  const close = (): void => {
    worker.off('message', onMessage);
    worker.off('exit', close);
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
  };
  const onMessage = (m: { released?: number }): void => {
    if (m.released === token) close();
  };
  worker.on('message', onMessage);
  worker.once('exit', close);
  worker.postMessage({ release: token });
}

/** Hashes `[start, end)` of `fd` on the calling thread. */
function hashRange(fd: number, start: number, end: number): string {
  const h = createHash('sha256');
  const buffer = new Uint8Array(Math.min(READ_BYTES, Math.max(1, end - start)));
  for (let at = start; at < end; ) {
    const n = readSync(fd, buffer, 0, Math.min(buffer.length, end - at), at);
    if (n <= 0) throw new Error(`the state file ended at byte ${at} while its shard [${start}, ${end}) was hashed`);
    h.update(buffer.subarray(0, n));
    at += n;
  }
  return h.digest('hex');
}

/** One shard's state: its written ranges, the generation (bumped by a write after it was handed out), its result. */
interface Shard {
  readonly index: number;
  covered: [number, number][];
  generation: number;
  /** The generation handed to the hash thread (or queued for it), or -1. */
  dispatched: number;
  result: { generation: number; digest: string } | null;
}

/**
 * Hashes the shards of the one file the atomic writer creates through
 * {@link WrittenShardHasher.fileSystem}, as it is written (see the module
 * comment). Use once per file: pass `fileSystem` to `saveCheckpointAtomic`,
 * then call {@link WrittenShardHasher.digests} after the save, or
 * {@link WrittenShardHasher.dispose} when it failed.
 */
export class WrittenShardHasher {
  readonly #path: string;
  readonly #shardSize: number;
  #fd: number | null = null;
  #fdOwnedByWorker = false;
  #size = 0;
  #sealed = false;
  readonly #shards = new Map<number, Shard>();
  readonly #queue: { index: number; generation: number }[] = [];
  #worker: Worker | null = null;
  #workerBroken = false;
  #outstanding: { id: number; index: number; generation: number } | null = null;
  #nextId = 1;
  #onMessage: ((m: { id: number; digest?: string; error?: string }) => void) | null = null;
  #onFailure: (() => void) | null = null;
  #waiters: (() => void)[] = [];
  /** When the hash thread last finished a shard (or was handed one while idle). */
  #lastProgress = 0;
  #progressWaiters: (() => void)[] = [];

  /** The file system to pass to the atomic writer (`saveCheckpointAtomic(path, state, { fileSystem })`). */
  readonly fileSystem: AtomicFileSystem;

  readonly #takeWorker: () => Worker | null;

  /**
   * @param path - the file's name in the manifest (`state.llmcp`).
   * @param shardSize - the shard size (default {@link SHARD_SIZE}; tests shrink it).
   * @param hashThread - starts (or takes the parked) hash thread; tests inject one that never answers.
   */
  constructor(path: string, shardSize: number = SHARD_SIZE, hashThread: () => Worker | null = takeWorker) {
    this.#path = path;
    this.#shardSize = shardSize;
    this.#takeWorker = hashThread;
    this.fileSystem = {
      open: async (file, flags) => {
        const handle = await nodeFileSystem.open(file, flags);
        return flags === 'wx' ? this.#tap(file, handle) : handle;
      },
      rename: (from, to) => nodeFileSystem.rename(from, to),
      unlink: (file) => nodeFileSystem.unlink(file),
    };
  }

  #tap(file: string, handle: AtomicFileHandle): AtomicFileHandle {
    if (this.#fd !== null) throw new Error(`WrittenShardHasher taps one file; a second was opened (${file})`);
    this.#fd = openSync(file, 'r');
    return {
      // eslint-disable-next-line max-params -- AtomicFileHandle.write's signature, forwarded as is
      write: async (buffer, offset, length, position) => {
        const r = await handle.write(buffer, offset, length, position);
        this.#written(position, r.bytesWritten);
        return r;
      },
      sync: () => {
        this.#seal();
        return handle.sync();
      },
      ...(handle.datasync === undefined ? {} : { datasync: () => (handle.datasync as () => Promise<void>)() }),
      close: () => handle.close(),
    };
  }

  #shard(index: number): Shard {
    let s = this.#shards.get(index);
    if (s === undefined) {
      s = { index, covered: [], generation: 0, dispatched: -1, result: null };
      this.#shards.set(index, s);
    }
    return s;
  }

  #written(position: number, bytes: number): void {
    if (bytes <= 0) return;
    const end = position + bytes;
    this.#size = Math.max(this.#size, end);
    for (let k = Math.floor(position / this.#shardSize); k * this.#shardSize < end; k += 1) {
      const s = this.#shard(k);
      const a = Math.max(position, k * this.#shardSize);
      const b = Math.min(end, (k + 1) * this.#shardSize);
      s.covered = mergeRange(s.covered, a, b);
      // Written again after it was handed out: its digest (if any) is stale.
      if (s.dispatched >= 0 && s.dispatched === s.generation) s.generation += 1;
      if (!this.#sealed && s.dispatched < s.generation && isCovered(s.covered, k * this.#shardSize, (k + 1) * this.#shardSize)) this.#dispatch(s);
    }
  }

  /** Every write is done (the writer syncs): the last shard's end is known, and shards written again are handed out anew. */
  #seal(): void {
    this.#sealed = true;
    const count = Math.ceil(this.#size / this.#shardSize);
    for (let k = 0; k < count; k += 1) {
      const s = this.#shard(k);
      if (s.dispatched < s.generation) this.#dispatch(s);
    }
  }

  #dispatch(s: Shard): void {
    s.dispatched = s.generation;
    this.#queue.push({ index: s.index, generation: s.generation });
    this.#pump();
  }

  #startWorker(): Worker | null {
    if (this.#worker !== null || this.#workerBroken) return this.#worker;
    const worker = this.#takeWorker();
    if (worker === null) {
      this.#workerBroken = true;
      return null;
    }
    this.#onMessage = (m) => {
      const out = this.#outstanding;
      if (out === null || out.id !== m.id) return;
      this.#outstanding = null;
      this.#lastProgress = performance.now();
      const s = this.#shards.get(out.index);
      if (s !== undefined && m.digest !== undefined && out.generation === s.generation && s.result?.generation !== out.generation) s.result = { generation: out.generation, digest: m.digest };
      for (const w of this.#progressWaiters.splice(0)) w();
      this.#pump();
    };
    this.#onFailure = () => {
      // A failed hash thread is not a failed save: the calling thread hashes what is left.
      this.#workerBroken = true;
      this.#outstanding = null;
      this.#detach(false);
      this.#settle();
      for (const w of this.#progressWaiters.splice(0)) w();
    };
    worker.on('message', this.#onMessage);
    worker.once('error', this.#onFailure);
    worker.once('exit', this.#onFailure);
    this.#worker = worker;
    return worker;
  }

  /** Resolves {@link WrittenShardHasher.whenHashed} waiters once nothing is outstanding. */
  #settle(): void {
    if (this.#outstanding !== null) return;
    for (const w of this.#waiters.splice(0)) w();
  }

  /**
   * Resolves once every shard handed out so far has been hashed by the hash
   * thread (or, without one, is left to the calling thread): lets a test
   * write a shard again after its first digest exists.
   *
   * @returns when nothing is outstanding.
   */
  whenHashed(): Promise<void> {
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
      this.#settle();
    });
  }

  #pump(): void {
    if (this.#outstanding !== null || this.#fd === null) {
      this.#settle();
      return;
    }
    for (;;) {
      const job = this.#queue.shift();
      if (job === undefined) {
        this.#settle();
        return;
      }
      const s = this.#shards.get(job.index);
      if (s === undefined || s.generation !== job.generation || s.result?.generation === job.generation) continue;
      // No thread is started for what is handed out only once everything is written (a small file): the caller hashes it.
      const worker = this.#worker ?? (this.#sealed && parked === null ? null : this.#startWorker());
      if (worker === null) {
        this.#queue.unshift(job);
        this.#settle();
        return;
      }
      const end = Math.min((job.index + 1) * this.#shardSize, this.#sealed ? this.#size : (job.index + 1) * this.#shardSize);
      // An idle thread handed a job: its clock for stalls starts now.
      this.#lastProgress = Math.max(this.#lastProgress, performance.now());
      this.#outstanding = { id: this.#nextId++, index: job.index, generation: job.generation };
      worker.postMessage({ id: this.#outstanding.id, fd: this.#fd, start: job.index * this.#shardSize, end });
      return;
    }
  }

  /** Lets the hash thread go; the read descriptor is closed once the thread has done its last job (no job ever reads a closed or reused descriptor). */
  #detach(reuse: boolean): void {
    const worker = this.#worker;
    this.#worker = null;
    if (worker === null) return;
    if (this.#onMessage !== null) worker.off('message', this.#onMessage);
    if (this.#onFailure !== null) {
      worker.off('error', this.#onFailure);
      worker.off('exit', this.#onFailure);
    }
    if (reuse && this.#fd !== null) {
      closeAfterWorker(worker, this.#fd);
      this.#fdOwnedByWorker = true;
    }
    if (reuse) parkWorker(worker);
    else void worker.terminate();
  }

  #closeFd(): void {
    if (this.#fd !== null && !this.#fdOwnedByWorker) {
      try {
        closeSync(this.#fd);
      } catch {
        // already closed
      }
    }
    this.#fd = null;
  }

  /** Resolves on the hash thread's next finished shard, or after `ms`. */
  #progress(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#progressWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * The shard digests of the file as written, once the atomic writer has
   * finished. Waits for the hash thread while it makes progress; shards it
   * does not get to (it stalls for {@link STALL_MS}, or there is none) are
   * hashed here, from the last one back.
   *
   * @returns the shards in file order.
   * @throws Error when no file was written through {@link WrittenShardHasher.fileSystem}, or a byte of it was never written.
   */
  async digests(): Promise<ShardDigest[]> {
    try {
      const fd = this.#fd;
      if (fd === null) throw new Error('WrittenShardHasher: no file was written through its file system');
      if (!this.#sealed) this.#seal();
      const count = Math.ceil(this.#size / this.#shardSize);
      const range = (k: number): [number, number] => [k * this.#shardSize, Math.min(this.#size, (k + 1) * this.#shardSize)];
      for (let k = 0; k < count; k += 1) {
        const [start, end] = range(k);
        if (!isCovered(this.#shard(k).covered, start, end)) throw new Error(`WrittenShardHasher: bytes [${start}, ${end}) of ${this.#path} were not all written`);
      }
      const stale = (): Shard[] => [...Array(count).keys()].map((k) => this.#shard(k)).filter((s) => s.result?.generation !== s.generation);
      for (let missing = stale(); missing.length > 0; missing = stale()) {
        const working = this.#worker !== null && this.#outstanding !== null;
        if (working && performance.now() - this.#lastProgress < STALL_MS) {
          await this.#progress(STALL_MS);
          continue;
        }
        // The hash thread stalls or is gone: take the last shard it is not working on (or that one, when it is the last).
        const s = [...missing].reverse().find((x) => x.index !== this.#outstanding?.index) ?? (missing[0] as Shard);
        const [start, end] = range(s.index);
        s.result = { generation: s.generation, digest: hashRange(fd, start, end) };
      }
      return [...Array(count).keys()].map((k) => {
        const [start, end] = range(k);
        return { path: this.#path, start, end, digest: (this.#shard(k).result as { digest: string }).digest };
      });
    } finally {
      this.#queue.length = 0;
      this.#detach(!this.#workerBroken);
      this.#closeFd();
    }
  }

  /** Releases the hash thread and the read descriptor after a failed save. */
  dispose(): void {
    this.#queue.length = 0;
    this.#detach(!this.#workerBroken);
    this.#closeFd();
  }
}

/** Adds `[a, b)` to sorted disjoint ranges, merging. */
function mergeRange(ranges: readonly [number, number][], a: number, b: number): [number, number][] {
  const out: [number, number][] = [];
  let lo = a;
  let hi = b;
  for (const [x, y] of ranges) {
    if (y < lo || x > hi) out.push([x, y]);
    else {
      lo = Math.min(lo, x);
      hi = Math.max(hi, y);
    }
  }
  out.push([lo, hi]);
  return out.sort((p, q) => p[0] - q[0]);
}

function isCovered(ranges: readonly [number, number][], a: number, b: number): boolean {
  return ranges.some(([x, y]) => x <= a && y >= b);
}
