/**
 * Text formatting shared by the commands: f64 values with their bit
 * patterns (as in the spec's annotated dump), hex bytes, aligned tables.
 */

const F64_VIEW = new DataView(new ArrayBuffer(8));

/**
 * @param value - an f64.
 * @returns its bit pattern as `0x` + 16 lowercase hex digits.
 */
export function f64Bits(value: number): string {
  F64_VIEW.setFloat64(0, value, true);
  return `0x${F64_VIEW.getBigUint64(0, true).toString(16).padStart(16, '0')}`;
}

/**
 * @param value - an f64.
 * @returns the shortest round-trip decimal, with `-0` kept visible.
 */
export function f64Text(value: number): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

/**
 * @param value - a u64.
 * @returns `0x` + 16 lowercase hex digits.
 */
export function u64Hex(value: bigint): string {
  return `0x${value.toString(16).padStart(16, '0')}`;
}

/**
 * @param bytes - bytes.
 * @returns space-separated lowercase hex pairs.
 */
export function hexBytes(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
}

/**
 * @param bytes - bytes.
 * @returns the bytes as a quoted string: printable ASCII as is, everything else `\xNN`.
 */
export function quotedBytes(bytes: Uint8Array): string {
  let out = '"';
  for (const b of bytes) {
    if (b === 0x22 || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return `${out}"`;
}

const ANSI = /\u001b\[[0-9;]*m/g;

/**
 * @param text - text that may hold ANSI colour codes.
 * @returns its width on screen (code points, colour codes excluded).
 */
export function visibleWidth(text: string): number {
  return Array.from(text.replace(ANSI, '')).length;
}

/** Column alignment of {@link alignTable}. */
export type Align = 'left' | 'right';

/**
 * Aligns rows of cells into columns separated by two spaces (ANSI-aware).
 * The last column is never padded on the right.
 *
 * @param rows - rows of cells (the first row is usually the heading).
 * @param align - alignment per column (default left).
 * @param indent - prefix of every line.
 * @returns the lines.
 */
export function alignTable(rows: readonly (readonly string[])[], align: readonly Align[], indent = '  '): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, visibleWidth(cell))));
  return rows.map((row) => {
    const cells = row.map((cell, i) => {
      const pad = ' '.repeat((widths[i] ?? 0) - visibleWidth(cell));
      if (align[i] === 'right') return pad + cell;
      return i === row.length - 1 ? cell : cell + pad;
    });
    return (indent + cells.join('  ')).trimEnd();
  });
}

/**
 * @param n - a count.
 * @param one - singular noun.
 * @param many - plural noun (default `one + 's'`).
 * @returns e.g. `1 tensor`, `3 tensors`.
 */
export function plural(n: number | bigint, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 || n === 1n ? one : many}`;
}
