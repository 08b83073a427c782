/**
 * The split manifest and the fixed paired-document hold-out
 * (../../../docs/spec/tokenizer-and-data.md §1.5–1.6).
 */
import type { Corpus, CorpusDocument } from './corpus.ts';
import { DATA_ERROR_CODES, DataError } from './errors.ts';
import { parseStrictJson, StrictJsonError, type JsonNode } from './internal/strict-json.ts';

/** The only split strategy: a frozen, hand-written hold-out of whole documents, translations kept together. */
export const SPLIT_STRATEGY = 'fixed-paired-document-holdout-v1';

/** The partition names, in manifest order. */
export const PARTITION_NAMES = ['train', 'validation', 'test'] as const;

/** A partition name. */
export type PartitionName = (typeof PARTITION_NAMES)[number];

/** A parsed (not yet validated against a corpus) split manifest. */
export interface SplitManifest {
  /** `schema_version`; must be 1 to be used. */
  readonly schemaVersion: number;
  /** `corpus_checksum`; must equal the corpus checksum label. */
  readonly corpusChecksum: string;
  /** `strategy`; must be {@link SPLIT_STRATEGY}. */
  readonly strategy: string;
  /** Document ids of the training partition. */
  readonly train: readonly string[];
  /** Document ids of the validation partition. */
  readonly validation: readonly string[];
  /** Document ids of the test partition. */
  readonly test: readonly string[];
}

/** A corpus divided by a manifest: each partition's documents in source order. */
export interface CorpusPartitions {
  /** Training documents: the only ones BPE merges and bigram counts are learned from. */
  readonly train: readonly CorpusDocument[];
  /** Validation documents (model selection). */
  readonly validation: readonly CorpusDocument[];
  /** Test documents (the final evaluation). */
  readonly test: readonly CorpusDocument[];
}

function schemaError(message: string, node: JsonNode, field: string): DataError {
  return new DataError(DATA_ERROR_CODES.DATA_SPLIT_INVALID_SCHEMA, `invalid split manifest JSON at byte ${node.offset}: ${message}`, { offset: node.offset, field });
}

const MEMBERS = ['schema_version', 'corpus_checksum', 'strategy', 'train', 'validation', 'test'] as const;

/**
 * Parses a split manifest strictly (§1.5): exactly the six members, no
 * repeats, `schema_version` an unsigned 32-bit integer written as plain digits
 * (`1.0`, `1e0`, `-0`, `"1"`, negatives and values above 4294967295 are
 * errors), string members, arrays of strings.
 *
 * @param bytes - the manifest file's bytes.
 * @returns the manifest (validate it with {@link partitionCorpus}).
 * @throws DataError `DATA_SPLIT_INVALID_JSON` (with `offset`) or `DATA_SPLIT_INVALID_SCHEMA` (with `field`).
 */
export function parseSplitManifest(bytes: Uint8Array): SplitManifest {
  let root: JsonNode;
  try {
    root = parseStrictJson(bytes);
  } catch (e) {
    if (e instanceof StrictJsonError) {
      throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_INVALID_JSON, `invalid split manifest JSON at byte ${e.offset}: ${e.message}`, { offset: e.offset, cause: e });
    }
    throw e;
  }
  if (root.kind !== 'object') throw schemaError(`expected a top-level object, found ${root.kind}`, root, '(root)');
  const found = new Map<string, JsonNode>();
  for (const member of root.members) {
    if (!(MEMBERS as readonly string[]).includes(member.key)) {
      throw schemaError(`unknown member ${JSON.stringify(member.key)} (expected only ${MEMBERS.join(', ')})`, member.value, member.key);
    }
    found.set(member.key, member.value);
  }
  for (const name of MEMBERS) if (!found.has(name)) throw schemaError(`missing member ${name}`, root, name);
  const version = found.get('schema_version') as JsonNode;
  if (version.kind !== 'number') throw schemaError(`schema_version must be an unsigned integer, found ${version.kind}`, version, 'schema_version');
  if (!/^(?:0|[1-9][0-9]*)$/.test(version.raw) || Number(version.raw) > 0xffffffff) {
    throw schemaError(`schema_version must be an unsigned 32-bit integer written without sign, fraction or exponent, found ${version.raw}`, version, 'schema_version');
  }
  const text = (name: 'corpus_checksum' | 'strategy'): string => {
    const node = found.get(name) as JsonNode;
    if (node.kind !== 'string') throw schemaError(`${name} must be a string, found ${node.kind}`, node, name);
    return node.value;
  };
  const list = (name: PartitionName): string[] => {
    const node = found.get(name) as JsonNode;
    if (node.kind !== 'array') throw schemaError(`${name} must be an array of document ids, found ${node.kind}`, node, name);
    return node.items.map((item, i) => {
      if (item.kind !== 'string') throw schemaError(`${name}[${i}] must be a string, found ${item.kind}`, item, `${name}[${i}]`);
      return item.value;
    });
  };
  return {
    schemaVersion: Number(version.raw),
    corpusChecksum: text('corpus_checksum'),
    strategy: text('strategy'),
    train: list('train'),
    validation: list('validation'),
    test: list('test'),
  };
}

