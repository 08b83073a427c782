/**
 * Compact number and size formatting shared by the views. Exact forms (f64
 * bit patterns, u64 hex, hex and quoted bytes) come from `@llmcp/format`, as
 * in `llmcp inspect`.
 */

/**
 * A compact number for tables (6 significant digits, exact integers as is).
 * @param value - any f64, including NaN, ±∞ and −0.
 * @returns its short text: `NaN`, `∞`/`−∞`, `-0`, the integer's digits below 1e15, otherwise 6 significant digits.
 */
export function short(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '−∞';
  if (Object.is(value, -0)) return '-0';
  if (Number.isInteger(value) && Math.abs(value) < 1e15) return String(value);
  return value.toPrecision(6);
}

/**
 * `1 234 567 bytes` style grouping.
 * @param n - a byte count.
 * @returns the count with its digits grouped in threes by spaces, followed by ` bytes`.
 */
export function bytesText(n: number | bigint): string {
  return `${String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ')} bytes`;
}
