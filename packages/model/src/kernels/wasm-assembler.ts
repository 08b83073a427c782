/**
 * A minimal WebAssembly assembler for the kernels that are assembled at load
 * time (wasm-gemm.ts, wasm-exp.ts, wasm-ln.ts): LEB128 encoders, an
 * instruction emitter and the section framing (no toolchain, no binary blob),
 * plus the scaffolding the element-wise batch kernels share: the pair loop
 * with undecided-index collection, the module layout, per-thread
 * instantiation and the chunked copy in and out.
 */

/** Value type `i32`. */
export const I32 = 0x7f;
/** Value type `f64`. */
export const F64 = 0x7c;
/** Value type `v128`. */
export const V128 = 0x7b;

/**
 * Unsigned LEB128.
 * @param n - a non-negative integer below 2^32.
 * @returns its encoding.
 */
export function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}

/**
 * Signed LEB128.
 * @param n - a 32-bit signed integer.
 * @returns its encoding.
 */
export function sleb(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (b & 0x40) === 0) || (n === -1 && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
}

/** Emits instructions into a byte list; locals are numbered by the caller. */
export class Code {
  readonly bytes: number[] = [];
  op(...b: number[]): this {
    this.bytes.push(...b);
    return this;
  }
  get(l: number): this {
    return this.op(0x20, ...uleb(l));
  }
  set(l: number): this {
    return this.op(0x21, ...uleb(l));
  }
  tee(l: number): this {
    return this.op(0x22, ...uleb(l));
  }
  i32(v: number): this {
    return this.op(0x41, ...sleb(v));
  }
  add(): this {
    return this.op(0x6a);
  }
  sub(): this {
    return this.op(0x6b);
  }
  mul(): this {
    return this.op(0x6c);
  }
  and(): this {
    return this.op(0x71);
  }
  shl3(): this {
    return this.i32(3).op(0x74);
  }
  /** `i32.shl` */
  shl(): this {
    return this.op(0x74);
  }
  /** `i32.eq` */
  eq(): this {
    return this.op(0x46);
  }
  /** `i32.ne` */
  ne(): this {
    return this.op(0x47);
  }
  ltS(): this {
    return this.op(0x48);
  }
  gtS(): this {
    return this.op(0x4a);
  }
  geS(): this {
    return this.op(0x4e);
  }
  select(): this {
    return this.op(0x1b);
  }
  block(): this {
    return this.op(0x02, 0x40);
  }
  loop(): this {
    return this.op(0x03, 0x40);
  }
  if(): this {
    return this.op(0x04, 0x40);
  }
  else(): this {
    return this.op(0x05);
  }
  end(): this {
    return this.op(0x0b);
  }
  br(depth: number): this {
    return this.op(0x0c, ...uleb(depth));
  }
  brIf(depth: number): this {
    return this.op(0x0d, ...uleb(depth));
  }
  /**
   * `block loop … end end` running `body` while local `i` < local `n` (signed; `i32.ge_s` then `br_if 1` at the
   * top of each pass, `br 0` after the body): the body steps `i`.
   */
  whileLess(i: number, n: number, body: () => void): this {
    this.block().loop();
    this.get(i).get(n).geS().brIf(1);
    body();
    this.br(0);
    return this.end().end();
  }
  /** `i32.shr_s` */
  shrS(): this {
    return this.op(0x75);
  }
  /** `i64.const` (a 32-bit signed value). */
  i64(v: number): this {
    return this.op(0x42, ...sleb(v));
  }
  /** `i32.store` (4-byte aligned). */
  i32Store(offset = 0): this {
    return this.op(0x36, 2, ...uleb(offset));
  }
  f64Load(offset = 0): this {
    return this.op(0x2b, 3, ...uleb(offset));
  }
  f64Store(offset = 0): this {
    return this.op(0x39, 3, ...uleb(offset));
  }
  f64Zero(): this {
    return this.op(0x44, 0, 0, 0, 0, 0, 0, 0, 0);
  }
  f64Add(): this {
    return this.op(0xa0);
  }
  f64Mul(): this {
    return this.op(0xa2);
  }
  /** A SIMD-prefixed instruction: 0xfd, the LEB128 opcode, then immediates. */
  simd(opcode: number, ...imm: number[]): this {
    return this.op(0xfd, ...uleb(opcode), ...imm);
  }
  v128Load(offset = 0): this {
    return this.op(0xfd, 0x00, 3, ...uleb(offset));
  }
  /** `v128.load64_splat`: one f64 (or i64) from memory into both lanes. */
  v128Load64Splat(offset = 0): this {
    return this.simd(0x0a, 3, ...uleb(offset));
  }
  v128Store(offset = 0): this {
    return this.op(0xfd, 0x0b, 3, ...uleb(offset));
  }
  v128Zero(): this {
    return this.op(0xfd, 0x0c, ...new Array<number>(16).fill(0));
  }
  /** `i8x16.shuffle` with 16 lane indices (0–15 the first operand, 16–31 the second). */
  shuffle(lanes: readonly number[]): this {
    return this.simd(0x0d, ...lanes);
  }
  splat(): this {
    return this.op(0xfd, 0x14);
  }
  /** `i64x2.splat` */
  i64x2Splat(): this {
    return this.simd(0x12);
  }
  /** `f64x2.replace_lane` */
  f64x2ReplaceLane(lane: number): this {
    return this.simd(0x22, lane);
  }
  /** `i32x4.extract_lane` */
  i32x4ExtractLane(lane: number): this {
    return this.simd(0x1b, lane);
  }
  /** `f64x2.eq` */
  vEq(): this {
    return this.simd(0x47);
  }
  /** `f64x2.lt` */
  vLt(): this {
    return this.simd(0x49);
  }
  /** `f64x2.gt` */
  vGt(): this {
    return this.simd(0x4a);
  }
  /** `f64x2.le` */
  vLe(): this {
    return this.simd(0x4b);
  }
  /** `f64x2.ge` */
  vGe(): this {
    return this.simd(0x4c);
  }
  /** `v128.and` */
  vAnd(): this {
    return this.simd(0x4e);
  }
  /** `v128.bitselect`: bits of the first operand where the mask (third) is 1, else of the second. */
  bitselect(): this {
    return this.simd(0x52);
  }
  /** `i64x2.bitmask`: bit l set when lane l's top bit is. */
  i64x2Bitmask(): this {
    return this.simd(0xc4);
  }
  /** `i64x2.shl` (shift count on the stack as i32). */
  i64x2Shl(): this {
    return this.simd(0xcb);
  }
  /** `i64x2.shr_s` (shift count on the stack as i32). */
  i64x2ShrS(): this {
    return this.simd(0xcc);
  }
  /** `i64x2.shr_u` (shift count on the stack as i32). */
  i64x2ShrU(): this {
    return this.simd(0xcd);
  }
  /** `i64x2.add` */
  i64x2Add(): this {
    return this.simd(0xce);
  }
  /** `i64x2.sub` */
  i64x2Sub(): this {
    return this.simd(0xd1);
  }
  /** `f64x2.abs` */
  vAbs(): this {
    return this.simd(0xec);
  }
  vAdd(): this {
    return this.op(0xfd, ...uleb(0xf0));
  }
  /** `f64x2.sub` */
  vSub(): this {
    return this.simd(0xf1);
  }
  vMul(): this {
    return this.op(0xfd, ...uleb(0xf2));
  }
  /** `f64x2.neg` (flips the sign bits, as JavaScript's unary minus). */
  vNeg(): this {
    return this.simd(0xed);
  }
  /** `f64x2.div` (correctly rounded per lane). */
  vDiv(): this {
    return this.simd(0xf3);
  }
  vSqrt(): this {
    return this.simd(0xef);
  }
  /** `f64.const` */
  f64Const(v: number): this {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, true);
    return this.op(0x44, ...b);
  }
  /** `f64.sub` */
  f64Sub(): this {
    return this.op(0xa1);
  }
  /** `f64.eq` */
  f64Eq(): this {
    return this.op(0x61);
  }
  /** `f64.gt` */
  f64Gt(): this {
    return this.op(0x64);
  }
  /** `f64.lt` */
  f64Lt(): this {
    return this.op(0x63);
  }
  /** `f64.abs` */
  f64Abs(): this {
    return this.op(0x99);
  }
  /** `f64.div` */
  f64Div(): this {
    return this.op(0xa3);
  }
  /** `i32.eqz` */
  eqz(): this {
    return this.op(0x45);
  }
  /** `i32.gt_u` */
  gtU(): this {
    return this.op(0x4b);
  }
  /** `i32.ge_u` */
  geU(): this {
    return this.op(0x4f);
  }
  /** `return` */
  ret(): this {
    return this.op(0x0f);
  }
  /** `f64x2.extract_lane` */
  f64x2ExtractLane(lane: number): this {
    return this.simd(0x21, lane);
  }
  /** `i64x2.all_true` */
  i64x2AllTrue(): this {
    return this.simd(0xc3);
  }
  /** `i32.or` */
  or(): this {
    return this.op(0x72);
  }
}

