/**
 * A fused WebAssembly kernel: 64-bit FNV-1a (../../SPEC.md §3.1) over a byte range
 * that, in the same loop, screens every 8-byte little-endian word as an f64.
 *
 * FNV-1a is latency-bound (one dependent xor + 64-bit multiply per byte), so
 * the screening — two independent bit tests per word, accumulated into flags
 * — runs in the multiplier's shadow: hashing a record and checking it costs
 * one pass over its bytes instead of two or three.
 *
 * ```wat
 * (func (export "scan") (param $ptr i32) (param $len i32) (param $hi i32) (param $lo i32)
 *   h = (u64(hi) << 32) | u64(lo);  end = ptr + len;  bad = 0;  neg = 0
 *   while (end - ptr >= 8) {
 *     w = i64.load(ptr)
 *     h = (h ^ (w & 0xff)) * PRIME; ... (8×, as the plain kernel)
 *     bad |= (((w >> 52) & 0x7ff) + 1) >> 11     ;; 1 iff the exponent is all ones (±∞, NaN)
 *     neg |= u64(w >u 0x8000000000000000)          ;; 1 iff sign set and not −0 (a value < 0, or a negative NaN)
 *     ptr += 8 }
 *   while (ptr < end) { h = (h ^ i64.load8_u(ptr)) * PRIME; ptr += 1 }
 *   i64.store(0, h);  i64.store(8, bad | (neg << 1)))
 * ```
 *
 * The flags are a screen, not a verdict: a zero bit proves the range holds no
 * such word, a set bit sends the caller to the exact JavaScript search (which
 * finds the index and reports the error). Words are taken from the start of
 * the range, so a range that starts at an f64 record's first byte screens its
 * elements exactly. Tests compare hash and flags with references.
 */
import { ascii, instantiateKernel, section, sleb, uleb } from './fnv1a64-wasm.ts';
import { BLOCK, BR, BR_IF, END, I32_ADD, I32_CONST, I32_GE_U, I32_LT_U, I32_SUB, I64_ADD, I64_AND, I64_CONST, I64_EXTEND_I32_U, I64_GT_U, I64_LOAD, I64_LOAD8_U, I64_MUL, I64_NE, I64_OR, I64_SHL, I64_SHR_U, I64_STORE, I64_XOR, LOCAL_GET, LOCAL_SET, LOOP, T_I32, T_I64, VOID } from './wasm-opcodes.ts';

/** Where callers copy input bytes in the kernel memory. */
export const SCAN_DATA_OFFSET = 16;
/** Largest range screened per call (a multiple of 8, so records split into chunks keep element alignment). */
export const SCAN_CHUNK_BYTES: number = 1 << 20;
/** Where `scancmp` callers copy the bytes to compare with. */
export const SCAN_OTHER_OFFSET: number = SCAN_DATA_OFFSET + (1 << 20);
const PAGES = 33; // 33 × 64 KiB ≥ 16 + 2 MiB

/** Flag bit: some word has an all-ones exponent (±∞ or NaN). */
export const SCAN_NON_FINITE = 1;
/** Flag bit: some word has its sign bit set and is not −0. */
export const SCAN_NEGATIVE = 2;
/** Flag bit (`scancmp`): the two ranges differ somewhere. */
export const SCAN_DIFFERS = 4;


// Locals of `scan`: 0 ptr, 1 len, 2 hi, 3 lo (params); then h, w, bad, neg (i64); end (i32).
// `scancmp` has a fifth param (other) and one more i64 local (diff).
const PTR = 0;
const LEN = 1;
const HI = 2;
const LO = 3;

const PRIME = sleb(0x100000001b3n);

