/** The comparison of two opened checkpoints. */
import { diffInspections, type RecordChange } from '../diff.ts';
import { h, section, table } from '../dom.ts';
import { short } from '../format-text.ts';
import type { OpenedCheckpoint } from '../opened.ts';

function status(r: RecordChange): string {
  switch (r.status) {
    case 'identical':
      return 'identical';
    case 'different':
      return `${r.differing} of ${r.elements} differ`;
    case 'shape':
      return 'shape or dtype differs';
    case 'only-a':
      return 'only in A';
    case 'only-b':
      return 'only in B';
    case 'unreadable':
      return 'not comparable (outside the file)';
  }
}

/** Header fields and records that differ between A and B. */
export function diffView(a: OpenedCheckpoint, b: OpenedCheckpoint): HTMLElement {
  const d = diffInspections(a.inspection, b.inspection, a.bytes, b.bytes);
  const changed = d.records.filter((r) => r.status !== 'identical');
  return section(
    `Comparison: A = ${a.name}, B = ${b.name}`,
    { 'data-role': 'diff', class: 'panel diff' },
    h('p', { class: d.bitIdentical ? 'ok-text' : 'warn-text', 'data-role': 'bit-identical' }, d.bitIdentical ? 'The files are bit-identical.' : 'The files differ.'),
    h('h4', {}, d.fields.length === 0 ? 'Header fields: all equal' : `Header fields that differ (${d.fields.length})`),
    d.fields.length === 0 ? null : table(['field', 'A', 'B'], d.fields.map((f) => [f.field, f.a, f.b]), { class: 'fields', 'data-role': 'diff-fields' }),
    h('h4', {}, `Records: ${changed.length} of ${d.records.length} differ`),
    changed.length === 0
      ? null
      : table(
          ['role', 'name', 'status', 'max |Δ|', 'first difference (A bits → B bits)'],
          changed.map((r) => [r.role, r.name, status(r), r.status === 'different' ? short(r.maxAbsDelta) : '', r.first ?? '']),
          { class: 'fields', 'data-role': 'diff-records' },
        ),
  );
}