/**
 * A module section.
 * @param id - section id.
 * @param body - its contents.
 * @returns id, size and contents.
 */
export function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}

/**
 * A name (export or import) as length-prefixed ASCII.
 * @param s - the name.
 * @returns its encoding.
 */
export function name(s: string): number[] {
  return [...uleb(s.length), ...Array.from(s, (c) => c.charCodeAt(0))];
}

/** The parts of the WebAssembly JS API used here (typed locally: the package compiles without DOM typings). */
export interface WasmMemory {
  readonly buffer: ArrayBuffer | SharedArrayBuffer;
  grow(pages: number): number;
}

/** The WebAssembly namespace as far as the kernels use it. */
export interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
  Memory: new (descriptor: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory;
}

// ── Element-wise batch kernels (wasm-exp.ts, wasm-ln.ts) ────────────────────

/**
 * Memory layout of an element-wise kernel's module (one 64 KiB page, bytes):
 * arguments in and results out (in place) at {@link EW_X_OFF}, undecided
 * indices at {@link EW_U_OFF}, the kernel's tables and constants from
 * {@link EW_DATA_OFF} on.
 */
export const EW_CHUNK = 4096;
/** Arguments in, results out: EW_CHUNK f64. */
export const EW_X_OFF = 0;
/** Undecided indices of the chunk: EW_CHUNK i32. */
export const EW_U_OFF: number = EW_X_OFF + EW_CHUNK * 8;
/** First byte free for the kernel's tables and constants (up to 65536). */
export const EW_DATA_OFF: number = EW_U_OFF + EW_CHUNK * 4;

