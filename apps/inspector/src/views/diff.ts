/** The comparison of two opened checkpoints (the shared `diffCheckpoints` of `@llmcp/format`, as `llmcp diff`). */
import { diffCheckpoints, tensorDifferenceText } from '@llmcp/format/inspect';
import { h, section, table } from '../dom.ts';
import { short } from '../format-text.ts';
import type { OpenedCheckpoint } from '../opened.ts';


/**
 * Header fields and tensors that differ between A and B.
 *
 * @param a - the first checkpoint.
 * @param b - the second.
 * @returns the comparison section.
 */
export function diffView(a: OpenedCheckpoint, b: OpenedCheckpoint): HTMLElement {
  const d = diffCheckpoints(a.bytes, b.bytes, { a: a.inspection, b: b.inspection });
  const changed = d.tensors.filter((t) => t.status !== 'identical');
  return section(
    `Comparison: A = ${a.name}, B = ${b.name}`,
    { 'data-role': 'diff', class: 'panel diff' },
    h('p', { class: d.bitIdentical ? 'ok-text' : 'warn-text', 'data-role': 'bit-identical' }, d.bitIdentical ? 'The files are bit-identical.' : 'The files differ.'),
    h('h4', {}, d.fields.length === 0 ? 'Header fields: all equal' : `Header fields that differ (${d.fields.length})`),
    d.fields.length === 0 ? null : table(['field', 'A', 'B'], d.fields.map((f) => [f.field, f.a, f.b]), { class: 'fields', 'data-role': 'diff-fields' }),
    h('h4', {}, `Tensors: ${changed.length} of ${d.tensors.length} differ`),
    changed.length === 0
      ? null
      : table(
          ['kind', 'name', 'status', 'max |Δ|', 'first difference (index: A bits → B bits)'],
          changed.map((t) => [t.kind, t.name, tensorDifferenceText(t, { a: 'A', b: 'B' }), t.status === 'different' ? short(t.maxAbsDelta) : '', t.first === null ? '' : `[${t.first.index}]: ${t.first.a} → ${t.first.b}`]),
          { class: 'fields', 'data-role': 'diff-records' },
        ),
  );
}
