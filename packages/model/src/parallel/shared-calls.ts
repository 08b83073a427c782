/**
 * Calls of a WebAssembly function shared out among a decoder's threads
 * (Decoder.shareCalls): a module and a memory, one or more exported entry
 * functions, and a table of argument tuples. Each thread instantiates the
 * module on the memory once; a CALLS phase then has each thread call the
 * chosen entry once per tuple of its contiguous share of the table, in order,
 * noting its first call that returns non-zero. The calling thread takes the
 * first share. Another package's kernel (the optimizer's update) can
 * thus use the decoder's idle threads without running any of its own code
 * there: what a call does is all in its module.
 */
import type { WasmApi, WasmMemory } from '../kernels/wasm-assembler.ts';

/**
 * Arrays copied into a call set's memory before its calls, each thread
 * copying what its own calls read (so that it is in that thread's cache, and
 * no thread waits for one copy of everything).
 */
export interface CallInputs {
  /** The arrays (on SharedArrayBuffers when the calls are shared with worker threads). */
  readonly sources: readonly Float64Array[];
  /** Per source, the f64 index in the memory where its element 0 goes. */
  readonly at: readonly number[];
  /** Per tuple, the elements [start, end) of every source its call reads: two values each, ascending from tuple to tuple. */
  readonly spans: Int32Array;
}

/**
 * Arrays a call set's results are copied out to after its calls, each thread
 * copying what its own calls wrote (from its cache), and only once every call
 * of every thread returned 0: when one fails, none of the arrays is written.
 */
export interface CallOutputs {
  /** The arrays (on SharedArrayBuffers when the calls are shared with worker threads). */
  readonly targets: readonly Float64Array[];
  /** Per target, the f64 index in the memory of the value that goes to its element 0. */
  readonly at: readonly number[];
  /** Per tuple, the elements [start, end) of every target its call writes: two values each, ascending from tuple to tuple. */
  readonly spans: Int32Array;
}

/** A set of calls to share out (Decoder.shareCalls, {@link callsOnThisThread}). */
export interface CallSetSpec {
  /** A compiled WebAssembly.Module importing memory "env" "memory". */
  readonly module: object;
  /** Its memory, of a fixed size (it must not grow): shared (`shared: true`) when the calls are shared with worker threads. */
  readonly memory: WasmMemory;
  /** Names of exported functions taking `arity` i32 arguments and returning an i32 (0 = success). */
  readonly entries: readonly string[];
  /** The argument tuples, `arity` values each, read at every run (on a SharedArrayBuffer with worker threads). */
  readonly calls: Int32Array;
  /** Values per tuple (≥ 1). */
  readonly arity: number;
  /** Arrays each thread copies into the memory before its calls (the elements its own tuples read), or none. */
  readonly inputs?: CallInputs | null;
  /** Arrays each thread copies its tuples' results out to after every call succeeded, or none. */
  readonly outputs?: CallOutputs | null;
}

/** What a worker is sent to add a call set, or to drop one (`drop`). */
export type CallSetMessage =
  | (CallSetSpec & {
      readonly id: number;
      /** Per thread index, the first tuple of its share whose call returned non-zero, or −1 (shared). */
      readonly results: Int32Array;
    })
  | { readonly id: number; readonly drop: true };

/** One thread's instance of a call set. */
export interface CallSet {
  readonly entries: readonly ((...args: number[]) => number)[];
  readonly calls: Int32Array;
  readonly arity: number;
  readonly results: Int32Array;
  readonly inputs: CallInputs | null;
  readonly outputs: CallOutputs | null;
  /** The memory, as f64 values (for the inputs' and outputs' copies). */
  readonly view: Float64Array;
}

/**
 * Instantiates a call set's module on its memory on this thread.
 * @param m - the set (not a drop).
 * @returns the thread's instance.
 * @throws Error when the module does not instantiate or an entry is not an exported function.
 */
export function instantiateCalls(m: Exclude<CallSetMessage, { drop: true }>): CallSet {
  const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (api === undefined) throw new Error('no WebAssembly here');
  const instance = new api.Instance(m.module, { env: { memory: m.memory } });
  const entries = m.entries.map((name) => {
    const f = instance.exports[name];
    if (typeof f !== 'function') throw new TypeError(`shareCalls: the module exports no function ${JSON.stringify(name)}`);
    return f as (...args: number[]) => number;
  });
  return { entries, calls: m.calls, arity: m.arity, results: m.results, inputs: m.inputs ?? null, outputs: m.outputs ?? null, view: new Float64Array(m.memory.buffer) };
}

