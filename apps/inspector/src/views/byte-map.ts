/**
 * A to-scale map of the file: fixed header, variable header, descriptor
 * table, tokenizer records, each parameter and each moment record, with
 * holes, overlaps and the failing offset marked.
 */
import { FIXED_HEADER_BYTES } from '@llmcp/format';
import { type CheckpointInspection } from '@llmcp/format/inspect';
import { h, s } from '../dom.ts';
import { bytesText } from '../format-text.ts';

/** One contiguous region of the file. */
export interface Segment {
  readonly start: number;
  readonly end: number;
  readonly kind: 'fixed-header' | 'variable-header' | 'descriptor-table' | 'tokenizer' | 'model-parameter' | 'first-moment' | 'second-moment' | 'unknown' | 'unaccounted';
  readonly label: string;
}

const WIDTH = 1000;
const HEIGHT = 36;

/**
 * The regions of a file, as far as its layout parsed.
 * @param i - the checkpoint's inspection.
 * @returns the regions in file order (adjacent tokenizer records merged into one), ending with any bytes no descriptor accounts for.
 */
export function segmentsOf(i: CheckpointInspection): Segment[] {
  const len = i.fileLength;
  const out: Segment[] = [];
  if (len === 0) return out;
  out.push({ start: 0, end: Math.min(FIXED_HEADER_BYTES, len), kind: 'fixed-header', label: 'fixed header' });
  const headerEnd = i.headerBytes === null ? len : Math.min(len, Number(i.headerBytes));
  const tableStart = i.descriptors[0]?.entryOffset ?? headerEnd;
  if (len > FIXED_HEADER_BYTES) {
    if (tableStart > FIXED_HEADER_BYTES) out.push({ start: FIXED_HEADER_BYTES, end: Math.min(tableStart, headerEnd), kind: 'variable-header', label: 'variable header fields' });
    if (headerEnd > tableStart) out.push({ start: tableStart, end: headerEnd, kind: 'descriptor-table', label: `descriptor table (${i.descriptors.length} entries)` });
  }
  let tokenizer: { start: number; end: number; n: number } | null = null;
  const flush = (): void => {
    if (tokenizer !== null) out.push({ start: tokenizer.start, end: tokenizer.end, kind: 'tokenizer', label: `tokenizer (${tokenizer.n} record${tokenizer.n === 1 ? '' : 's'})` });
    tokenizer = null;
  };
  for (const d of i.descriptors) {
    if (d.end === null || !d.checks.withinFile) continue;
    const start = Number(d.offset);
    const end = Number(d.end);
    if (d.role === 'literal-token' || d.role === 'bpe-pairs') {
      if (tokenizer !== null && tokenizer.end === start) {
        tokenizer.end = end;
        tokenizer.n += 1;
      } else {
        flush();
        tokenizer = { start, end, n: 1 };
      }
      continue;
    }
    flush();
    const kind = d.role === 'model-parameter' || d.role === 'first-moment' || d.role === 'second-moment' ? d.role : 'unknown';
    const what = kind === 'first-moment' ? 'first moment of ' : kind === 'second-moment' ? 'second moment of ' : '';
    out.push({ start, end, kind, label: `${what}${d.name} [${d.shape.join(', ')}]` });
  }
  flush();
  const covered = out.reduce((m, seg) => Math.max(m, seg.end), 0);
  if (covered < len) out.push({ start: covered, end: len, kind: 'unaccounted', label: 'bytes no descriptor accounts for' });
  return out;
}

/**
 * The byte map as an SVG with a legend.
 * @param i - the checkpoint's inspection.
 * @returns a `div` holding the SVG bar (one rectangle per region of {@link segmentsOf}, a red line at the failing offset), its legend and a note on the failure.
 */
export function byteMap(i: CheckpointInspection): HTMLElement {
  const len = Math.max(1, i.fileLength);
  const x = (offset: number): number => (offset / len) * WIDTH;
  const segments = segmentsOf(i);
  const rects = segments.map((seg) =>
    s(
      'rect',
      { class: `seg seg-${seg.kind}`, x: x(seg.start), y: 4, width: Math.max(0, x(seg.end) - x(seg.start)), height: HEIGHT - 8, 'data-start': seg.start, 'data-end': seg.end },
      s('title', {}, `${seg.label}: [${seg.start},${seg.end}), ${bytesText(seg.end - seg.start)}`),
    ),
  );
  const marks: SVGElement[] = [];
  const error = i.verdict.valid ? null : i.verdict.error;
  if (error?.offset !== undefined) {
    marks.push(s('line', { class: 'fail-mark', x1: x(error.offset), x2: x(error.offset), y1: 0, y2: HEIGHT }, s('title', {}, `${error.code} at offset ${error.offset}`)));
  }
  const svg = s('svg', { class: 'byte-map', viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: 'none', role: 'img', 'aria-label': `byte map of ${i.fileLength} bytes` }, ...rects, ...marks);
  const kinds = [...new Set(segments.map((seg) => seg.kind))];
  return h(
    'div',
    { class: 'byte-map-wrap' },
    svg,
    h('div', { class: 'legend' }, ...kinds.map((k) => h('span', { class: 'legend-item' }, h('span', { class: `swatch seg-${k}` }), k.replace('-', ' ')))),
    error?.offset === undefined ? null : h('p', { class: 'fail-note' }, `red line: the failing rule (${error.code}) at offset ${error.offset}`),
  );
}