/**
 * A kernel's constant region: `values[name]` at index `slots[name]` for every slot but `COUNT`, the region's
 * length in f64 (wasm-exp.ts, wasm-ln.ts).
 */
export function slotValues<K extends { readonly COUNT: number }>(slots: K, values: Readonly<Record<Exclude<keyof K, 'COUNT'>, number>>): Float64Array {
  const v = new Float64Array(slots.COUNT);
  for (const name of Object.keys(slots) as (keyof K)[]) if (name !== 'COUNT') v[slots[name] as number] = values[name as Exclude<keyof K, 'COUNT'>];
  return v;
}

/** Locals of the pair loop, numbered by the kernel (parameter n is local 0). */
export interface PairLoopLocals {
  /** i32 scratch: element index, byte pointer, undecided count, bitmask. */
  readonly i: number;
  readonly p: number;
  readonly cnt: number;
  readonly bm: number;
  /** v128: the two arguments (loaded before `body`), the results and the decided mask (set by `body`). */
  readonly x: number;
  readonly res: number;
  readonly ok: number;
}

/**
 * Emits the loop over pairs of elements: loads x from memory, runs `body`
 * (which sets `res` and the all-ones-per-decided-lane mask `ok`), stores
 * `ok ? res : x` in place and records the undecided indices (< n) in
 * increasing order at EW_U_OFF; the function's result is their number. For
 * odd n the last pair's second lane is computed but ignored.
 */
export function emitPairLoop(e: Code, L: PairLoopLocals, body: () => void): void {
  const n = 0;
  e.i32(0).set(L.cnt);
  e.i32(0).set(L.i);
  e.i32(EW_X_OFF).set(L.p);
  e.whileLess(L.i, n, () => {
    e.get(L.p).v128Load().set(L.x);
    body();
    e.get(L.p).get(L.res).get(L.x).get(L.ok).bitselect().v128Store();
    // record undecided lanes (rare)
    e.get(L.ok).i64x2Bitmask().tee(L.bm).i32(3).ne().if();
    {
      // lane 0 (always < n)
      e.get(L.bm).i32(1).and().i32(0).eq().if();
      e.get(L.cnt).i32(2).shl().i32(EW_U_OFF).add().get(L.i).i32Store();
      e.get(L.cnt).i32(1).add().set(L.cnt);
      e.end();
      // lane 1, if i + 1 < n
      e.get(L.bm).i32(2).and().i32(0).eq().get(L.i).i32(1).add().get(n).ltS().and().if();
      e.get(L.cnt).i32(2).shl().i32(EW_U_OFF).add().get(L.i).i32(1).add().i32Store();
      e.get(L.cnt).i32(1).add().set(L.cnt);
      e.end();
    }
    e.end();
    e.get(L.i).i32(2).add().set(L.i);
    e.get(L.p).i32(16).add().set(L.p);
  });
  e.get(L.cnt);
  e.end(); // function end
}

