/**
 * Layout evidence of a decoded file (../SPEC.md §3–§5, §12): header fields,
 * every descriptor with where its entry lies in the header and where its
 * record lies in the payload, sizes and the checksum label.
 */
import { checksumLabel } from './fnv1a64.ts';
import type { RawHeader } from './header.ts';
import { TOKENIZER_KIND_NAMES, type RecordDType, type RecordRole } from './tags.ts';
import type { CheckpointState } from './types.ts';

/** One descriptor of a valid file. All offsets are absolute byte positions. */
export interface DescriptorLayout {
  /** Position in the descriptor table (= payload order). */
  readonly index: number;
  readonly role: RecordRole;
  readonly roleTag: number;
  readonly name: string;
  readonly dtype: RecordDType;
  readonly dtypeTag: number;
  readonly shape: readonly number[];
  /** Payload record: first byte, length and end (exclusive). */
  readonly offset: number;
  readonly byteLength: number;
  readonly end: number;
  /** The descriptor entry itself inside the header: first byte and length. */
  readonly entryOffset: number;
  readonly entryLength: number;
}

/** Header fields and geometry of a valid file. */
export interface CheckpointLayout {
  readonly fileLength: number;
  readonly formatVersion: number;
  readonly endianMarker: number;
  /** Fixed + variable header length (../SPEC.md §4.3). */
  readonly headerBytes: number;
  readonly payloadBytes: number;
  /** Stored (and verified) checksum value. */
  readonly checksum: bigint;
  /** `fnv1a64:%016x` of {@link CheckpointLayout.checksum}. */
  readonly checksumLabel: string;
  readonly tokenizerLayoutVersion: number;
  readonly rngAlgorithmVersion: number;
  readonly tokenizerKindTag: number;
  /** The reference's report name: `literal-u32` or `byte-bpe`. */
  readonly tokenizerKindName: 'literal-u32' | 'byte-bpe';
  readonly tokenizerVocabulary: number;
  /** 0 = no parameter groups, 1 = groups present. */
  readonly groupsFlag: number;
  readonly modelParameterCount: number;
  readonly optimizerStateCount: number;
  readonly descriptorCount: number;
  /** Offset of the descriptor count field (entries start 4 bytes later). */
  readonly descriptorCountOffset: number;
  readonly descriptors: readonly DescriptorLayout[];
}

/** A decoded, fully validated checkpoint: the state plus the layout it was read from. */
export interface DecodedCheckpoint extends CheckpointState {
  readonly layout: CheckpointLayout;
}

/**
 * Builds the layout of a validated header (every value is then bounded by the file size).
 * @param header - a header that passed validation.
 * @param fileLength - file length.
 * @returns the layout.
 */
export function layoutFromHeader(header: RawHeader, fileLength: number): CheckpointLayout {
  return {
    fileLength,
    formatVersion: header.formatVersion,
    endianMarker: header.endianMarker,
    headerBytes: Number(header.headerBytes),
    payloadBytes: Number(header.payloadBytes),
    checksum: header.storedChecksum,
    checksumLabel: checksumLabel(header.storedChecksum),
    tokenizerLayoutVersion: header.tokenizerLayoutVersion,
    rngAlgorithmVersion: header.rngAlgorithmVersion,
    tokenizerKindTag: header.tokenizerKindTag,
    tokenizerKindName: TOKENIZER_KIND_NAMES[header.tokenizerKindTag as 1 | 2],
    tokenizerVocabulary: Number(header.tokenizerVocabulary),
    groupsFlag: header.groupsFlag,
    modelParameterCount: header.modelParameterCount,
    optimizerStateCount: header.optimizerStateCount,
    descriptorCount: header.descriptorCount,
    descriptorCountOffset: header.descriptorCountOffset,
    descriptors: header.descriptors.map(
      (d): DescriptorLayout => ({
        index: d.index,
        role: d.role as RecordRole,
        roleTag: d.roleTag,
        name: d.name,
        dtype: d.dtype as RecordDType,
        dtypeTag: d.dtypeTag,
        shape: d.shape.map(Number),
        offset: Number(d.offset),
        byteLength: Number(d.byteLength),
        end: Number(d.offset + d.byteLength),
        entryOffset: d.entryOffset,
        entryLength: d.entryLength,
      }),
    ),
  };
}