/**
 * Validates a manifest against a loaded corpus in the reference's order
 * (§1.5 steps 1–7; the first failure wins) and divides the corpus.
 *
 * @param corpus - from `parseCorpus`.
 * @param manifest - from {@link parseSplitManifest}.
 * @returns each partition's documents in source order.
 * @throws DataError `DATA_SPLIT_UNSUPPORTED_VERSION`, `DATA_SPLIT_UNSUPPORTED_STRATEGY`,
 *   `DATA_SPLIT_CHECKSUM_MISMATCH`, `DATA_SPLIT_EMPTY_PARTITION`, `DATA_SPLIT_ORDER`,
 *   `DATA_SPLIT_UNKNOWN_DOCUMENT`, `DATA_SPLIT_REPEATED_DOCUMENT`, `DATA_SPLIT_UNCOVERED_DOCUMENT`,
 *   `DATA_SPLIT_GROUP_SPLIT` (with `partition` and `documentId`).
 */
export function partitionCorpus(corpus: Corpus, manifest: SplitManifest): CorpusPartitions {
  if (manifest.schemaVersion !== 1) {
    throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_UNSUPPORTED_VERSION, `unsupported split schema version ${manifest.schemaVersion} (expected 1)`, { field: 'schema_version' });
  }
  if (manifest.strategy !== SPLIT_STRATEGY) {
    throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_UNSUPPORTED_STRATEGY, `unsupported split strategy ${JSON.stringify(manifest.strategy)} (expected ${SPLIT_STRATEGY})`, { field: 'strategy' });
  }
  if (manifest.corpusChecksum !== corpus.checksum) {
    throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_CHECKSUM_MISMATCH, `corpus checksum mismatch: the manifest expects ${manifest.corpusChecksum}, the corpus file is ${corpus.checksum}`, {
      field: 'corpus_checksum',
    });
  }
  const byId = new Map<string, CorpusDocument>();
  for (const d of corpus.documents) byId.set(d.id, d);
  // Step 4: non-empty, known ids in strictly increasing source order.
  for (const partition of PARTITION_NAMES) {
    const ids = manifest[partition];
    if (ids.length === 0) throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_EMPTY_PARTITION, `${partition} partition is empty (expected at least one document id)`, { partition });
    let last = -1;
    for (const id of ids) {
      const d = byId.get(id);
      if (d === undefined) continue;
      if (d.index <= last) {
        throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_ORDER, `${partition} partition IDs do not preserve corpus source order: ${id} (document ${d.index + 1}) comes after document ${last + 1}`, {
          partition,
          documentId: id,
        });
      }
      last = d.index;
    }
  }
  // Step 5: every id known, none repeated across lists.
  const assigned = new Map<string, PartitionName>();
  for (const partition of PARTITION_NAMES) {
    for (const id of manifest[partition]) {
      if (!byId.has(id)) throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_UNKNOWN_DOCUMENT, `${partition} partition contains unknown document ${JSON.stringify(id)}`, { partition, documentId: id });
      const earlier = assigned.get(id);
      if (earlier !== undefined) {
        throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_REPEATED_DOCUMENT, `document ${id} appears in more than one manifest position (${earlier} and ${partition})`, { partition, documentId: id });
      }
      assigned.set(id, partition);
    }
  }
  // Step 6: coverage.
  for (const d of corpus.documents) {
    if (!assigned.has(d.id)) throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_UNCOVERED_DOCUMENT, `manifest does not cover corpus document ${d.id}`, { documentId: d.id, documentIndex: d.index });
  }
  // Step 7: a provenance group never spans partitions.
  const groupPartition = new Map<string, PartitionName>();
  for (const d of corpus.documents) {
    const partition = assigned.get(d.id) as PartitionName;
    const first = groupPartition.get(d.provenanceGroup);
    if (first === undefined) groupPartition.set(d.provenanceGroup, partition);
    else if (first !== partition) {
      throw new DataError(DATA_ERROR_CODES.DATA_SPLIT_GROUP_SPLIT, `provenance group ${d.provenanceGroup} is split between ${first} and ${partition} (at document ${d.id})`, {
        partition,
        documentId: d.id,
        documentIndex: d.index,
      });
    }
  }
  const pick = (partition: PartitionName): CorpusDocument[] => corpus.documents.filter((d) => assigned.get(d.id) === partition);
  return { train: pick('train'), validation: pick('validation'), test: pick('test') };
}
