/**
 * Fixed constants and tag values of LLMCP35 v1 (../SPEC.md §3, §4.2).
 */

/** `LLMCP35\0`, the first eight bytes of every file (../SPEC.md §3). */
export const MAGIC: Uint8Array = Uint8Array.of(0x4c, 0x4c, 0x4d, 0x43, 0x50, 0x33, 0x35, 0x00);
/** The only format version this package reads and writes. */
export const FORMAT_VERSION = 1;
/** Endian marker value; stored little-endian as `04 03 02 01`. */
export const ENDIAN_MARKER = 0x01020304;
/** Length of the fixed header (../SPEC.md §3). */
export const FIXED_HEADER_BYTES = 38;
/** Offset of the 8-byte checksum field, hashed as zeros (../SPEC.md §3.1). */
export const CHECKSUM_OFFSET = 30;
/** Supported tokenizer layout version (../SPEC.md §4). */
export const TOKENIZER_LAYOUT_VERSION = 1;
/** Supported sampling RNG algorithm version: SplitMix64 (../SPEC.md §10). */
export const RNG_ALGORITHM_VERSION = 1;
/** Offset of the u64 selected step (../SPEC.md §4). */
export const SELECTED_STEP_OFFSET = 42;
/** Offset of the u64 tokenizer vocabulary (../SPEC.md §4). */
export const TOKENIZER_VOCABULARY_OFFSET = 59;
/** Offset of the u8 parameter-groups flag (../SPEC.md §4). */
export const GROUPS_FLAG_OFFSET = 171;
/** Offset of the parameter-group lists when the flag is 1: the u32 decay name count (../SPEC.md §4). */
export const GROUP_LISTS_OFFSET: number = GROUPS_FLAG_OFFSET + 1;
/** Offset of the first decay name's `string` field (after its u32 count). */
export const FIRST_GROUP_NAME_OFFSET: number = GROUP_LISTS_OFFSET + 4;
/** Header bytes that do not depend on groups or descriptors (../SPEC.md §4.3). */
export const BASE_HEADER_BYTES = 208;
/**
 * Largest `header_bytes` this implementation reads or writes: 64 MiB (../SPEC.md
 * §15.2). The header holds only names and descriptors — the golden file's is
 * 2869 bytes, a million literal tokens need about 40 MiB — and a larger one
 * is refused from the fixed header alone, before it is read or allocated.
 */
export const MAX_HEADER_BYTES: number = 2 ** 26;
/** Name of the single BPE record (../SPEC.md §5.1). */
export const BPE_RECORD_NAME = 'training-pairs';
/** Control ids reserved in a BPE vocabulary: vocabulary = 258 + merges (../SPEC.md §5.2). */
export const BPE_BASE_VOCABULARY = 258;

/** The reference's report names of the tokenizer kinds. */
export const TOKENIZER_KIND_NAMES = { 1: 'literal-u32', 2: 'byte-bpe' } as const;

/** Record role of a payload record. */
export type RecordRole = 'literal-token' | 'bpe-pairs' | 'model-parameter' | 'first-moment' | 'second-moment';
/** Element dtype of a payload record. */
export type RecordDType = 'u8' | 'u32' | 'f64';

/** Role tags (../SPEC.md §4.2). */
export const ROLE_TAGS: { readonly [K in RecordRole]: number } = {
  'literal-token': 1,
  'bpe-pairs': 2,
  'model-parameter': 3,
  'first-moment': 4,
  'second-moment': 5,
};
/** Dtype tags (../SPEC.md §4.2). */
export const DTYPE_TAGS: { readonly [K in RecordDType]: number } = { u8: 1, u32: 2, f64: 3 };
/** Element width in bytes of each dtype. */
export const DTYPE_WIDTHS: { readonly [K in RecordDType]: number } = { u8: 1, u32: 4, f64: 8 };

const ROLE_BY_TAG: readonly (RecordRole | undefined)[] = [undefined, 'literal-token', 'bpe-pairs', 'model-parameter', 'first-moment', 'second-moment'];
const DTYPE_BY_TAG: readonly (RecordDType | undefined)[] = [undefined, 'u8', 'u32', 'f64'];

/**
 * @param tag - a role tag from a descriptor.
 * @returns the role, or `undefined` for an unknown tag.
 */
export function roleOfTag(tag: number): RecordRole | undefined {
  return ROLE_BY_TAG[tag];
}

/**
 * @param tag - a dtype tag from a descriptor.
 * @returns the dtype, or `undefined` for an unknown tag.
 */
export function dtypeOfTag(tag: number): RecordDType | undefined {
  return DTYPE_BY_TAG[tag];
}

/** Largest u64. */
export const U64_MAX: bigint = (1n << 64n) - 1n;
/** Largest u32. */
export const U32_MAX = 0xffffffff;