/**
 * The module bytes of an element-wise kernel: one exported function `name`
 * (i32 n → i32 count) with the given locals and code, and one exported memory
 * of exactly one page.
 */
export function elementwiseModuleBytes(fn: string, i32Locals: number, v128Locals: number, code: Code): Uint8Array {
  const locals = [...uleb(2), ...uleb(i32Locals), I32, ...uleb(v128Locals), V128];
  const body = [...locals, ...code.bytes];
  const type = [1, 0x60, 1, I32, 1, I32];
  const func = [1, 0];
  const memory = [1, 0x01, 1, 1];
  const exports = [2, ...name(fn), 0x00, 0, ...name('memory'), 0x02, 0];
  const codeSection = [1, ...uleb(body.length), ...body];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, type),
    ...section(3, func),
    ...section(5, memory),
    ...section(7, exports),
    ...section(10, codeSection),
  ]);
}

/** One exported function of {@link importedMemoryModuleBytes}. */
export interface WasmFunctionSpec {
  /** Export name. */
  readonly name: string;
  /** Parameter value types. */
  readonly params: readonly number[];
  /** Result value types. */
  readonly results: readonly number[];
  /** Local declarations after the parameters: (count, value type) groups. */
  readonly locals: readonly (readonly [number, number])[];
  /** The body's instructions, ending with `end`. */
  readonly body: readonly number[];
}

/** Pages a shared memory import declares as its maximum: 4 GiB, all of wasm32 (the memory given may be smaller). */
const SHARED_MAXIMUM_PAGES = 65536;

/**
 * The import of "env" "memory": at least one page; no maximum, or when
 * `shared` a shared memory of at most {@link SHARED_MAXIMUM_PAGES} (a shared
 * memory must declare one).
 *
 * @param shared - import a shared memory.
 * @returns the import section's bytes.
 */
export function memoryImportSection(shared: boolean): number[] {
  const limits = shared ? [0x03, 1, ...uleb(SHARED_MAXIMUM_PAGES)] : [0x00, 1];
  return section(2, [1, ...name('env'), ...name('memory'), 0x02, ...limits]);
}

/**
 * The module bytes of kernels on an imported memory ("env" "memory", see
 * {@link memoryImportSection}: the caller's memory, e.g. a kernel arena's):
 * the given functions, each exported under its name, function i of type i.
 *
 * @param fns - the functions.
 * @param shared - import a shared memory (a worker's arena, which other threads read).
 * @returns the module bytes.
 */
export function importedMemoryModuleBytes(fns: readonly WasmFunctionSpec[], shared = false): Uint8Array {
  const types: number[] = [...uleb(fns.length)];
  for (const f of fns) types.push(0x60, ...uleb(f.params.length), ...f.params, ...uleb(f.results.length), ...f.results);
  const exports: number[] = [...uleb(fns.length)];
  fns.forEach((f, i) => exports.push(...name(f.name), 0x00, ...uleb(i)));
  const bodies: number[] = [...uleb(fns.length)];
  for (const f of fns) {
    const body = [...uleb(f.locals.length), ...f.locals.flatMap(([n, t]) => [...uleb(n), t]), ...f.body];
    bodies.push(...uleb(body.length), ...body);
  }
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, types),
    ...memoryImportSection(shared),
    ...section(3, [...uleb(fns.length), ...fns.flatMap((_, i) => uleb(i))]),
    ...section(7, exports),
    ...section(10, bodies),
  ]);
}

/**
 * Compiles module bytes synchronously (kernel modules are small enough for a
 * browser's main thread).
 * @param bytes - the module bytes.
 * @returns the module, or null without WebAssembly (SIMD) or when the bytes do not validate.
 */
export function compileModule(bytes: Uint8Array): object | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    return api !== undefined && api.validate(bytes) ? new api.Module(bytes) : null;
  } catch {
    return null;
  }
}

