/**
 * The audit of one opened checkpoint: verdict banner, byte map, fixed header
 * with annotated hex, variable header, descriptor table with the contiguity
 * audit, tokenizer, configuration and optimizer state, per-tensor statistics,
 * and — for a damaged file — where parsing stopped.
 */
import { BPE_BASE_VOCABULARY, FIXED_HEADER_BYTES, f64BitsHex, f64Text, hexBytes, quotedBytes, u64Hex } from '@llmcp/format';
import { byteDifferenceText, spellBpeMerges, type ByteDifferences, type CheckpointInspection, type InspectedDescriptor, type InspectedField, type InspectionError } from '@llmcp/format/inspect';
import { h, s, section, table } from '../dom.ts';
import { bytesText, short } from '../format-text.ts';
import type { OpenedCheckpoint } from '../opened.ts';
import { drawHeatmap, heatmapGrid } from '../heatmap.ts';
import { f64Stats, HISTOGRAM_BINS } from '../stats.ts';
import { byteMap } from './byte-map.ts';

/** Rows shown before a long list is cut (the rest is counted). */
const MAX_ROWS = 300;
/** Descriptor rows rendered at most; beyond it only rows with a problem are (every row is still checked). */
const MAX_DESCRIPTOR_ROWS = 2000;

function errorText(e: InspectionError): string {
  const where: string[] = [];
  if (e.offset !== undefined) where.push(`offset ${e.offset}`);
  if (e.field !== undefined) where.push(e.field);
  if (e.recordIndex !== undefined) where.push(`record #${e.recordIndex}`);
  return `${e.code} (${e.category}${e.reason === 'unspecified' ? '' : `/${e.reason}`})${where.length > 0 ? ` at ${where.join(', ')}` : ''}`;
}

function verdictBanner(i: CheckpointInspection): HTMLElement {
  if (i.verdict.valid) {
    return h('div', { class: 'verdict ok', 'data-role': 'verdict' }, h('strong', {}, 'VALID'), ` — every LLMCP35 v1 rule holds; checksum ${i.verdict.checkpoint.layout.checksumLabel}`);
  }
  const e = i.verdict.error;
  return h('div', { class: 'verdict bad', 'data-role': 'verdict' }, h('strong', {}, 'INVALID'), ' — first failing rule: ', h('code', { 'data-role': 'error-code' }, e.code), ` ${errorText(e).slice(e.code.length)}`, h('div', { class: 'verdict-message' }, e.message));
}

function valueText(f: InspectedField): string {
  if (f.type === 'f64' && typeof f.value === 'number') return `${f64Text(f.value)}  (bits ${f64BitsHex(f.value)})`;
  if (typeof f.value === 'bigint') return f.value > 0xffffffffn ? `${f.value} (${u64Hex(f.value)})` : String(f.value);
  return f.type === 'string' ? JSON.stringify(f.value) : String(f.value);
}

function fixedHeader(o: OpenedCheckpoint): HTMLElement {
  const i = o.inspection;
  if (i.fixedHeader.length === 0) {
    return section('Fixed header', { 'data-role': 'fixed-header' }, h('p', { class: 'bad-text' }, `The file has ${bytesText(i.fileLength)}, fewer than the ${FIXED_HEADER_BYTES} of the fixed header.`), h('pre', { class: 'hex' }, hexBytes(o.bytes.subarray(0, FIXED_HEADER_BYTES)) || '(empty)'));
  }
  const strip = h(
    'div',
    { class: 'hex-strip' },
    ...i.fixedHeader.map((f, k) =>
      h(
        'span',
        { class: `hex-field f${k}`, title: `${f.field}: [${f.offset},${f.offset + f.width})` },
        h('span', { class: 'hex-bytes' }, hexBytes(o.bytes.subarray(f.offset, f.offset + f.width))),
        h('span', { class: 'hex-label' }, f.field),
      ),
    ),
  );
  const rows = i.fixedHeader.map((f, k) => [h('span', { class: `dot f${k}` }), String(f.offset), String(f.width), f.field, h('code', {}, f.hex), valueText(f)]);
  const c = i.checksum;
  return section(
    `Fixed header (${FIXED_HEADER_BYTES} bytes)`,
    { 'data-role': 'fixed-header' },
    strip,
    table(['', 'offset', 'width', 'field', 'bytes (little-endian)', 'value'], rows, { class: 'fields' }),
    c === null ? null : h('p', { class: c.matches ? 'ok-text' : 'bad-text', 'data-role': 'checksum' }, `Checksum: stored ${c.storedLabel}, computed ${c.computedLabel} — ${c.matches ? 'match' : 'MISMATCH'}`),
  );
}