/**
 * Runs one thread's share of a call set: every tuple of
 * [⌊n·t/threads⌋, ⌊n·(t+1)/threads⌋), in order, recording the first whose
 * call returned non-zero (the outputs are left to {@link copyOutputs}).
 * @param set - the thread's instance.
 * @param entry - the entry to call.
 * @param thread - this thread's index.
 * @param threads - threads sharing the calls.
 * @returns whether every call of the share returned 0.
 */
export function runCallShare(set: CallSet, entry: number, thread: number, threads: number): boolean {
  const fn = set.entries[entry] as (...args: number[]) => number;
  const { calls, arity, inputs, view } = set;
  const [from, to] = shareOf(set, thread, threads);
  if (inputs !== null) copySpans(inputs.spans, from, to, (start, end) => inputs.sources.forEach((source, j) => view.set(source.subarray(start, end), (inputs.at[j] as number) + start)));
  const args: number[] = new Array<number>(arity);
  let failed = -1;
  for (let i = from; i < to; i++) {
    for (let j = 0; j < arity; j++) args[j] = calls[i * arity + j] as number;
    if (fn(...args) !== 0 && failed < 0) failed = i;
  }
  Atomics.store(set.results, thread, failed);
  return failed < 0;
}

/**
 * Copies out what one thread's share of the calls wrote (none without outputs):
 * call it once every call of every thread succeeded.
 * @param set - the thread's instance.
 * @param thread - this thread's index.
 * @param threads - threads sharing the calls.
 */
export function copyOutputs(set: CallSet, thread: number, threads: number): void {
  const { outputs, view } = set;
  if (outputs === null) return;
  const [from, to] = shareOf(set, thread, threads);
  copySpans(outputs.spans, from, to, (start, end) => outputs.targets.forEach((target, j) => target.set(view.subarray((outputs.at[j] as number) + start, (outputs.at[j] as number) + end), start)));
}

/**
 * Every call of a set on the calling thread alone, then the outputs when all succeeded.
 * @param set - the thread's instance.
 * @param entry - the entry to call.
 */
export function runAllCalls(set: CallSet, entry: number): void {
  if (runCallShare(set, entry, 0, 1)) copyOutputs(set, 0, 1);
}

/** @returns the tuples [from, to) of thread `thread` of `threads`. */
function shareOf(set: CallSet, thread: number, threads: number): [number, number] {
  const n = set.calls.length / set.arity;
  return [Math.floor((n * thread) / threads), Math.floor((n * (thread + 1)) / threads)];
}

/**
 * Copies the elements of the tuples [from, to) in one run (their spans are ascending).
 * @param spans - per tuple, [start, end).
 * @param from - first tuple.
 * @param to - end tuple.
 * @param copy - copies the elements [start, end).
 */
function copySpans(spans: Int32Array, from: number, to: number, copy: (start: number, end: number) => void): void {
  if (from < to) copy(spans[2 * from] as number, spans[2 * to - 1] as number);
}

/**
 * Checks the arguments of a call set.
 * @throws TypeError or RangeError for unusable ones.
 */
export function checkCalls(spec: CallSetSpec): void {
  if (typeof spec !== 'object' || spec === null) throw new TypeError('shareCalls: expected { module, memory, entries, calls, arity, inputs?, outputs? }');
  const { memory, entries, calls, arity } = spec;
  const inputs = spec.inputs ?? null;
  if (typeof memory !== 'object' || memory === null || !(memory.buffer instanceof ArrayBuffer || memory.buffer instanceof SharedArrayBuffer)) throw new TypeError('shareCalls: memory must be a WebAssembly.Memory');
  if (!Number.isSafeInteger(arity) || arity < 1) throw new RangeError(`shareCalls: arity must be an integer ≥ 1, found ${String(arity)}`);
  if (!(calls instanceof Int32Array) || calls.length % arity !== 0) throw new TypeError(`shareCalls: calls must be an Int32Array of whole ${arity}-value tuples`);
  if (!Array.isArray(entries) || entries.length === 0 || entries.some((e) => typeof e !== 'string')) throw new TypeError('shareCalls: entries must be a non-empty list of export names');
  const n = calls.length / arity;
  if (inputs !== null) checkTransfer('inputs', { arrays: inputs.sources, at: inputs.at, spans: inputs.spans }, n, memory);
  const outputs = spec.outputs ?? null;
  if (outputs !== null) checkTransfer('outputs', { arrays: outputs.targets, at: outputs.at, spans: outputs.spans }, n, memory);
}