/**
 * What `make` gives for a module on an unshared and on a shared memory, each
 * made once, on first use (the compiled modules of a kernel that runs on both).
 * @param make - makes it for one kind of memory.
 * @returns the memoized maker.
 */
export function perMemoryKind<T>(make: (shared: boolean) => T): (shared: boolean) => T {
  const made: { value: T }[] = [];
  return (shared) => {
    const i = shared ? 1 : 0;
    made[i] ??= { value: make(shared) };
    return made[i].value;
  };
}

/**
 * A memory of exactly `pages` 64 KiB pages that never grows (views of it stay attached).
 * @param pages - its size.
 * @param shared - a shared memory (other threads may run kernels on it).
 * @returns the memory.
 * @throws what the WebAssembly API throws when it cannot be had (no WebAssembly: a TypeError).
 */
export function fixedMemory(pages: number, shared = false): WasmMemory {
  const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
  if (api === undefined) throw new TypeError('no WebAssembly here');
  return new api.Memory({ initial: pages, maximum: pages, ...(shared ? { shared: true } : {}) });
}

/** One thread's instance of an element-wise kernel: the function and views of its memory. */
export interface ElementwiseKernel {
  readonly run: (n: number) => number;
  readonly f64: Float64Array;
  readonly i32: Int32Array;
}

/**
 * Instantiates an element-wise kernel synchronously (the module is small
 * enough for synchronous compilation on a browser's main thread), lets `init`
 * fill its tables and constants, or returns null without WebAssembly SIMD.
 */
export function instantiateElementwise(bytes: Uint8Array, fn: string, init: (f64: Float64Array) => void): ElementwiseKernel | null {
  try {
    const api = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    const module = compileModule(bytes);
    if (api === undefined || module === null) return null;
    const instance = new api.Instance(module, {});
    const buffer = (instance.exports.memory as WasmMemory).buffer;
    const f64 = new Float64Array(buffer);
    init(f64);
    return { run: instance.exports[fn] as (n: number) => number, f64, i32: new Int32Array(buffer) };
  } catch {
    return null;
  }
}

/**
 * Whether no two of `arrays` share an element: the condition of the
 * element-wise kernels that copy chunks in, compute and copy them out. Views
 * of one buffer (a kernel arena's activations) qualify when their byte ranges
 * are apart.
 * @param arrays - the kernel's inputs and outputs.
 * @returns true when every pair is disjoint.
 */
export function disjointViews(arrays: readonly Float64Array[]): boolean {
  for (let a = 0; a < arrays.length; a++) {
    const x = arrays[a] as Float64Array;
    for (let c = a + 1; c < arrays.length; c++) {
      const y = arrays[c] as Float64Array;
      if (x.buffer === y.buffer && x.byteOffset < y.byteOffset + y.byteLength && y.byteOffset < x.byteOffset + x.byteLength) return false;
    }
  }
  return true;
}

/** Below this many elements a chunk is copied element by element (no subarray views). */
const SMALL = 32;

/**
 * Runs an element-wise kernel over n elements in chunks of EW_CHUNK: decided
 * results to out, undecided indices (relative to the offsets, increasing) to
 * `undecided`, their slots in out receiving the argument unchanged; returns
 * their number. Without the kernel (null) every index is undecided and out is
 * not written.
 */
export function runElementwise(
  k: ElementwiseKernel | null,
  out: Float64Array,
  outOff: number,
  x: Float64Array,
  xOff: number,
  n: number,
  undecided: Int32Array,
): number {
  if (k === null) {
    for (let i = 0; i < n; i++) undecided[i] = i;
    return n;
  }
  const { f64, i32 } = k;
  const xb0 = EW_X_OFF / 8;
  const ub0 = EW_U_OFF / 4;
  let count = 0;
  for (let base = 0; base < n; base += EW_CHUNK) {
    const m = Math.min(EW_CHUNK, n - base);
    const xb = xOff + base;
    if (m < SMALL) {
      for (let i = 0; i < m; i++) f64[xb0 + i] = x[xb + i] as number;
    } else {
      f64.set(x.subarray(xb, xb + m), xb0);
    }
    const c = k.run(m);
    const ob = outOff + base;
    if (m < SMALL) {
      for (let i = 0; i < m; i++) out[ob + i] = f64[xb0 + i] as number;
    } else {
      out.set(f64.subarray(xb0, xb0 + m), ob);
    }
    for (let t = 0; t < c; t++) undecided[count++] = base + (i32[ub0 + t] as number);
  }
  return count;
}
