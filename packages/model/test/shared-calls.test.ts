/**
 * Decoder.shareCalls: a WebAssembly module's calls shared out among the
 * decoder's threads (and callsOnThisThread, the same on one thread). Every
 * tuple is called exactly once whatever the thread count, each thread copies
 * in the inputs its own calls read and copies out the outputs they wrote —
 * only when no call of any thread failed —, the first failing tuple is
 * reported wherever it falls, the tuples are read afresh at each run, and
 * misuse is refused.
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
/** Bytes: the counters (4·SLOTS), the inputs' copy from byte 16384, the copied values from byte 65536 (f64 index 8192, the outputs). */
const INPUT_AT = 2048;
const OUTPUT_AT = 8192;

function setUp(shared: boolean, n: number, rng: SplitMix64): { memory: WasmMemory; calls: Int32Array; source: Float64Array; spans: Int32Array; target: Float64Array; outSpans: Int32Array } {
  const memory = new api.Memory({ initial: 2, maximum: 2, ...(shared ? { shared: true } : {}) });
  const int32 = (length: number): Int32Array => new Int32Array(shared ? new SharedArrayBuffer(length * 4) : new ArrayBuffer(length * 4));
  const calls = int32(3 * n);
  const spans = int32(2 * n);
  const outSpans = int32(2 * n);
  const source = new Float64Array(shared ? new SharedArrayBuffer(n * 8 * 2) : new ArrayBuffer(n * 8 * 2));
  const target = new Float64Array(shared ? new SharedArrayBuffer(n * 8) : new ArrayBuffer(n * 8)).fill(-1);
  for (let i = 0; i < 2 * n; i++) source[i] = rng.nextUnit() - 0.5;
  for (let i = 0; i < n; i++) {
    calls.set([i, 0, INPUT_AT + 2 * i + 1], 3 * i);
    spans.set([2 * i, 2 * i + 2], 2 * i);
    outSpans.set([i, i + 1], 2 * i);
  }
  return { memory, calls, source, spans, target, outSpans };
}

describe('Decoder.shareCalls', () => {
  const opened: Decoder[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((d) => d.close()));
  });

  it('calls every tuple exactly once with 1, 2 and 3 threads, copies the inputs in, the outputs out only when no call failed, and reports the first failing tuple wherever it falls', async () => {
    const rng = new SplitMix64(61n);
    for (const threads of [1, 2, 3]) {
      const d = await Decoder.create(TINY, { threads });
      opened.push(d);
      for (const n of [1, 2, 5, 17, SLOTS]) {
        const { memory, calls, source, spans, target, outSpans } = setUp(threads > 1, n, rng);
        const outputs = { targets: [target], at: [OUTPUT_AT], spans: outSpans };
        const shared = d.shareCalls({ module: module(threads > 1), memory, entries: ['put'], calls, arity: 3, inputs: { sources: [source], at: [INPUT_AT], spans }, outputs });
        const counts = new Int32Array(memory.buffer, 0, n);
        const copied = new Float64Array(memory.buffer, 65536, n);
        const wanted = (): number[] => Array.from({ length: n }, (_, i) => source[2 * i + 1] as number);
        expect(shared.run(0)).toBe(-1);
        expect(Array.from(counts)).toEqual(Array(n).fill(1));
        expect(Array.from(copied)).toEqual(wanted());
        expect(Array.from(target)).toEqual(wanted());
        // The tuples are read at every run: failures at generated places (every call is still made), with new inputs.
        for (let round = 0; round < 6; round++) {
          const fails = Array.from({ length: n }, () => rng.nextBelow(3 * n) === 0);
          fails.forEach((f, i) => (calls[3 * i + 1] = f ? 7 : 0));
          for (let i = 0; i < 2 * n; i++) source[i] = rng.nextUnit() - 0.5;
          const before = Array.from(target);
          expect(shared.run(0)).toBe(fails.indexOf(true));
          expect(Array.from(counts)).toEqual(Array(n).fill(round + 2));
          expect(Array.from(copied)).toEqual(wanted());
          // None of the outputs is written when a call failed, wherever it was.
          expect(Array.from(target)).toEqual(fails.includes(true) ? before : wanted());
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
    const spec = (x: typeof a, shared: boolean) =>
      ({ module: module(shared), memory: x.memory, entries: ['put'], calls: x.calls, arity: 3, inputs: { sources: [x.source], at: [INPUT_AT], spans: x.spans }, outputs: { targets: [x.target], at: [OUTPUT_AT], spans: x.outSpans } }) as const;
    const onDecoder = d.shareCalls(spec(a, true));
    const here: SharedCalls = callsOnThisThread(spec(b, false));
    await d.close();
    expect(onDecoder.run(0)).toBe(-1);
    expect(here.run(0)).toBe(-1);
    expect(Array.from(a.target)).toEqual(Array.from(b.target));
    expect(a.target[4]).toBe(a.source[9]);
    a.target.fill(-1);
    b.target.fill(-1);
    for (const { calls } of [a, b]) calls[3 * 4 + 1] = 1;
    expect(onDecoder.run(0)).toBe(4);
    expect(here.run(0)).toBe(4);
    expect(new Uint8Array(a.memory.buffer)).toEqual(new Uint8Array(b.memory.buffer));
    expect([...a.target, ...b.target]).toEqual(Array(18).fill(-1));
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
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, outputs: { targets: [plain.target], at: [OUTPUT_AT], spans: ok.outSpans } })).toThrow(TypeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, outputs: { targets: [ok.target], at: [OUTPUT_AT], spans: plain.outSpans } })).toThrow(TypeError);
    // Tuples, entries, spans.
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 5 })).toThrow(TypeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 0 })).toThrow(RangeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['nothing'], calls: ok.calls, arity: 3 })).toThrow(TypeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: [], calls: ok.calls, arity: 3 })).toThrow(TypeError);
    const backwards = Int32Array.from(ok.spans).reverse();
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, inputs: { sources: [ok.source], at: [INPUT_AT], spans: new Int32Array(new SharedArrayBuffer(backwards.length * 4)).map((_, i) => backwards[i]!) } })).toThrow(RangeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, inputs: { sources: [ok.source], at: [2 * 65536 / 8], spans: ok.spans } })).toThrow(RangeError);
    // Outputs: spans that do not ascend, or a target that does not cover them, or a place outside the memory.
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, outputs: { targets: [ok.target], at: [OUTPUT_AT], spans: ok.spans.map((_, i) => backwards[i]!) } })).toThrow(RangeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, outputs: { targets: [ok.target.subarray(1)], at: [OUTPUT_AT], spans: ok.outSpans } })).toThrow(RangeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, outputs: { targets: [ok.target], at: [-1], spans: ok.outSpans } })).toThrow(RangeError);
    expect(() => d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3, outputs: { targets: [ok.target, ok.target], at: [OUTPUT_AT], spans: ok.outSpans } })).toThrow(TypeError);
    const shared = d.shareCalls({ module: m, memory: ok.memory, entries: ['put'], calls: ok.calls, arity: 3 });
    expect(() => shared.run(1)).toThrow(RangeError);
    expect(shared.run(0)).toBe(-1);
  });
});