/**
 * Checks the inputs or outputs of a call set.
 * @param what - "inputs" or "outputs", for the messages.
 * @param t - its arrays, their places in the memory and the tuples' spans.
 * @param n - tuples.
 * @param memory - the memory.
 * @throws TypeError or RangeError for unusable ones.
 */
function checkTransfer(what: string, t: { readonly arrays: readonly Float64Array[]; readonly at: readonly number[]; readonly spans: Int32Array }, n: number, memory: WasmMemory): void {
  const { arrays, at, spans } = t;
  const field = what === 'inputs' ? 'sources' : 'targets';
  if (!(spans instanceof Int32Array) || spans.length !== 2 * n) throw new TypeError(`shareCalls: ${what}.spans must be an Int32Array of ${n} [start, end) pairs`);
  if (!Array.isArray(arrays) || !Array.isArray(at) || arrays.length !== at.length) throw new TypeError(`shareCalls: ${what}.${field} and ${what}.at must be lists of one length`);
  const capacity = memory.buffer.byteLength / 8;
  for (let i = 0; i < n; i++) {
    const [start, end] = [spans[2 * i] as number, spans[2 * i + 1] as number];
    if (!(start <= end) || (i > 0 && start < (spans[2 * i - 1] as number))) throw new RangeError(`shareCalls: ${what}.spans must be ascending [start, end) pairs; pair ${i} is [${start}, ${end})`);
  }
  arrays.forEach((array, j) => {
    const last = n === 0 ? 0 : (spans[2 * n - 1] as number);
    const to = at[j] as number;
    if (!(array instanceof Float64Array) || last > array.length || !Number.isSafeInteger(to) || to < 0 || to + last > capacity) {
      throw new RangeError(`shareCalls: ${what.slice(0, -1)} ${j} does not cover the spans, or does not fit the memory at ${String(to)}`);
    }
  });
}

/**
 * @param entry - an entry index.
 * @param count - entries there are.
 * @throws RangeError when it is not one of them.
 */
export function checkEntry(entry: number, count: number): void {
  if (!Number.isSafeInteger(entry) || entry < 0 || entry >= count) throw new RangeError(`shareCalls: entry must be an index below ${count}, found ${String(entry)}`);
}

/** Calls of a WebAssembly module's functions shared out among a decoder's threads (Decoder.shareCalls), or made on one thread ({@link callsOnThisThread}). */
export interface SharedCalls {
  /**
   * Calls entry function `entry` once per argument tuple, the tuples shared
   * out among the threads in contiguous runs (the calling thread takes the
   * first), each thread in order; waits for all.
   * @param entry - index into the entry names given.
   * @returns the index of the first tuple whose call returned non-zero, or −1 (every call is made either way).
   */
  run(entry: number): number;
  /** Drops the calls from every thread (their instances, and the memory with them); `run` throws afterwards. */
  release(): void;
}

/**
 * The same calls without worker threads: every tuple on the calling thread (for a model with one thread, or none).
 * @param spec - the module, memory, entries, tuples and inputs.
 * @returns the calls.
 * @throws TypeError or RangeError for unusable arguments, or what instantiating the module throws.
 */
export function callsOnThisThread(spec: CallSetSpec): SharedCalls {
  checkCalls(spec);
  const set = instantiateCalls({ ...spec, entries: [...spec.entries], id: 0, results: new Int32Array(1) });
  let released = false;
  return {
    run: (entry) => {
      if (released) throw new RangeError('shareCalls: these calls were released');
      checkEntry(entry, set.entries.length);
      runAllCalls(set, entry);
      return set.results[0] as number;
    },
    release: () => {
      released = true;
    },
  };
}
