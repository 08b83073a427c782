/**
 * The WebAssembly opcodes and value types the format's hand-assembled kernels
 * use (the FNV-1a kernel and the fused scan kernel), defined once.
 */
/** `block` */
export const BLOCK = 0x02;
/** `loop` */
export const LOOP = 0x03;
/** `end` */
export const END = 0x0b;
/** `br` */
export const BR = 0x0c;
/** `br_if` */
export const BR_IF = 0x0d;
/** `local_get` */
export const LOCAL_GET = 0x20;
/** `local_set` */
export const LOCAL_SET = 0x21;
/** `i64.load` */
export const I64_LOAD = 0x29;
/** `i64.load8_u` */
export const I64_LOAD8_U = 0x31;
/** `i64.store` */
export const I64_STORE = 0x37;
/** `void` */
export const VOID = 0x40;
/** `i32.const` */
export const I32_CONST = 0x41;
/** `i64.const` */
export const I64_CONST = 0x42;
/** `i32.lt_u` */
export const I32_LT_U = 0x49;
/** `i32.ge_u` */
export const I32_GE_U = 0x4f;
/** `i64.ne` */
export const I64_NE = 0x52;
/** `i64.gt_u` */
export const I64_GT_U = 0x56;
/** `i32.add` */
export const I32_ADD = 0x6a;
/** `i32.sub` */
export const I32_SUB = 0x6b;
/** `i64.add` */
export const I64_ADD = 0x7c;
/** `i64.mul` */
export const I64_MUL = 0x7e;
/** value type `i64` */
export const T_I64 = 0x7e;
/** value type `i32` */
export const T_I32 = 0x7f;
/** `i64.and` */
export const I64_AND = 0x83;
/** `i64.or` */
export const I64_OR = 0x84;
/** `i64.xor` */
export const I64_XOR = 0x85;
/** `i64.shl` */
export const I64_SHL = 0x86;
/** `i64.shr_u` */
export const I64_SHR_U = 0x88;
/** `i64.extend_i32_u` */
export const I64_EXTEND_I32_U = 0xad;
