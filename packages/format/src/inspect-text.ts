/**
 * Plain-text rendering of a {@link CheckpointInspection} (shared by the CLI
 * and the conformance report; the web inspector renders the data itself).
 */
import type { CheckpointInspection, InspectedDescriptor, InspectionError } from './inspect.ts';

function pad(value: string | number | bigint, width: number): string {
  return String(value).padStart(width);
}

function errorLine(e: InspectionError): string {
  const where = [e.offset === undefined ? undefined : `offset ${e.offset}`, e.field, e.recordName === undefined ? undefined : `record "${e.recordName}"`].filter((x) => x !== undefined).join(', ');
  return `${e.code} (${e.category}${e.reason === 'unspecified' ? '' : `: ${e.reason}`})${where === '' ? '' : ` at ${where}`} — ${e.message}`;
}

function f64Text(value: number): string {
  if (Object.is(value, -0)) return '-0';
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  return `${value} (bits 0x${view.getBigUint64(0).toString(16).padStart(16, '0')})`;
}

function descriptorLine(d: InspectedDescriptor): string {
  const flags = [d.checks.byteLengthMatchesShape ? undefined : `byte_len≠shape×width (${d.expectedByteLength ?? 'overflow'})`, d.checks.contiguous ? undefined : 'not contiguous', d.checks.withinFile ? undefined : 'outside file']
    .filter((x) => x !== undefined)
    .join('; ');
  return [
    pad(d.index, 5),
    `${pad(d.entryOffset, 6)}–${String(d.entryOffset + d.entryLength - 1).padEnd(6)}`,
    `${d.roleTag}:${(d.role ?? '?').padEnd(15)}`,
    JSON.stringify(d.name).padEnd(36),
    `${d.dtypeTag}:${(d.dtype ?? '?').padEnd(3)}`,
    `[${d.shape.join(', ')}]`.padEnd(14),
    pad(d.offset, 10),
    pad(d.byteLength, 10),
    pad(d.end ?? 'overflow', 10),
    flags === '' ? 'ok' : flags,
  ].join('  ');
}

/**
 * Renders an inspection as a text report: verdict, fixed header with raw
 * bytes, checksum, variable-header fields, the descriptor table with per-row
 * checks, and every issue found.
 *
 * @param inspection - from `inspectCheckpoint`.
 * @param options - `maxDescriptors` limits the table (default: all).
 * @returns the report, lines separated by `\n`.
 */
export function renderInspection(inspection: CheckpointInspection, options: { readonly maxDescriptors?: number } = {}): string {
  const out: string[] = [];
  const v = inspection.verdict;
  out.push(`LLMCP35 v1 inspection: ${inspection.fileLength} bytes`);
  out.push(v.valid ? `verdict: VALID (${v.checkpoint.layout.checksumLabel})` : `verdict: INVALID ${errorLine(v.error)}`);
  out.push('', 'fixed header', '  offset  width  field                 bytes                     value');
  for (const f of inspection.fixedHeader) out.push(`  ${pad(f.offset, 6)}  ${pad(f.width, 5)}  ${f.field.padEnd(20)}  ${f.hex.padEnd(24)}  ${String(f.value)}`);
  if (inspection.checksum !== null) {
    const c = inspection.checksum;
    out.push(`  checksum: stored ${c.storedLabel}, computed ${c.computedLabel} (${c.matches ? 'match' : 'MISMATCH'})`);
  }
  if (inspection.fields.length > 0) {
    out.push('', 'variable header', '  offset  width  field                               value');
    for (const f of inspection.fields) {
      const value =
        f.type === 'f64' && typeof f.value === 'number'
          ? f64Text(f.value)
          : typeof f.value === 'string'
            ? JSON.stringify(f.value)
            : typeof f.value === 'bigint' && f.value > 0xffffffffn
              ? `${f.value} (0x${f.value.toString(16).padStart(16, '0')})`
              : String(f.value);
      out.push(`  ${pad(f.offset, 6)}  ${pad(f.width, 5)}  ${f.field.padEnd(34)}  ${value}`);
    }
  }
  if (inspection.tokenizer !== null) {
    const t = inspection.tokenizer;
    out.push('', `tokenizer: kind ${t.kindTag} (${t.kindName ?? 'unknown'}), declared vocabulary ${t.declaredVocabulary ?? '?'}${t.merges === null ? '' : `, ${t.merges} merges`}${t.records === null ? '' : `, ${t.records} record(s)`}`);
    if (t.preview.length > 0) out.push(`  first ${t.preview.length}: ${t.preview.join(' | ')}`);
  }
  if (inspection.selectedStep !== null) out.push(`selected step ${inspection.selectedStep}, optimizer step ${inspection.optimizerStep ?? '?'}, sampling RNG state 0x${(inspection.samplingRngState ?? 0n).toString(16).padStart(16, '0')}`);
  if (inspection.groups !== null) out.push(`groups: decay [${inspection.groups.decay.join(', ')}]; no-decay [${inspection.groups.noDecay.join(', ')}]`);
  if (inspection.descriptors.length > 0 || inspection.descriptorCount !== null) {
    const shown = inspection.descriptors.slice(0, options.maxDescriptors ?? inspection.descriptors.length);
    out.push('', `descriptors: ${inspection.descriptors.length} parsed of ${inspection.descriptorCount ?? '?'} declared`);
    out.push('    #  entry          role              name                                  dtype  shape               offset      length         end  checks');
    for (const d of shown) out.push(descriptorLine(d));
    if (shown.length < inspection.descriptors.length) out.push(`  … ${inspection.descriptors.length - shown.length} more`);
    out.push(`records end at ${inspection.recordsEnd ?? '?'} (file length ${inspection.fileLength})`);
  }
  if (inspection.parseStoppedAt !== null) out.push('', `parsing stopped: ${errorLine(inspection.parseStoppedAt)}`);
  if (inspection.headerIssues.length > 0) {
    out.push('', 'header issues (lenient parse):');
    for (const e of inspection.headerIssues) out.push(`  - ${errorLine(e)}`);
  }
  return out.join('\n');
}
