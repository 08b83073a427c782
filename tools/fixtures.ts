/**
 * The one reader of the golden fixtures for every package's tests. The files
 * live once, in `packages/conformance/fixtures/` (published with
 * `@llmcp/conformance`): the golden checkpoint beside the conformance
 * manifest, and the reference's traces and math vectors in `vectors/` with a
 * SHA-256 manifest. Every read is checked against its recorded SHA-256, so a
 * test can never run against a changed copy.
 *
 * It also makes the hostile file kinds every package's tests put where a file
 * is expected ({@link makeSpecialFile}: FIFOs, sockets, device nodes, links to
 * them), always inside a scratch folder — never the real `/dev`.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The fixtures directory of `@llmcp/conformance`. */
export const FIXTURES_DIR: string = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'conformance', 'fixtures');

/** The golden vectors directory. */
export const VECTORS_DIR: string = path.join(FIXTURES_DIR, 'vectors');

/** The golden checkpoint's path. */
export const GOLDEN_PATH: string = path.join(FIXTURES_DIR, 'golden-6330.llmcp');

interface VectorManifest {
  readonly files: Readonly<Record<string, { readonly sha256: string; readonly bytes: number }>>;
}

let manifest: VectorManifest | undefined;
const cache = new Map<string, Uint8Array>();

function checked(file: string, expected: string): Uint8Array {
  const bytes = new Uint8Array(readFileSync(file));
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (actual !== expected) throw new Error(`fixture ${file} changed: SHA-256 ${actual}, the manifest records ${expected}`);
  return bytes;
}

/**
 * The bytes of a golden vector (a file of `vectors/`), checked against the manifest.
 *
 * @param name - file name, e.g. `ch33-trace.json`.
 * @returns the bytes (shared: do not modify).
 * @throws Error when the file is not in the manifest or its SHA-256 differs.
 */
export function vectorBytes(name: string): Uint8Array {
  let bytes = cache.get(name);
  if (bytes === undefined) {
    manifest ??= JSON.parse(readFileSync(path.join(VECTORS_DIR, 'manifest.json'), 'utf8')) as VectorManifest;
    const entry = manifest.files[name];
    if (entry === undefined) throw new Error(`no golden vector ${name} in ${path.join(VECTORS_DIR, 'manifest.json')}`);
    bytes = checked(path.join(VECTORS_DIR, name), entry.sha256);
    cache.set(name, bytes);
  }
  return bytes;
}

/**
 * A golden vector parsed as JSON.
 *
 * @param name - file name, e.g. `forward-trace.json`.
 * @returns the parsed value.
 */
export function vectorJson<T>(name: string): T {
  return JSON.parse(new TextDecoder().decode(vectorBytes(name))) as T;
}

/**
 * The golden 6330-byte checkpoint, checked against the conformance manifest.
 *
 * @returns a fresh copy of its bytes.
 */
export function goldenCheckpoint(): Uint8Array {
  let bytes = cache.get(GOLDEN_PATH);
  if (bytes === undefined) {
    const m = JSON.parse(readFileSync(path.join(FIXTURES_DIR, 'manifest.json'), 'utf8')) as { golden: { sha256: string } };
    bytes = checked(GOLDEN_PATH, m.golden.sha256);
    cache.set(GOLDEN_PATH, bytes);
  }
  return bytes.slice();
}

// ── Bit patterns of golden vectors: f64 values in the vectors are 16-hex-digit IEEE-754 patterns, most significant first.

const bitView = new DataView(new ArrayBuffer(8));

/** The f64 whose bit pattern is `hex`. */
export function f64(hex: string): number {
  bitView.setBigUint64(0, BigInt(`0x${hex}`));
  return bitView.getFloat64(0);
}

/** The 16-hex-digit bit pattern of `x`. */
export function bits(x: number): string {
  bitView.setFloat64(0, x);
  return bitView.getBigUint64(0).toString(16).padStart(16, '0');
}

/** Decodes a list of bit patterns. */
export function f64s(hexes: readonly string[]): Float64Array {
  return Float64Array.from(hexes, f64);
}

/**
 * The first bit mismatch between `actual` and the expected patterns, as a
 * message naming the tensor, the index and both patterns; null when every bit
 * agrees (lengths included).
 */
