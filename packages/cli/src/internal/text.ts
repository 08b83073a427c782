/**
 * Text layout shared by the commands: aligned tables and counted nouns. The
 * exact forms of f64/u64 values and bytes come from `@llmcp/format`
 * (`f64BitsHex`, `f64Text`, `u64Hex`, `hexBytes`, `quotedBytes`).
 */

// The escape character is the point: this matches the terminal's colour codes (SGR sequences) to strip them.
// eslint-disable-next-line no-control-regex -- ESC (U+001B) starts every ANSI colour code
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
