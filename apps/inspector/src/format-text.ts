/** Number and byte formatting shared by the views (matches `llmcp inspect`). */

const VIEW = new DataView(new ArrayBuffer(8));

/** `0x` + 16 hex digits of an f64's bit pattern. */
export function f64Bits(value: number): string {
  VIEW.setFloat64(0, value, true);
  return `0x${VIEW.getBigUint64(0, true).toString(16).padStart(16, '0')}`;
}

/** Shortest round-trip decimal, `-0` kept visible. */
export function f64Text(value: number): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

/** `0x` + 16 hex digits. */
export function u64Hex(value: bigint): string {
  return `0x${value.toString(16).padStart(16, '0')}`;
}

/** Space-separated lowercase hex pairs. */
export function hexBytes(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
}

/** Printable ASCII as is, other bytes as `\xNN`, in double quotes. */
export function quotedBytes(bytes: Uint8Array): string {
  let out = '"';
  for (const b of bytes) {
    if (b === 0x22 || b === 0x5c) out += `\\${String.fromCharCode(b)}`;
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return `${out}"`;
}

/** A compact number for tables (6 significant digits, exact integers as is). */
export function short(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '−∞';
  if (Object.is(value, -0)) return '-0';
  if (Number.isInteger(value) && Math.abs(value) < 1e15) return String(value);
  return value.toPrecision(6);
}

/** `1 234 567 bytes` style grouping. */
export function bytesText(n: number | bigint): string {
  return `${String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ')} bytes`;
}
