/**
 * Comparison of two opened checkpoints, from their inspections, so it works
 * as far as both files parse: header fields by name, and records by
 * (role, name) — element count whose bytes differ and, for f64 records, the
 * largest |Δ| and the first differing element.
 */
import { f64BitsHex, type CheckpointInspection, type InspectedDescriptor, type InspectedField } from '@llmcp/format';

/** A header field whose values differ (or that only one file has). */
export interface FieldChange {
  readonly field: string;
  readonly a: string;
  readonly b: string;
}

/** The comparison of one record. */
export interface RecordChange {
  readonly role: string;
  readonly name: string;
  readonly status: 'identical' | 'different' | 'shape' | 'only-a' | 'only-b' | 'unreadable';
  readonly elements: number;
  readonly differing: number;
  readonly maxAbsDelta: number;
  readonly first: string | null;
}

/** The result of {@link diffInspections}. */
export interface InspectionDiff {
  readonly bitIdentical: boolean;
  readonly fields: readonly FieldChange[];
  readonly records: readonly RecordChange[];
}

function fieldText(f: InspectedField): string {
  if (f.type === 'f64' && typeof f.value === 'number') return `${f.value} (${f64BitsHex(f.value)})`;
  return String(f.value);
}

function key(d: InspectedDescriptor): string {
  return `${d.role ?? d.roleTag}\u0000${d.name}`;
}

function compareRecord(a: InspectedDescriptor, b: InspectedDescriptor, bytesA: Uint8Array, bytesB: Uint8Array): RecordChange {
  const base = { role: a.role ?? `tag ${a.roleTag}`, name: a.name };
  if (a.shape.join(',') !== b.shape.join(',') || a.dtype !== b.dtype) return { ...base, status: 'shape', elements: 0, differing: 0, maxAbsDelta: 0, first: null };
  if (!a.checks.withinFile || !b.checks.withinFile || a.dtype === null || a.byteLength !== b.byteLength) {
    return { ...base, status: 'unreadable', elements: 0, differing: 0, maxAbsDelta: 0, first: null };
  }
  const width = a.dtype === 'f64' ? 8 : a.dtype === 'u32' ? 4 : 1;
  const n = Number(a.byteLength) / width;
  const va = new DataView(bytesA.buffer, bytesA.byteOffset + Number(a.offset), Number(a.byteLength));
  const vb = new DataView(bytesB.buffer, bytesB.byteOffset + Number(b.offset), Number(b.byteLength));
  let differing = 0;
  let maxAbsDelta = 0;
  let first: string | null = null;
  for (let i = 0; i < n; i++) {
    let same = true;
    for (let k = 0; k < width; k++) if (va.getUint8(i * width + k) !== vb.getUint8(i * width + k)) same = false;
    if (same) continue;
    differing += 1;
    if (width === 8) {
      const x = va.getFloat64(8 * i, true);
      const y = vb.getFloat64(8 * i, true);
      const d = Math.abs(x - y);
      maxAbsDelta = Number.isNaN(d) || Number.isNaN(maxAbsDelta) ? Number.NaN : Math.max(maxAbsDelta, d);
      first ??= `[${i}] ${f64BitsHex(x)} → ${f64BitsHex(y)}`;
    } else {
      first ??= `[${i}]`;
    }
  }
  return { ...base, status: differing === 0 ? 'identical' : 'different', elements: n, differing, maxAbsDelta, first };
}

/** Compares two inspected files. */
export function diffInspections(a: CheckpointInspection, b: CheckpointInspection, bytesA: Uint8Array, bytesB: Uint8Array): InspectionDiff {
  const fields: FieldChange[] = [];
  const fa = new Map([...a.fixedHeader, ...a.fields].map((f) => [f.field, fieldText(f)]));
  const fb = new Map([...b.fixedHeader, ...b.fields].map((f) => [f.field, fieldText(f)]));
  for (const [name, va] of fa) {
    const vb = fb.get(name);
    if (vb !== va) fields.push({ field: name, a: va, b: vb ?? '(absent)' });
  }
  for (const [name, vb] of fb) if (!fa.has(name)) fields.push({ field: name, a: '(absent)', b: vb });
  const records: RecordChange[] = [];
  const rb = new Map(b.descriptors.map((d) => [key(d), d]));
  const seen = new Set<string>();
  for (const d of a.descriptors) {
    seen.add(key(d));
    const other = rb.get(key(d));
    records.push(other === undefined ? { role: d.role ?? `tag ${d.roleTag}`, name: d.name, status: 'only-a', elements: 0, differing: 0, maxAbsDelta: 0, first: null } : compareRecord(d, other, bytesA, bytesB));
  }
  for (const d of b.descriptors) {
    if (!seen.has(key(d))) records.push({ role: d.role ?? `tag ${d.roleTag}`, name: d.name, status: 'only-b', elements: 0, differing: 0, maxAbsDelta: 0, first: null });
  }
  const bitIdentical = bytesA.length === bytesB.length && bytesA.every((x, i) => x === bytesB[i]);
  return { bitIdentical, fields, records };
}