function variableHeader(i: CheckpointInspection): HTMLElement | null {
  if (i.fields.length === 0) return null;
  const rows = i.fields.map((f) => [String(f.offset), String(f.width), f.field, valueText(f)]);
  return section('Variable header', { 'data-role': 'variable-header' }, h('details', {}, h('summary', {}, `${i.fields.length} fields from offset ${FIXED_HEADER_BYTES}`), table(['offset', 'width', 'field', 'value'], rows, { class: 'fields' })));
}

function checkText(d: InspectedDescriptor, previousEnd: bigint | null): string {
  const p: string[] = [];
  if (!d.checks.byteLengthMatchesShape) p.push(`length ${d.byteLength} ≠ shape × width = ${d.expectedByteLength ?? 'overflow'}`);
  if (!d.checks.contiguous) p.push(previousEnd === null ? 'start unknown' : `starts at ${d.offset}, previous ended at ${previousEnd}`);
  if (!d.checks.withinFile) p.push('outside the file');
  return p.length === 0 ? 'ok' : p.join('; ');
}

function descriptorTable(i: CheckpointInspection): HTMLElement | null {
  if (i.descriptorCount === null && i.descriptors.length === 0) return null;
  const failing = i.verdict.valid ? undefined : i.verdict.error.recordIndex;
  let previousEnd: bigint | null = i.headerBytes;
  const rows: HTMLTableRowElement[] = [];
  let hidden = 0;
  for (const d of i.descriptors) {
    const check = checkText(d, previousEnd);
    previousEnd = d.end;
    if (rows.length >= MAX_DESCRIPTOR_ROWS && check === 'ok' && failing !== d.index) {
      hidden += 1;
      continue;
    }
    const cls = [check === 'ok' ? '' : 'bad-row', failing === d.index ? 'failing-row' : ''].filter(Boolean).join(' ');
    rows.push(
      h(
        'tr',
        { class: cls, 'data-index': d.index },
        h('td', {}, String(d.index)),
        h('td', {}, `${d.entryOffset}–${d.entryOffset + d.entryLength - 1}`),
        h('td', {}, d.role ?? `tag ${d.roleTag}?`),
        h('td', { class: 'name' }, d.name),
        h('td', {}, d.dtype ?? `tag ${d.dtypeTag}?`),
        h('td', {}, `[${d.shape.join(', ')}]`),
        h('td', { class: 'range' }, d.end === null ? `[${d.offset},overflow)` : `[${d.offset},${d.end})`),
        h('td', { class: 'num' }, String(d.byteLength)),
        h('td', { class: check === 'ok' ? 'ok-text' : 'bad-text' }, check, failing === d.index && !i.verdict.valid ? ` ◀ ${i.verdict.error.code}` : ''),
      ),
    );
  }
  const end = i.recordsEnd;
  return section(
    `Descriptor table — ${i.descriptors.length} of ${i.descriptorCount ?? '?'} rows parsed`,
    { 'data-role': 'descriptors' },
    h(
      'table',
      { class: 'descriptors' },
      h('thead', {}, h('tr', {}, ...['#', 'entry', 'role', 'name', 'dtype', 'shape', 'range', 'length', 'check'].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...rows),
    ),
    hidden === 0 ? null : h('p', { class: 'muted' }, `${hidden} more rows passed every check and are not shown.`),
    end === null ? null : h('p', { class: end === BigInt(i.fileLength) ? 'ok-text' : 'bad-text' }, `Records end at ${end}; file length ${i.fileLength}.`),
  );
}

function tokenizerView(o: OpenedCheckpoint): HTMLElement | null {
  const t = o.inspection.tokenizer;
  if (t === null) return null;
  const slice = o.inspection.descriptors.filter((d) => d.slice === 'tokenizer' && d.checks.withinFile);
  const title = `Tokenizer — ${t.kind ?? `unknown kind ${t.kindTag}`}${t.kindName === null ? '' : ` (${t.kindName})`}, declared vocabulary ${t.declaredVocabulary ?? '?'}`;
  if (t.kind === 'literal') {
    const rows = slice.slice(0, MAX_ROWS).map((d) => {
      const piece = o.bytes.subarray(Number(d.offset), Number(d.end));
      return [d.name, h('code', {}, hexBytes(piece)), quotedBytes(piece)];
    });
    return section(title, { 'data-role': 'tokenizer' }, table(['id', 'bytes', 'as text'], rows), slice.length > MAX_ROWS ? h('p', { class: 'muted' }, `… ${slice.length - MAX_ROWS} more pieces`) : null);
  }
  if (t.kind === 'bpe' && slice[0] !== undefined && slice[0].dtype === 'u32') {
    const d = slice[0];
    const { total, merges, unknownOperand: u, spellingStoppedAt } = spellBpeMerges(o.bytes.subarray(Number(d.offset), Number(d.end)), MAX_ROWS);
    const rows: (string | HTMLElement)[][] = merges.map((m) => [String(m.rank), String(BPE_BASE_VOCABULARY + m.rank), `${m.left} ${quotedBytes(m.leftBytes)}`, `${m.right} ${quotedBytes(m.rightBytes)}`, quotedBytes(m.bytes)]);
    if (spellingStoppedAt !== null) rows.push([String(spellingStoppedAt), String(BPE_BASE_VOCABULARY + spellingStoppedAt), '', '', h('span', { class: 'bad-text' }, 'spellings too long to show from here on')]);
    if (u !== null) rows.push([String(u.rank), String(BPE_BASE_VOCABULARY + u.rank), String(u.left), String(u.right), h('span', { class: 'bad-text' }, 'unknown operand')]);
    return section(
      `${title}, ${total} merges`,
      { 'data-role': 'tokenizer' },
      h('p', { class: 'muted' }, 'Pairs are stored in the training id space (0–255 bytes, 256 + r for merge r); final ids shift by 2 for the BOS/EOS control tokens (0, 1).'),
      table(['rank', 'final id', 'left (training id)', 'right (training id)', 'bytes'], rows),
      total > MAX_ROWS ? h('p', { class: 'muted' }, `… ${total - MAX_ROWS} more merges`) : null,
    );
  }
  return section(title, { 'data-role': 'tokenizer' }, h('p', { class: 'muted' }, 'No readable tokenizer record.'));
}

function configView(i: CheckpointInspection): HTMLElement | null {
  const rows: [string, string][] = [];
  const d = i.decoder;
  if (d !== null) {
    rows.push(['vocabulary size', String(d.vocabularySize)], ['model width', String(d.modelWidth)], ['heads', String(d.heads)], ['feed-forward width', String(d.feedForwardWidth)]);
    rows.push(['layers', String(d.layers)], ['max positions', String(d.maxPositions)], ['rope base', `${f64Text(d.ropeBase)} (${f64BitsHex(d.ropeBase)})`], ['rms epsilon', `${f64Text(d.rmsEpsilon)} (${f64BitsHex(d.rmsEpsilon)})`]);
  }
  const a = i.adamw;
  if (a !== null) {
    for (const [k, v] of Object.entries(a) as [string, number][]) rows.push([`AdamW ${k}`, `${f64Text(v)} (${f64BitsHex(v)})`]);
  }
  if (i.groupsFlag !== null) rows.push(['parameter groups', i.groups === null ? (i.groupsFlag === 0 ? 'none (decay applies to every parameter)' : `flag ${i.groupsFlag}`) : `decay: ${i.groups.decay.join(', ')} · no decay: ${i.groups.noDecay.join(', ')}`]);
  if (i.optimizerStep !== null) rows.push(['optimizer step', String(i.optimizerStep)]);
  if (i.selectedStep !== null) rows.push(['selected step', String(i.selectedStep)]);
  if (i.beta1Power !== null) rows.push(['beta1 power', `${f64Text(i.beta1Power)} (${f64BitsHex(i.beta1Power)})`]);
  if (i.beta2Power !== null) rows.push(['beta2 power', `${f64Text(i.beta2Power)} (${f64BitsHex(i.beta2Power)})`]);
  if (i.samplingRngState !== null) rows.push(['sampling RNG (SplitMix64 state)', u64Hex(i.samplingRngState)]);
  if (i.modelParameterCount !== null) rows.push(['records', `${i.modelParameterCount} parameters, ${i.optimizerStateCount ?? '?'} moment pairs, ${i.descriptorCount ?? '?'} descriptors`]);
  if (rows.length === 0) return null;
  return section('Configuration and optimizer state', { 'data-role': 'config' }, table(['field', 'value'], rows, { class: 'fields' }));
}

function histogram(counts: readonly number[]): SVGElement {
  const max = Math.max(1, ...counts);
  const w = 96 / HISTOGRAM_BINS;
  return s('svg', { class: 'hist', viewBox: '0 0 96 20', width: 96, height: 20 }, ...counts.map((c, k) => s('rect', { x: k * w, y: 20 - (c / max) * 20, width: w - 0.5, height: (c / max) * 20 })));
}

function heatmap(o: OpenedCheckpoint, d: InspectedDescriptor): HTMLElement | string {
  if (d.shape.length !== 2) return '';
  const [rows, columns] = d.shape.map(Number) as [number, number];
  const grid = heatmapGrid(o.bytes, { offset: Number(d.offset), rows, columns });
  const canvas = h('canvas', { class: 'heatmap', 'data-name': d.name, title: `${d.name} [${rows}, ${columns}]${grid.blockRows * grid.blockColumns > 1 ? `, ${grid.blockRows}×${grid.blockColumns} blocks averaged` : ''}; blue < 0 < red, |max| ${short(grid.scale)}` });
  drawHeatmap(canvas, grid);
  // Cells drawn at least 4 CSS pixels, the longer side at most 96.
  const cell = Math.max(1, Math.min(96 / Math.max(grid.rows, grid.columns), 12));
  canvas.style.width = `${Math.round(grid.columns * cell)}px`;
  canvas.style.height = `${Math.round(grid.rows * cell)}px`;
  return canvas;
}

function statsView(o: OpenedCheckpoint): HTMLElement | null {
  const records = o.inspection.descriptors.filter((d) => d.dtype === 'f64' && d.checks.withinFile && d.checks.byteLengthMatchesShape);
  if (records.length === 0) return null;
  const rows = records.map((d) => {
    const st = f64Stats(o.bytes, Number(d.offset), Number(d.byteLength) / 8);
    return [
      d.role ?? '?',
      h('span', { class: 'name' }, d.name),
      `[${d.shape.join(', ')}]`,
      h('div', { class: 'hist-heat' }, histogram(st.histogram), heatmap(o, d)),
      String(st.count),
      short(st.min),
      short(st.max),
      short(st.mean),
      short(st.rms),
      String(st.zeros),
      st.nonFinite > 0 ? h('span', { class: 'bad-text' }, String(st.nonFinite)) : '0',
    ];
  });
  return section(
    'Tensor statistics',
    { 'data-role': 'stats' },
    h('p', { class: 'muted' }, 'Heatmaps of 2-D tensors: blue negative, white zero, red positive (scaled by the largest |value|; large tensors averaged in blocks of at most 64 cells a side).'),
    table(['role', 'name', 'shape', 'histogram · heatmap', 'values', 'min', 'max', 'mean', 'RMS', 'zeros', 'non-finite'], rows, { class: 'stats' }),
  );
}

function issuesView(i: CheckpointInspection): HTMLElement | null {
  if (i.parseStoppedAt === null && i.headerIssues.length === 0) return null;
  return section(
    'Where it broke',
    { 'data-role': 'issues' },
    i.parseStoppedAt === null ? null : h('p', { class: 'bad-text' }, `Parsing stopped: ${errorText(i.parseStoppedAt)} — ${i.parseStoppedAt.message}`),
    i.headerIssues.length === 0 ? null : h('ul', {}, ...i.headerIssues.map((e) => h('li', {}, `${errorText(e)} — ${e.message}`))),
  );
}

/** A comparison of the file with another copy of the same checkpoint (another slot of the same step). */
export interface CopyCheck {
  /** What the file is (e.g. the slot name). */
  readonly label: string;
  /** The copy's name, its inspection and where the two differ; null when there is no copy (then `note` says why). */
  readonly copy: { readonly name: string; readonly inspection: CheckpointInspection; readonly differences: ByteDifferences } | null;
  readonly note: string;
}

/** Options of {@link checkpointView}. */
export interface CheckpointViewOptions {
  /** Prefix of the section ids (unique on the page). */
  readonly id: string;
  readonly copyCheck?: CopyCheck;
}

function verdictWord(i: CheckpointInspection): string {
  return i.verdict.valid ? 'valid' : `invalid (${i.verdict.error.code})`;
}

function copyCheckView(o: OpenedCheckpoint, c: CopyCheck): HTMLElement {
  if (c.copy === null) return section('Copy check', { 'data-role': 'copy-check' }, h('p', { class: 'muted' }, c.note));
  const d = c.copy.differences;
  const lengths = d.lengthA === d.lengthB ? null : h('p', { class: 'bad-text' }, `Lengths differ: ${c.label} has ${bytesText(d.lengthA)}, ${c.copy.name} ${bytesText(d.lengthB)}.`);
  if (d.differingBytes === 0 && lengths === null) {
    return section('Copy check', { 'data-role': 'copy-check' }, h('p', { class: 'ok-text', 'data-role': 'copy-verdict' }, `${c.label} and ${c.copy.name} are identical byte for byte.`), h('p', { class: 'muted' }, c.note));
  }
  return section(
    'Copy check',
    { 'data-role': 'copy-check' },
    h('p', { class: 'bad-text', 'data-role': 'copy-verdict' }, `${c.label} (${verdictWord(o.inspection)}) and ${c.copy.name} (${verdictWord(c.copy.inspection)}) differ in ${d.differingBytes} byte(s), ${d.differingBits} bit(s):`),
    h('ul', { 'data-role': 'corruption' }, ...d.runs.map((r) => h('li', { 'data-role': 'corruption-run', 'data-start': r.start, 'data-last': r.last }, byteDifferenceText(r)))),
    d.truncated ? h('p', { class: 'muted' }, `… more runs not listed (${d.runs.length} shown).`) : null,
    lengths,
    h('p', { class: 'muted' }, `${c.note} Bytes are named by the layout of ${d.layoutOf === 'a' ? c.label : c.copy.name}.`),
  );
}

/**
 * The complete audit of one file.
 *
 * @param o - the opened file.
 * @param options - section id prefix and the copy check, if any.
 * @returns the view.
 */
export function checkpointView(o: OpenedCheckpoint, options: CheckpointViewOptions = { id: 'cp' }): HTMLElement {
  const i = o.inspection;
  const parts: [string, string, HTMLElement | null][] = [
    ['copy', 'Copy check', options.copyCheck === undefined ? null : copyCheckView(o, options.copyCheck)],
    ['byte-map', 'Byte map', section('Byte map', { 'data-role': 'byte-map' }, byteMap(i))],
    ['issues', 'Where it broke', issuesView(i)],
    ['header', 'Fixed header and checksum', fixedHeader(o)],
    ['fields', 'Variable header', variableHeader(i)],
    ['records', 'Descriptor table (records)', descriptorTable(i)],
    ['tokenizer', 'Tokenizer', tokenizerView(o)],
    ['config', 'Configuration and optimizer', configView(i)],
    ['tensors', 'Tensors (statistics, heatmaps)', statsView(o)],
  ];
  const present = parts.filter((p): p is [string, string, HTMLElement] => p[2] !== null);
  for (const [key, , el] of present) el.id = `${options.id}-${key}`;
  const links = present.map(([key, title]) => h('a', { href: `#${options.id}-${key}` }, title));
  const checksum = present.find(([key]) => key === 'header')?.[2].querySelector<HTMLElement>('[data-role=checksum]');
  if (checksum !== null && checksum !== undefined) {
    checksum.id = `${options.id}-checksum`;
    links.splice(present.findIndex(([key]) => key === 'header') + 1, 0, h('a', { href: `#${options.id}-checksum` }, 'Checksum'));
  }
  const toc = h('nav', { class: 'toc', 'data-role': 'toc', 'aria-label': 'sections' }, ...links);
  return h(
    'article',
    { class: 'checkpoint', 'data-name': o.name, id: options.id },
    h('h2', {}, o.name, h('span', { class: 'muted' }, ` — ${bytesText(i.fileLength)}${i.headerBytes === null ? '' : `, header ${i.headerBytes}, payload ${i.payloadBytes ?? '?'}`}`)),
    toc,
    verdictBanner(i),
    ...present.map(([, , el]) => el),
  );
}
