/**
 * JSON text that carries every valid u64 of a checkpoint exactly. The two
 * decoder fields the file size does not bound (`feedForwardWidth` of a
 * 0-layer model and `maxPositions`) may hold any u64; above 2^53 − 1 the
 * number field is only the nearest double and the exact value is in
 * `decoder.exact` (`@llmcp/format`). JSON itself has no limit on integers
 * (Python reads them exactly), but `JSON.stringify` writes doubles and
 * refuses a `bigint`: {@link stringifyExact} writes a `bigint` as its exact
 * digits, and {@link exactDecoderSizes} puts the exact values where they
 * belong.
 */
import type { DecoderConfig } from '@llmcp/format';

/** A decoder configuration for JSON: the two unbounded sizes as `bigint` when above 2^53 − 1, `exact` dropped. */
export type ExactDecoderSizes = Omit<DecoderConfig, 'feedForwardWidth' | 'maxPositions' | 'exact'> & {
  readonly feedForwardWidth: number | bigint;
  readonly maxPositions: number | bigint;
};

/**
 * The decoder configuration with its exact sizes in place (field order kept).
 *
 * @param decoder - a decoded configuration.
 * @returns a copy whose `feedForwardWidth` / `maxPositions` are the exact `bigint` where `exact` holds one.
 */
export function exactDecoderSizes(decoder: DecoderConfig): ExactDecoderSizes;
/**
 * The decoder configuration with each exact size written by `spell` (e.g. as a decimal string).
 *
 * @param decoder - a decoded configuration.
 * @param spell - how an exact size above 2^53 − 1 is written.
 * @returns a copy with those sizes spelled, `exact` dropped, field order kept.
 */
export function exactDecoderSizes<T>(decoder: DecoderConfig, spell: (exact: bigint) => T): Omit<ExactDecoderSizes, 'feedForwardWidth' | 'maxPositions'> & {
  readonly feedForwardWidth: number | T;
  readonly maxPositions: number | T;
};
export function exactDecoderSizes(decoder: DecoderConfig, spell: (exact: bigint) => unknown = (v) => v): unknown {
  const { exact } = decoder;
  const entries = Object.entries(decoder)
    .filter(([key]) => key !== 'exact')
    .map(([key, value]) => {
      const big = key === 'feedForwardWidth' || key === 'maxPositions' ? exact?.[key] : undefined;
      return [key, big === undefined ? value : spell(big)] as const;
    });
  return Object.fromEntries(entries);
}

/**
 * A size for messages: the exact digits of a field that exceeds 2^53 − 1.
 *
 * @param decoder - a decoded configuration.
 * @param field - `feedForwardWidth` or `maxPositions`.
 * @returns the exact decimal value.
 */
export function exactSizeText(decoder: DecoderConfig, field: 'feedForwardWidth' | 'maxPositions'): string {
  return String(decoder.exact?.[field] ?? decoder[field]);
}

// A private-use marker around the digits; a string holding it is never a value of these documents.
const MARK = '\uE000u64:';

/**
 * `JSON.stringify` that writes each `bigint` as its exact integer digits.
 *
 * @param value - the document (strings must not contain U+E000 followed by `u64:`).
 * @param space - indentation, as for `JSON.stringify`.
 * @returns the JSON text.
 */
export function stringifyExact(value: unknown, space?: number): string {
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${MARK}${v.toString()}` : v), space);
  return text.replace(/"\uE000u64:(\d+)"/g, '$1');
}
