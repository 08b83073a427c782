/**
 * The first 16 bytes of a file, split at field boundaries and explained
 * (../SPEC.md §3, §12.1): what a reader checks before anything else.
 */
import { hexBytes, quotedBytes } from './bits.ts';
import type { CheckpointInspection } from './inspect.ts';

/** One annotated span of the first 16 bytes of a file. */
export interface PrefixSpan {
  /** First byte offset of the span. */
  readonly start: number;
  /** Offset after the span's last byte (half-open range). */
  readonly end: number;
  /** `magic`, `format version`, `endian marker` or `header_bytes`. */
  readonly field: string;
  /** The span's bytes as space-separated hex pairs. */
  readonly hex: string;
  /** What the bytes mean, e.g. `u16 LE = 1` or `"LLMCP35\x00" (ok)`. */
  readonly meaning: string;
}

const PREFIX_FIELDS: readonly { start: number; end: number; field: string }[] = [
  { start: 0, end: 8, field: 'magic' },
  { start: 8, end: 10, field: 'format version' },
  { start: 10, end: 14, field: 'endian marker' },
  { start: 14, end: 22, field: 'header_bytes' },
];

/**
 * The first 16 bytes of a file split at field boundaries, each span with what
 * it means (a shorter file gives fewer or shorter spans).
 *
 * @param bytes - the file.
 * @param inspection - `inspectCheckpoint(bytes)` (its `headerBytes` is shown).
 * @returns the spans in file order.
 * @example
 * ```ts
 * prefixSpans(bytes, inspectCheckpoint(bytes))[1]; // { start: 8, end: 10, field: 'format version', hex: '01 00', meaning: 'u16 LE = 1' }
 * ```
 */
export function prefixSpans(bytes: Uint8Array, inspection: CheckpointInspection): PrefixSpan[] {
  const limit = Math.min(16, bytes.length);
  const spans: PrefixSpan[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (const { start, end: fieldEnd, field } of PREFIX_FIELDS) {
    if (start >= limit) break;
    const end = Math.min(fieldEnd, limit);
    const complete = end === fieldEnd;
    let meaning: string;
    if (field === 'magic') {
      const ok = complete && hexBytes(bytes.subarray(0, 8)) === '4c 4c 4d 43 50 33 35 00';
      meaning = `${quotedBytes(bytes.subarray(start, end))}${ok ? ' (ok)' : complete ? ', expected "LLMCP35\\x00"' : ' (cut short)'}`;
    } else if (field === 'format version') {
      meaning = complete ? `u16 LE = ${view.getUint16(8, true)}` : 'u16 LE (cut short)';
    } else if (field === 'endian marker') {
      meaning = complete ? `u32 LE = 0x${view.getUint32(10, true).toString(16).padStart(8, '0')}` : 'u32 LE (cut short)';
    } else {
      const total = inspection.headerBytes;
      meaning = `u64 LE, bytes ${start - 14 + 1}–${end - 14} of 8${total === null ? '' : ` (header_bytes = ${total})`}`;
    }
    spans.push({ start, end, field, hex: hexBytes(bytes.subarray(start, end)), meaning });
  }
  return spans;
}
