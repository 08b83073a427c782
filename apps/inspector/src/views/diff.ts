/** The comparison of two opened checkpoints (the shared `diffCheckpoints` of `@llmcp/format`, as `llmcp diff`). */
import { diffCheckpoints, tensorDifferenceText } from '@llmcp/format/inspect';
import { h, section, table } from '../dom.ts';
import { short } from '../format-text.ts';
import type { OpenedCheckpoint } from '../opened.ts';


/** What names a checkpoint in a comparison: its path as opened, its step and its checksum label. */
export interface DiffSide {
  readonly name: string;
  readonly step: bigint | null;
  readonly checksum: string | null;
}

/**
 * The labels of the two sides of a comparison, told apart: the shortest ends of
 * their paths that differ (two `state.llmcp` files of different slots read
 * `best/state.llmcp` and `step_000600/state.llmcp`), and when the paths cannot
 * tell them apart (two files opened by name alone), each one's step and
 * checksum as well.
 *
 * @param a - side A.
 * @param b - side B.
 * @returns the labels of A and B.
 */
export function diffLabels(a: DiffSide, b: DiffSide): [string, string] {
  const pa = a.name.split('/');
  const pb = b.name.split('/');
  let k = 1;
  while (k < Math.max(pa.length, pb.length) && pa.slice(-k).join('/') === pb.slice(-k).join('/')) k += 1;
  const la = pa.slice(-k).join('/');
  const lb = pb.slice(-k).join('/');
  if (la !== lb) return [la, lb];
  const facts = (s: DiffSide): string => `${la} (step ${s.step === null ? '?' : String(s.step)}, ${s.checksum ?? 'no checksum'})`;
  return [facts(a), facts(b)];
}

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
  const side = (o: OpenedCheckpoint): DiffSide => ({ name: o.name, step: o.inspection.selectedStep, checksum: o.inspection.checksum?.storedLabel ?? null });
  const [labelA, labelB] = diffLabels(side(a), side(b));
  return section(
    `Comparison: A = ${labelA}, B = ${labelB}`,
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
