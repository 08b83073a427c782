/**
 * A 329-byte WebAssembly kernel for 64-bit FNV-1a (../../SPEC.md §3.1).
 *
 * FNV-1a is a strictly serial chain (`h = (h ^ b) * prime` per byte), so its
 * speed is the latency of one 64-bit xor + multiply. Plain JavaScript has no
 * 64-bit integer multiply and needs four 16-bit or two 32-bit limb products per
 * byte (~0.25–0.4 GB/s); one `i64.mul` per byte in WebAssembly reaches the
 * native speed (~0.7 GB/s here).
 *
 * The module is assembled below from named opcodes (no toolchain, no binary
 * blob): it exports a fixed 17-page memory (no growth, so views never
 * detach) and one function
 *
 * ```wat
 * (func (export "fnv") (param $ptr i32) (param $len i32) (param $hi i32) (param $lo i32)
 *   (local $h i64) (local $w i64) (local $end i32)
 *   h = (u64(hi) << 32) | u64(lo);  end = ptr + len
 *   while (end - ptr >= 8) {            ;; 8 bytes per iteration, one unaligned load
 *     w = i64.load(ptr)
 *     h = (h ^ (w & 0xff)) * PRIME;  h = (h ^ ((w >> 8) & 0xff)) * PRIME;  ... (8×)
 *     ptr += 8 }
 *   while (ptr < end) { h = (h ^ i64.load8_u(ptr)) * PRIME; ptr += 1 }
 *   i64.store(0, h))                     ;; result at bytes 0..7
 * ```
 *
 * Data is staged at {@link KERNEL_DATA_OFFSET} in chunks of at most
 * {@link KERNEL_CHUNK_BYTES}. Tests compare it with a BigInt reference.
 */
import { BLOCK, BR, BR_IF, END, I32_ADD, I32_CONST, I32_GE_U, I32_LT_U, I32_SUB, I64_AND, I64_CONST, I64_EXTEND_I32_U, I64_LOAD, I64_LOAD8_U, I64_MUL, I64_OR, I64_SHL, I64_SHR_U, I64_STORE, I64_XOR, LOCAL_GET, LOCAL_SET, LOOP, T_I32, T_I64, VOID } from './wasm-opcodes.ts';

/** Where callers copy input bytes in the kernel memory. */
export const KERNEL_DATA_OFFSET = 16;
/** Largest chunk hashed per call. */
export const KERNEL_CHUNK_BYTES: number = 1 << 20;
const PAGES = 17; // 17 × 64 KiB ≥ 16 + 1 MiB

// Opcodes (WebAssembly core spec §5.4).

// Locals: 0 ptr, 1 len, 2 hi, 3 lo (params); 4 h, 5 w (i64); 6 end (i32).
const PTR = 0;
const LEN = 1;
const HI = 2;
const LO = 3;
const H = 4;
const W = 5;
const ENDP = 6;

/** Signed LEB128 of an i64 constant. */
export function sleb(value: bigint): number[] {
  let v = BigInt.asIntN(64, value);
  const out: number[] = [];
  for (;;) {
    const byte = Number(v & 0x7fn);
    v >>= 7n;
    const done = (v === 0n && (byte & 0x40) === 0) || (v === -1n && (byte & 0x40) !== 0);
    out.push(done ? byte : byte | 0x80);
    if (done) return out;
  }
}

/** Unsigned LEB128. */
export function uleb(value: number): number[] {
  const out: number[] = [];
  let v = value;
  do {
    const byte = v & 0x7f;
    v >>>= 7;
    out.push(v !== 0 ? byte | 0x80 : byte);
  } while (v !== 0);
  return out;
}

const PRIME = sleb(0x100000001b3n);

