/**
 * Decoder.shareCalls: a WebAssembly module's calls shared out among the
 * decoder's threads (and callsOnThisThread, the same on one thread). Every
 * tuple is called exactly once whatever the thread count, each thread copies
 * in the inputs its own calls read, the first failing tuple is reported
 * wherever it falls, the tuples are read afresh at each run, and misuse is
 * refused.
 */
import { SplitMix64 } from '@llmcp/format';
import { afterAll, describe, expect, it } from 'vitest';
import { callsOnThisThread, Decoder, type SharedCalls } from '../src/index.ts';
import { Code, I32, importedMemoryModuleBytes, type WasmApi, type WasmMemory } from '../src/kernels/wasm-assembler.ts';

const api = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
const TINY = { vocabularySize: 11, modelWidth: 8, heads: 2, feedForwardWidth: 12, layers: 1, maxPositions: 8, ropeBase: 10000, rmsEpsilon: 1e-6 };

/**
 * put(slot, fail, from): adds 1 to the i32 at byte 4·slot (so a call made twice shows), copies the f64 input element at
 * f64 index `from` (where the inputs put it) to the f64 at 8192 + slot, and returns `fail`.
 */
function module(shared: boolean): object {
  const e = new Code();
  e.get(0).i32(4).mul().get(0).i32(4).mul().op(0x28, 2, 0).i32(1).add().i32Store();
  e.i32(65536).get(0).i32(8).mul().add().get(2).i32(8).mul().f64Load().f64Store();
  e.get(1);
  return new api.Module(importedMemoryModuleBytes([{ name: 'put', params: [I32, I32, I32], results: [I32], locals: [], body: [...e.bytes, 0x0b] }], shared));
}

const SLOTS = 200;
/** Bytes: the counters (4·SLOTS), the inputs' copy from byte 16384, the copied-out values from byte 65536. */
const INPUT_AT = 2048;

function setUp(shared: boolean, n: number, rng: SplitMix64): { memory: WasmMemory; calls: Int32Array; source: Float64Array; spans: Int32Array } {
  const memory = new api.Memory({ initial: 2, maximum: 2, ...(shared ? { shared: true } : {}) });
  const int32 = (length: number): Int32Array => new Int32Array(shared ? new SharedArrayBuffer(length * 4) : new ArrayBuffer(length * 4));
  const calls = int32(3 * n);
  const spans = int32(2 * n);
  const source = new Float64Array(shared ? new SharedArrayBuffer(n * 8 * 2) : new ArrayBuffer(n * 8 * 2));
  for (let i = 0; i < 2 * n; i++) source[i] = rng.nextUnit() - 0.5;
  for (let i = 0; i < n; i++) {
    calls.set([i, 0, INPUT_AT + 2 * i + 1], 3 * i);
    spans.set([2 * i, 2 * i + 2], 2 * i);
  }
  return { memory, calls, source, spans };
}

describe('Decoder.shareCalls', () => {
  const opened: Decoder[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((d) => d.close()));
  });

  it('calls every tuple exactly once with 1, 2 and 3 threads, copies the inputs in and reports the first failing tuple wherever it falls', async () => {
    const rng = new SplitMix64(61n);
    for (const threads of [1, 2, 3]) {
      const d = await Decoder.create(TINY, { threads });
      opened.push(d);
      for (const n of [1, 2, 5, 17, SLOTS]) {
        const { memory, calls, source, spans } = setUp(threads > 1, n, rng);
        const shared = d.shareCalls({ module: module(threads > 1), memory, entries: ['put'], calls, arity: 3, inputs: { sources: [source], at: [INPUT_AT], spans } });
        const counts = new Int32Array(memory.buffer, 0, n);
        const copied = new Float64Array(memory.buffer, 65536, n);
        expect(shared.run(0)).toBe(-1);
        expect(Array.from(counts)).toEqual(Array(n).fill(1));
        expect(Array.from(copied)).toEqual(Array.from({ length: n }, (_, i) => source[2 * i + 1]));
        // The tuples are read at every run: failures at generated places (every call is still made).
        for (let round = 0; round < 3; round++) {
          const fails = Array.from({ length: n }, () => rng.nextBelow(4) === 0);
          fails.forEach((f, i) => (calls[3 * i + 1] = f ? 7 : 0));
          expect(shared.run(0)).toBe(fails.indexOf(true));
          expect(Array.from(counts)).toEqual(Array(n).fill(round + 2));
        }
        shared.release();
        expect(() => shared.run(0)).toThrow(RangeError);
      }
    }
  });

  it('makes every call on the calling thread after the decoder is closed, like callsOnThisThread', async () => {
    const d = await Decoder.create(TINY, { threads: 2 });
    const rng = new SplitMix64(62n);
    const a = setUp(true, 9, rng);
    const b = setUp(false, 9, rng);
    b.source.set(a.source);
    const onDecoder = d.shareCalls({ module: module(true), memory: a.memory, entries: ['put'], calls: a.calls, arity: 3, inputs: { sources: [a.source], at: [INPUT_AT], spans: a.spans } });
    const here: SharedCalls = callsOnThisThread({ module: module(false), memory: b.memory, entries: ['put'], calls: b.calls, arity: 3, inputs: { sources: [b.source], at: [INPUT_AT], spans: b.spans } });
    await d.close();
    for (const { calls } of [a, b]) calls[3 * 4 + 1] = 1;
    expect(onDecoder.run(0)).toBe(4);
    expect(here.run(0)).toBe(4);
    expect(new Uint8Array(a.memory.buffer)).toEqual(new Uint8Array(b.memory.buffer));
    expect(() => d.shareCalls({ module: module(true), memory: a.memory, entries: ['put'], calls: a.calls, arity: 3 })).toThrow(expect.objectContaining({ code: 'MODEL_CLOSED' }));
  });

  it('refuses unusable arguments before anything runs', async () => {
    const d = await Decoder.create(TINY, { threads: 2 });
    opened.push(d);
    const rng = new SplitMix64(63n);
    const ok = setUp(true, 4, rng);
    const plain = setUp(false, 4, rng);
    const m = module(true);
    // With worker threads everything must be shared.
    expect(() => d.shareCalls({ module: module(false), memory: plain.memory, entries: ['put'], calls: plain.calls, arity: 3 })).toThrow(TypeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: plain.calls, arity: 3 })).toThrow(TypeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, inputs: { sources: [plain.source], at: [INPUT_AT], spans: ok.spans } })).toThrow(TypeError);
    // Tuples, entries, spans.
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 5 })).toThrow(TypeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 0 })).toThrow(RangeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['nothing'], calls: ok.calls, arity: 3 })).toThrow(TypeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: [], calls: ok.calls, arity: 3 })).toThrow(TypeError);
    const backwards = Int32Array.from(ok.spans).reverse();
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, inputs: { sources: [ok.source], at: [INPUT_AT], spans: new Int32Array(new SharedArrayBuffer(backwards.length * 4)).map((_, i) => backwards[i]!) } })).toThrow(RangeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, inputs: { sources: [ok.source], at: [2 * 65536 / 8], spans: ok.spans } })).toThrow(RangeError);
    const shared = d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3 });
    expect(() => shared.run(1)).toThrow(RangeError);
    expect(shared.run(0)).toBe(-1);
  });
});
