/**
 * The adapter interface an implementation provides to run the conformance
 * suite, and the adapter for this repository's `@llmcp/format`.
 */
import { decodeCheckpoint, encodeCheckpoint, isFormatError, type CheckpointState } from '@llmcp/format';

/** Result of decoding one file. */
export type DecodeOutcome =
  | { readonly ok: true; readonly state: CheckpointState }
  | {
      readonly ok: false;
      /** The reference's error category (../../format/SPEC.md §9.9), e.g. `ChecksumMismatch`. */
      readonly category: string;
      /** The implementation's own error code, if it has one. */
      readonly code?: string;
      readonly message?: string;
    };

/**
 * What the suite needs from an implementation. Implementations in other
 * languages can be wrapped (e.g. by spawning a process) as long as they map
 * their decoded state to `@llmcp/format`'s `CheckpointState` shape and their
 * errors to the category names of ../../format/SPEC.md §9.9.
 */
export interface ConformanceAdapter {
  /** Shown in reports. */
  readonly name: string;
  /** Decode and fully validate; report failures as a category, never throw for bad bytes. */
  decode(bytes: Uint8Array): DecodeOutcome | Promise<DecodeOutcome>;
  /** Encode a valid state canonically. */
  encode(state: CheckpointState): Uint8Array | Promise<Uint8Array>;
}

/**
 * The adapter for `@llmcp/format` (`decodeCheckpoint` / `encodeCheckpoint`).
 * @returns the adapter.
 * @example
 * ```ts
 * const report = await runConformanceSuite(createFormatAdapter());
 * ```
 */
export function createFormatAdapter(): ConformanceAdapter {
  return {
    name: '@llmcp/format',
    decode(bytes: Uint8Array): DecodeOutcome {
      try {
        return { ok: true, state: decodeCheckpoint(bytes) };
      } catch (e) {
        if (isFormatError(e)) return { ok: false, category: e.category, code: e.code, message: e.message };
        throw e;
      }
    },
    encode: (state: CheckpointState): Uint8Array => encodeCheckpoint(state),
  };
}