function functionBody(): number[] {
  const b: number[] = [];
  // h = (u64(hi) << 32) | u64(lo)
  b.push(LOCAL_GET, HI, I64_EXTEND_I32_U, I64_CONST, 32, I64_SHL, LOCAL_GET, LO, I64_EXTEND_I32_U, I64_OR, LOCAL_SET, H);
  // end = ptr + len
  b.push(LOCAL_GET, PTR, LOCAL_GET, LEN, I32_ADD, LOCAL_SET, ENDP);
  // 8-byte loop
  b.push(BLOCK, VOID, LOOP, VOID);
  b.push(LOCAL_GET, ENDP, LOCAL_GET, PTR, I32_SUB, I32_CONST, 8, I32_LT_U, BR_IF, 1);
  b.push(LOCAL_GET, PTR, I64_LOAD, 0, 0, LOCAL_SET, W);
  for (let k = 0; k < 8; k++) {
    b.push(LOCAL_GET, H, LOCAL_GET, W);
    if (k > 0) b.push(I64_CONST, ...sleb(BigInt(8 * k)), I64_SHR_U);
    b.push(I64_CONST, ...sleb(0xffn), I64_AND, I64_XOR, I64_CONST, ...PRIME, I64_MUL, LOCAL_SET, H);
  }
  b.push(LOCAL_GET, PTR, I32_CONST, 8, I32_ADD, LOCAL_SET, PTR, BR, 0, END, END);
  // byte tail
  b.push(BLOCK, VOID, LOOP, VOID);
  b.push(LOCAL_GET, PTR, LOCAL_GET, ENDP, I32_GE_U, BR_IF, 1);
  b.push(LOCAL_GET, H, LOCAL_GET, PTR, I64_LOAD8_U, 0, 0, I64_XOR, I64_CONST, ...PRIME, I64_MUL, LOCAL_SET, H);
  b.push(LOCAL_GET, PTR, I32_CONST, 1, I32_ADD, LOCAL_SET, PTR, BR, 0, END, END);
  // store h at address 0
  b.push(I32_CONST, 0, LOCAL_GET, H, I64_STORE, 3, 0, END);
  const locals = [2, 2, T_I64, 1, T_I32];
  return [...locals, ...b];
}

/** A module section: id, LEB128 size, content. */
export function section(id: number, content: number[]): number[] {
  return [id, ...uleb(content.length), ...content];
}

/** A WebAssembly name: length then ASCII bytes. */
export function ascii(name: string): number[] {
  return [name.length, ...Array.from(name, (c) => c.charCodeAt(0))];
}

/**
 * Assembles the module bytes.
 * @param sharedMemoryPages - when given, the module imports a shared memory
 *   `env.memory` of exactly this many pages instead of defining its own (for
 *   a worker that hashes bytes another thread writes into that memory).
 * @returns the module bytes.
 */
export function fnvKernelBytes(sharedMemoryPages?: number): Uint8Array<ArrayBuffer> {
  const body = functionBody();
  const memory =
    sharedMemoryPages === undefined
      ? section(5, [1, 1, PAGES, PAGES]) // memory, min = max = 17 pages
      : [];
  const imports =
    sharedMemoryPages === undefined
      ? []
      : section(2, [1, ...ascii('env'), ...ascii('memory'), 2, 3, ...uleb(sharedMemoryPages), ...uleb(sharedMemoryPages)]); // shared, min = max
  const exports = sharedMemoryPages === undefined ? [2, ...ascii('memory'), 2, 0, ...ascii('fnv'), 0, 0] : [1, ...ascii('fnv'), 0, 0];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
    ...section(1, [1, 0x60, 4, T_I32, T_I32, T_I32, T_I32, 0]), // type: (i32 i32 i32 i32) -> ()
    ...imports,
    ...section(3, [1, 0]), // one function of type 0
    ...memory,
    ...section(7, exports),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

/** The instantiated kernel: staging memory, result view and entry point. */
export interface FnvKernel {
  readonly memory: Uint8Array;
  /** Little-endian result: lo at byte 0, hi at byte 4. */
  readonly result: DataView;
  readonly fnv: (ptr: number, len: number, hi: number, lo: number) => void;
}

/**
 * The slice of the WebAssembly JS API used here, typed locally so this file
 * compiles with or without the DOM library.
 */
interface WasmApi {
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
}

/**
 * Instantiates a small kernel module synchronously (allowed for modules under
 * 4 KiB on browser main threads), or returns null when WebAssembly is
 * unavailable or refuses the module — the one home of this step for the
 * format's kernels.
 *
 * @param bytes - the module.
 * @returns its memory and exports, or null.
 */
export function instantiateKernel(bytes: Uint8Array): { readonly buffer: ArrayBuffer; readonly exports: Record<string, unknown> } | null {
  try {
    const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    if (wasm === undefined) return null;
    const instance = new wasm.Instance(new wasm.Module(bytes), {});
    return { buffer: (instance.exports['memory'] as { readonly buffer: ArrayBuffer }).buffer, exports: instance.exports };
  } catch {
    return null;
  }
}

let kernel: FnvKernel | null | undefined;

/**
 * The kernel, instantiated on first use; `null` when WebAssembly is
 * unavailable (the caller then uses the JavaScript loop).
 * @returns the kernel or null.
 */
export function fnvKernel(): FnvKernel | null {
  if (kernel !== undefined) return kernel;
  const k = instantiateKernel(fnvKernelBytes());
  kernel = k === null ? null : { memory: new Uint8Array(k.buffer), result: new DataView(k.buffer, 0, 8), fnv: k.exports['fnv'] as FnvKernel['fnv'] };
  return kernel;
}

/** Test hook: force the JavaScript fallback (`true`) or re-enable the kernel (`false`). */
export function disableFnvKernelForTesting(disabled: boolean): void {
  kernel = disabled ? null : undefined;
}
