/**
 * The final decoder check (../SPEC.md §9.8): the decoded state re-encoded must
 * reproduce the input byte for byte; otherwise FORMAT_NON_CANONICAL.
 */
import { FormatError } from './errors.ts';
import type { RawHeader } from './header.ts';
import { firstDifference } from './internal/bytes.ts';
import type { CheckpointPlan } from './plan.ts';
import { CHECKSUM_OFFSET, GROUP_LISTS_OFFSET } from './tags.ts';

function where(header: RawHeader, offset: number): string {
  if (header.groups !== null && offset >= GROUP_LISTS_OFFSET && offset < header.optimizerStepOffset) return 'parameter-group lists (names must be sorted byte-wise)';
  for (const d of header.descriptors) {
    if (offset >= d.entryOffset && offset < d.entryOffset + d.entryLength) {
      return `descriptor[${d.index}] ("${d.name}") entry (optimizer records must be sorted byte-wise by name, first moment then second)`;
    }
  }
  return 'header';
}

/** The re-encoding differs from the input at `offset`: `bytes` = [the re-encoding's byte, the input's byte] there (undefined past an end). */
function nonCanonical(header: RawHeader, offset: number, bytes: readonly [expected: number | undefined, found: number | undefined]): FormatError {
  const [expected, found] = bytes;
  const hex = (v: number | undefined): string => (v === undefined ? 'end of file' : `0x${v.toString(16).padStart(2, '0')}`);
  return new FormatError(
    'FORMAT_NON_CANONICAL',
    `file is not canonical: re-encoding the decoded state differs at offset ${offset} in the ${where(header, offset)}: expected ${hex(expected)}, found ${hex(found)}`,
    { reason: 're-encoding-differs', offset, field: where(header, offset), expected: hex(expected), found: hex(found) },
  );
}

/**
 * Compares the re-encoded header with the input header. The checksum field
 * is skipped: the re-encoding's checksum is the FNV-1a of its own bytes with
 * the field zeroed, which equals the input's verified checksum exactly when
 * every other byte is equal — the condition being checked.
 *
 * @param plan - the plan of the re-encoded state.
 * @param header - the parsed input header (for messages).
 * @param inputHeader - the input's first `header_bytes` bytes.
 * @throws FormatError FORMAT_NON_CANONICAL at the first differing byte.
 */
export function assertCanonicalHeader(plan: CheckpointPlan, header: RawHeader, inputHeader: Uint8Array): void {
  const mine = plan.header;
  const parts: [number, number][] = [
    [0, CHECKSUM_OFFSET],
    [CHECKSUM_OFFSET + 8, Math.max(mine.length, inputHeader.length)],
  ];
  for (const [from, to] of parts) {
    const a = mine.subarray(from, Math.min(to, mine.length));
    const b = inputHeader.subarray(from, Math.min(to, inputHeader.length));
    const at = firstDifference(a, b);
    if (at >= 0) throw nonCanonical(header, from + at, [a[at], b[at]]);
    if (a.length !== b.length) throw nonCanonical(header, from + Math.min(a.length, b.length), [a[Math.min(a.length, b.length)], b[Math.min(a.length, b.length)]]);
  }
}

/**
 * Full-byte comparison of the re-encoding with the input (header as in
 * {@link assertCanonicalHeader}, then every payload record) without building
 * a second copy of the file.
 *
 * A record whose re-encoded bytes are exactly a view in `proven` (same
 * buffer, offset and length, at the same file position) was already compared
 * with its file region byte for byte while it was hashed (the fused kernel's
 * comparison, or a zero-copy view of the input itself), so it is not compared
 * a second time.
 *
 * @param plan - the plan of the re-encoded state.
 * @param header - the parsed input header.
 * @param file - the whole input file (`bytes`) and, per descriptor index, bytes already proven equal to the file region at that descriptor's offset (`proven`).
 * @throws FormatError FORMAT_NON_CANONICAL at the first differing byte.
 */
export function assertCanonicalFile(plan: CheckpointPlan, header: RawHeader, file: { readonly bytes: Uint8Array; readonly proven?: readonly (Uint8Array | undefined)[] }): void {
  const { bytes: input, proven = [] } = file;
  assertCanonicalHeader(plan, header, input.subarray(0, Number(header.headerBytes)));
  let position = plan.header.length;
  for (const [i, record] of plan.records.entries()) {
    const region = input.subarray(position, position + record.length);
    const same = proven[i];
    if (same !== undefined && same.buffer === record.buffer && same.byteOffset === record.byteOffset && same.length === record.length && Number(header.descriptors[i]?.offset ?? -1) === position) {
      position += record.length;
      continue;
    }
    const at = firstDifference(record, region);
    if (at >= 0) throw nonCanonical(header, position + at, [record[at], region[at]]);
    if (region.length !== record.length) throw nonCanonical(header, position + region.length, [record[region.length], undefined]);
    position += record.length;
  }
  if (position !== input.length) throw nonCanonical(header, position, [undefined, input[position]]);
}
