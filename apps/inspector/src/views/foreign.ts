/**
 * A safetensors or GGUF file: what it is (not an LLMCP35 checkpoint), where
 * its header and data lie, its metadata and its tensor table with byte
 * ranges — or why its header does not parse.
 */
import { describeForeignFile, foreignMetadataRows, foreignTensorRows, FOREIGN_VALUE_PREVIEW_CHARS } from '@llmcp/format/foreign';
import { h, section, table } from '../dom.ts';
import { bytesText } from '../format-text.ts';
import type { OpenedForeign } from '../opened.ts';

/** Tensor rows rendered at most (the rest are counted). */
const MAX_ROWS = 2000;

function preview(text: string): string {
  return text.length > FOREIGN_VALUE_PREVIEW_CHARS ? `${text.slice(0, FOREIGN_VALUE_PREVIEW_CHARS)}… (${text.length} chars)` : text;
}

/**
 * @param o - the opened file.
 * @returns its view.
 */
export function foreignView(o: OpenedForeign): HTMLElement {
  const kindName = o.format === 'safetensors' ? 'safetensors' : 'GGUF';
  const head = h('h2', {}, o.name, h('span', { class: 'muted' }, ` — ${bytesText(o.fileLength)}`));
  if (o.header === null) {
    const e = o.error;
    return h(
      'article',
      { class: 'foreign', 'data-name': o.name },
      head,
      h('div', { class: 'verdict bad', 'data-role': 'verdict' }, h('strong', {}, `${kindName} file`), ' — not an LLMCP35 checkpoint; its header does not parse: ', h('code', { 'data-role': 'error-code' }, e?.code ?? '?'), e?.offset === undefined ? '' : ` at offset ${e.offset}`, h('div', { class: 'verdict-message' }, e?.message ?? '')),
    );
  }
  const f = o.header;
  const meta = foreignMetadataRows(f);
  const rows = foreignTensorRows(f);
  const where =
    f.kind === 'safetensors'
      ? `JSON header of ${bytesText(f.headerBytes)} at [8, ${f.dataStart}); tensor data [${f.dataStart}, ${f.fileLength}).`
      : `GGUF v${f.version}: ${meta.length} metadata keys, ${rows.length} tensor infos; tensor data from ${f.dataStart} (alignment ${f.alignment}).`;
  return h(
    'article',
    { class: 'foreign', 'data-name': o.name },
    head,
    h('div', { class: 'verdict ok', 'data-role': 'verdict' }, h('strong', {}, `${kindName} file`), ` — not an LLMCP35 checkpoint: ${describeForeignFile(f)}`),
    h('p', { class: 'muted' }, where),
    section(
      f.kind === 'safetensors' ? '__metadata__' : 'Metadata',
      { 'data-role': 'foreign-metadata' },
      meta.length === 0 ? h('p', { class: 'muted' }, 'none') : table(['key', 'type', 'value'], meta.map((m) => [h('code', {}, m.key), m.type, preview(m.value)])),
    ),
    section(
      `Tensors (${rows.length})`,
      { 'data-role': 'foreign-tensors' },
      table(
        ['#', 'name', f.kind === 'safetensors' ? 'dtype' : 'type', f.kind === 'safetensors' ? 'shape' : 'ne (innermost first)', 'elements', 'range'],
        rows.slice(0, MAX_ROWS).map((r, i) => [String(i), h('code', {}, r.name), r.type, `[${r.shape.join(', ')}]`, String(r.elements), r.end === null ? `[${r.begin}, ?)` : `[${r.begin}, ${r.end})`]),
      ),
      rows.length > MAX_ROWS ? h('p', { class: 'muted' }, `… ${rows.length - MAX_ROWS} more tensors`) : null,
    ),
  );
}
