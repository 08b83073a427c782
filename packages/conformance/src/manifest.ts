/**
 * The fixture manifest (`fixtures/manifest.json`): the golden file with its
 * expected decoded summary, and every malformed-corpus case with its
 * expected outcome. Written only by `tools/gen-malformed-corpus.ts`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CheckpointSummary } from './summary.ts';

/** What a decoder must do with a case. */
export type ExpectedOutcome =
  | { readonly outcome: 'accept' }
  | {
      readonly outcome: 'reject';
      /** The reference's category name (../../format/SPEC.md §9.9), e.g. `NonCanonical`. */
      readonly category: string;
      /** The matching `@llmcp/format` code, e.g. `FORMAT_NON_CANONICAL`. */
      readonly code: string;
      /** Other categories also conforming (../../format/SPEC.md §9.10: Allocation vs Truncated). */
      readonly alsoAccepted?: readonly string[];
      /** `@llmcp/format`'s reason (informative, not checked by the suite). */
      readonly reason?: string;
    };

/** One malformed-corpus case. */
export interface ManifestCase {
  /** Stable id, also the file's base name. */
  readonly id: string;
  /** Path relative to the fixtures directory. */
  readonly file: string;
  /** Where the behaviour is specified, e.g. `SPEC §13`. */
  readonly spec: string;
  /** The change made to the golden file, in words. */
  readonly change: string;
  readonly size: number;
  readonly sha256: string;
  readonly expect: ExpectedOutcome;
}

/** The golden fixture's entry. */
export interface ManifestGolden {
  readonly file: string;
  readonly size: number;
  readonly sha256: string;
  readonly checksum: string;
  readonly headerBytes: number;
  readonly payloadBytes: number;
  readonly first16Hex: string;
  /** Expected decoded state, in the form produced by `summarizeCheckpoint`. */
  readonly expected: CheckpointSummary;
}

/** The whole manifest. */
export interface ConformanceManifest {
  readonly specVersion: 'LLMCP35 v1';
  readonly generator: string;
  readonly license: string;
  readonly golden: ManifestGolden;
  readonly cases: readonly ManifestCase[];
}

/**
 * The directory holding `manifest.json` and the fixture files (the package's
 * `fixtures/`, found next to `src/` or `dist/`).
 * @returns an absolute path.
 */
export function fixturesDirectory(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');
}

/**
 * Reads the manifest.
 * @param directory - fixtures directory (default {@link fixturesDirectory}).
 * @returns the manifest.
 */
export function loadManifest(directory: string = fixturesDirectory()): ConformanceManifest {
  return JSON.parse(readFileSync(path.join(directory, 'manifest.json'), 'utf8')) as ConformanceManifest;
}

/**
 * Reads a fixture file named in the manifest.
 * @param file - path relative to the fixtures directory.
 * @param directory - fixtures directory (default {@link fixturesDirectory}).
 * @returns its bytes.
 */
export function loadFixture(file: string, directory: string = fixturesDirectory()): Uint8Array {
  const buffer = readFileSync(path.join(directory, file));
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}