export function firstMismatch(name: string, actual: ArrayLike<number>, expected: readonly string[]): string | null {
  if (actual.length !== expected.length) return `${name}: expected ${expected.length} values, found ${actual.length}`;
  for (let i = 0; i < expected.length; i++) {
    const a = bits(actual[i] as number);
    if (a !== expected[i]) {
      return `${name}[${i}]: expected ${expected[i]} (${f64(expected[i] as string)}), found ${a} (${actual[i]})`;
    }
  }
  return null;
}

/** What {@link versionOneBatchState} reads of an update-batch state (`UpdateBatches.state()` of `@llmcp/data`). */
export interface BatchStateSnapshot {
  readonly windowCount: number;
  readonly batchSize: number;
  readonly epochPolicy: 'repeat' | 'reshuffle';
  readonly shuffled: boolean;
  readonly epoch: number;
  readonly cursor: number;
  readonly order: Uint32Array;
  readonly rngState: bigint | null;
}

/**
 * An update-batch state in the JSON form of version 1, as the jobs of
 * `llmcp-job/1` … `/3` hold it (the whole order and the generator state after
 * its shuffle): the old runs that the data and trainer tests read back.
 *
 * @param s - `UpdateBatches.state()`.
 * @returns the version 1 JSON.
 */
export function versionOneBatchState(s: BatchStateSnapshot): Record<string, unknown> {
  return {
    version: 1,
    windowCount: s.windowCount,
    batchSize: s.batchSize,
    epochPolicy: s.epochPolicy,
    shuffled: s.shuffled,
    epoch: s.epoch,
    cursor: s.cursor,
    rngState: s.rngState === null ? null : `0x${s.rngState.toString(16).padStart(16, '0')}`,
    order: Array.from(s.order),
  };
}

// ── Hostile file kinds: what a test puts where llmcp expects a regular file (or an output path).

/** The kinds {@link makeSpecialFile} makes. */
export const SPECIAL_FILE_KINDS = ['fifo', 'socket', 'character-device', 'directory', 'symlink-to-fifo', 'symlink-to-character-device', 'symlink-to-directory'] as const;

/** One of {@link SPECIAL_FILE_KINDS}. */
export type SpecialFileKind = (typeof SPECIAL_FILE_KINDS)[number];

let mknodAllowed: boolean | undefined;

/**
 * Whether this process may make device nodes (`mknod` needs CAP_MKNOD, i.e. root in most containers).
 *
 * @param scratch - a scratch folder to probe in (the probe node is removed).
 * @returns true when a character device can be made there.
 */
export function canMakeDeviceNodes(scratch: string): boolean {
  if (mknodAllowed === undefined) {
    const probe = `${scratch}/.mknod-probe-${process.pid}`;
    try {
      execFileSync('mknod', [probe, 'c', '1', '3'], { stdio: 'ignore' });
      execFileSync('rm', ['-f', probe]);
      mknodAllowed = true;
    } catch {
      mknodAllowed = false;
    }
  }
  return mknodAllowed;
}

/**
 * Makes a special file at `file`, inside a scratch folder: a FIFO (`mkfifo`), a
 * Unix socket (bound by Debian's python3 and left behind), a character device
 * with the numbers of `/dev/zero` (1, 5: reads never end, writes are discarded;
 * `mknod`, needs {@link canMakeDeviceNodes}), a directory, or a symbolic link to
 * one of those made beside it (`<file>.target`).
 *
 * @param file - where (its folder must exist; never under `/dev`).
 * @param kind - what.
 * @returns `file`.
 */
export function makeSpecialFile(file: string, kind: SpecialFileKind): string {
  if (file.startsWith('/dev/')) throw new Error(`makeSpecialFile: ${file} is under /dev; make special files in a scratch folder`);
  const link = /^symlink-to-(.*)$/.exec(kind)?.[1] as SpecialFileKind | undefined;
  if (link !== undefined) {
    makeSpecialFile(`${file}.target`, link);
    symlinkSync(`${file}.target`, file);
  } else if (kind === 'fifo') execFileSync('mkfifo', [file]);
  else if (kind === 'socket') execFileSync('/usr/bin/python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', file]);
  else if (kind === 'character-device') execFileSync('mknod', [file, 'c', '1', '5']);
  else mkdirSync(file);
  return file;
}
