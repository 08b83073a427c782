/**
 * Canonical JSON, browser-safe: object keys sorted by UTF-16 code unit order,
 * numbers in ECMAScript's shortest round-trip form (exact for every finite
 * f64), no `undefined`, no non-finite numbers. Equal values always give equal
 * text, so a digest over it is stable. The one writer of canonical JSON: job
 * digests and config identities (through canonical-json.ts, which adds the
 * digests) and provenance statements.
 */

/** A JSON value. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

function write(value: unknown, indent: string, depth: number, out: string[], where: string): void {
  if (value === null) {
    out.push('null');
    return;
  }
  switch (typeof value) {
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON cannot hold the non-finite number ${value} at ${where}`);
      out.push(JSON.stringify(value));
      return;
    case 'string':
      out.push(JSON.stringify(value));
      return;
    case 'object':
      break;
    default:
      throw new TypeError(`canonical JSON cannot hold a ${typeof value} at ${where}`);
  }
  const pad = indent === '' ? '' : `\n${indent.repeat(depth + 1)}`;
  const close = indent === '' ? '' : `\n${indent.repeat(depth)}`;
  const sep = indent === '' ? ':' : ': ';
  if (Array.isArray(value)) {
    if (value.length === 0) {
      out.push('[]');
      return;
    }
    out.push('[');
    value.forEach((item, i) => {
      if (i > 0) out.push(',');
      out.push(pad);
      write(item, indent, depth + 1, out, `${where}[${i}]`);
    });
    out.push(close, ']');
    return;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort();
  if (keys.length === 0) {
    out.push('{}');
    return;
  }
  out.push('{');
  keys.forEach((key, i) => {
    if (i > 0) out.push(',');
    out.push(pad, JSON.stringify(key), sep);
    write(record[key], indent, depth + 1, out, `${where}.${key}`);
  });
  out.push(close, '}');
}

/**
 * Serialises `value` canonically.
 *
 * @param value - plain JSON data (object keys with `undefined` values are left out).
 * @param indent - `''` for the compact form hashed by digests, `'  '` for files people read.
 * @returns the canonical text.
 * @throws TypeError for non-finite numbers, bigints, functions or symbols.
 */
export function canonicalJson(value: unknown, indent = ''): string {
  const out: string[] = [];
  write(value, indent, 0, out, '$');
  return out.join('');
}