function functionBody(compare: boolean): number[] {
  const OTHER = 4;
  const H = compare ? 5 : 4;
  const W = H + 1;
  const BAD = H + 2;
  const NEG = H + 3;
  const DIFF = H + 4; // scancmp only
  const ENDP = compare ? H + 5 : H + 4;
  const b: number[] = [];
  b.push(LOCAL_GET, HI, I64_EXTEND_I32_U, I64_CONST, 32, I64_SHL, LOCAL_GET, LO, I64_EXTEND_I32_U, I64_OR, LOCAL_SET, H);
  b.push(LOCAL_GET, PTR, LOCAL_GET, LEN, I32_ADD, LOCAL_SET, ENDP);
  b.push(BLOCK, VOID, LOOP, VOID);
  b.push(LOCAL_GET, ENDP, LOCAL_GET, PTR, I32_SUB, I32_CONST, 8, I32_LT_U, BR_IF, 1);
  b.push(LOCAL_GET, PTR, I64_LOAD, 0, 0, LOCAL_SET, W);
  for (let k = 0; k < 8; k++) {
    b.push(LOCAL_GET, H, LOCAL_GET, W);
    if (k > 0) b.push(I64_CONST, ...sleb(BigInt(8 * k)), I64_SHR_U);
    b.push(I64_CONST, ...sleb(0xffn), I64_AND, I64_XOR, I64_CONST, ...PRIME, I64_MUL, LOCAL_SET, H);
    if (k === 1) {
      // bad |= (((w >> 52) & 0x7ff) + 1) >> 11
      b.push(LOCAL_GET, BAD, LOCAL_GET, W, I64_CONST, 52, I64_SHR_U, I64_CONST, ...sleb(0x7ffn), I64_AND, I64_CONST, 1, I64_ADD, I64_CONST, 11, I64_SHR_U, I64_OR, LOCAL_SET, BAD);
    } else if (k === 3) {
      // neg |= u64(w >u 0x8000000000000000)
      b.push(LOCAL_GET, NEG, LOCAL_GET, W, I64_CONST, ...sleb(0x8000000000000000n), I64_GT_U, I64_EXTEND_I32_U, I64_OR, LOCAL_SET, NEG);
    } else if (k === 5 && compare) {
      // diff |= w ^ i64.load(other); other += 8
      b.push(LOCAL_GET, DIFF, LOCAL_GET, W, LOCAL_GET, OTHER, I64_LOAD, 0, 0, I64_XOR, I64_OR, LOCAL_SET, DIFF);
      b.push(LOCAL_GET, OTHER, I32_CONST, 8, I32_ADD, LOCAL_SET, OTHER);
    }
  }
  b.push(LOCAL_GET, PTR, I32_CONST, 8, I32_ADD, LOCAL_SET, PTR, BR, 0, END, END);
  b.push(BLOCK, VOID, LOOP, VOID);
  b.push(LOCAL_GET, PTR, LOCAL_GET, ENDP, I32_GE_U, BR_IF, 1);
  b.push(LOCAL_GET, H, LOCAL_GET, PTR, I64_LOAD8_U, 0, 0, I64_XOR, I64_CONST, ...PRIME, I64_MUL, LOCAL_SET, H);
  if (compare) {
    b.push(LOCAL_GET, DIFF, LOCAL_GET, PTR, I64_LOAD8_U, 0, 0, LOCAL_GET, OTHER, I64_LOAD8_U, 0, 0, I64_XOR, I64_OR, LOCAL_SET, DIFF);
    b.push(LOCAL_GET, OTHER, I32_CONST, 1, I32_ADD, LOCAL_SET, OTHER);
  }
  b.push(LOCAL_GET, PTR, I32_CONST, 1, I32_ADD, LOCAL_SET, PTR, BR, 0, END, END);
  b.push(I32_CONST, 0, LOCAL_GET, H, I64_STORE, 3, 0);
  // flags = bad | (neg << 1) | (u64(diff != 0) << 2)
  b.push(I32_CONST, 8, LOCAL_GET, BAD, LOCAL_GET, NEG, I64_CONST, 1, I64_SHL, I64_OR);
  if (compare) b.push(LOCAL_GET, DIFF, I64_CONST, 0, I64_NE, I64_EXTEND_I32_U, I64_CONST, 2, I64_SHL, I64_OR);
  b.push(I64_STORE, 3, 0, END);
  const locals = [2, compare ? 5 : 4, T_I64, 1, T_I32];
  return [...locals, ...b];
}

/**
 * Assembles the module bytes: its own memory, exports `memory`, `scan`
 * (hash + screen) and `scancmp` (hash + screen + compare with the bytes at
 * `other`, flag {@link SCAN_DIFFERS}).
 * @param sharedMemoryPages - when given, the module imports a shared memory
 *   `env.memory` of exactly this many pages instead of defining its own, and
 *   exports `scan` only (for a worker hashing bytes another thread writes
 *   into that memory; results at bytes 0..15 of it).
 * @returns the module bytes.
 */
export function scanKernelBytes(sharedMemoryPages?: number): Uint8Array<ArrayBuffer> {
  const scan = functionBody(false);
  if (sharedMemoryPages !== undefined) {
    return Uint8Array.from([
      0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
      ...section(1, [1, 0x60, 4, T_I32, T_I32, T_I32, T_I32, 0]),
      ...section(2, [1, ...ascii('env'), ...ascii('memory'), 2, 3, ...uleb(sharedMemoryPages), ...uleb(sharedMemoryPages)]), // shared, min = max
      ...section(3, [1, 0]),
      ...section(7, [1, ...ascii('scan'), 0, 0]),
      ...section(10, [1, ...uleb(scan.length), ...scan]),
    ]);
  }
  const scancmp = functionBody(true);
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, [2, 0x60, 4, T_I32, T_I32, T_I32, T_I32, 0, 0x60, 5, T_I32, T_I32, T_I32, T_I32, T_I32, 0]),
    ...section(3, [2, 0, 1]),
    ...section(5, [1, 1, ...uleb(PAGES), ...uleb(PAGES)]),
    ...section(7, [3, ...ascii('memory'), 2, 0, ...ascii('scan'), 0, 0, ...ascii('scancmp'), 0, 1]),
    ...section(10, [2, ...uleb(scan.length), ...scan, ...uleb(scancmp.length), ...scancmp]),
  ]);
}

/** The instantiated scanning kernel. */
export interface ScanKernel {
  readonly memory: Uint8Array;
  /** Little-endian: hash lo at 0, hi at 4, flags at 8. */
  readonly result: DataView;
  readonly scan: (ptr: number, len: number, hi: number, lo: number) => void;
  readonly scancmp: (ptr: number, len: number, hi: number, lo: number, other: number) => void;
}

let kernel: ScanKernel | null | undefined;

/**
 * The kernel, instantiated on first use; `null` without WebAssembly.
 * @returns the kernel or null.
 */
export function scanKernel(): ScanKernel | null {
  if (kernel !== undefined) return kernel;
  const k = instantiateKernel(scanKernelBytes());
  kernel =
    k === null
      ? null
      : { memory: new Uint8Array(k.buffer), result: new DataView(k.buffer, 0, 16), scan: k.exports['scan'] as ScanKernel['scan'], scancmp: k.exports['scancmp'] as ScanKernel['scancmp'] };
  return kernel;
}

/**
 * Test hook: force the fallback or re-enable the kernel.
 * @param disabled - `true` forces the JavaScript fallback, `false` re-enables the kernel.
 */
export function disableScanKernelForTesting(disabled: boolean): void {
  kernel = disabled ? null : undefined;
}
