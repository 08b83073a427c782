/**
 * Provenance in words: the lines `llmcp verify` prints about a run's
 * manifests and lineage chain, and about an export's manifest.
 */
import type { ChainLink, ManifestFileVerification, ProvenanceReport } from '@llmcp/trainer';
import type { Colors } from './context.ts';
import { plural } from './internal/text.ts';

/** A key hint, shortened for reading (the JSON output has it whole). */
function hint(h: string): string {
  return `${h.slice(0, 16)}…`;
}

/** One checkpoint of a chain: its step, how it came, where its files are. */
function linkText(l: ChainLink, colors: Colors): string {
  const via = l.via === 'train' ? '' : ` (${l.via})`;
  const where = l.slots.length > 0 ? '' : colors.dim(' [pruned]');
  const end = l.status === 'root' ? colors.dim(' [step 0: fresh model]') : l.status === 'fork' ? colors.dim(' [fork point in another run]') : l.status === 'before-manifests' ? colors.dim(' [from a checkpoint without a manifest]') : '';
  return `${l.step}${via}${where}${end}${l.status === 'broken' ? colors.red(' [BROKEN]') : ''}`;
}

/**
 * The lines about a run's provenance: the manifests and who signed them,
 * the chain from the newest checkpoint back to its origin, and every
 * problem (with the file or link it names).
 *
 * @param report - the `provenance` of `verifyRun`.
 * @param colors - from `colorsFor`.
 * @returns lines without newlines (indented two spaces).
 */
export function provenanceLines(report: ProvenanceReport, colors: Colors): string[] {
  if (report.state === 'none') return [`  provenance: ${colors.dim('no manifest (a run written before provenance manifests; nothing to check)')}`];
  const signers = [...new Set(report.manifests.map((m) => m.signer))];
  const signed =
    report.trustedKey !== null
      ? report.manifests.every((m) => m.signature === 'verified')
        ? `every one signed by the trusted key ${hint(report.trustedKey)}`
        : `${report.manifests.filter((m) => m.signature === 'verified').length} signed by the trusted key ${hint(report.trustedKey)}`
      : signers.length === 1 && signers[0] === null
        ? 'unsigned'
        : `signed by ${signers.map((s) => (s === null ? 'nobody (unsigned)' : `key ${hint(s)}`)).join(', ')}; signatures not checked (give --trust-key <public.pem>)`;
  const lines = [`  provenance: ${report.ok ? colors.green('ok') : colors.red('FAILED')}, ${plural(report.manifests.length, 'manifest')} (slots and lineage/), ${signed}`];
  if (report.chain.length > 0) {
    const pruned = report.chain.filter((l) => l.slots.length === 0).length;
    const broken = report.chain.some((l) => l.status === 'broken');
    lines.push(`  lineage: ${report.chain.map((l) => linkText(l, colors)).join(' ← ')}: ${broken ? colors.red('broken') : colors.green('unbroken')}${pruned > 0 ? `, ${pruned} pruned (their manifests kept in lineage/)` : ''}`);
  }
  if (report.unreached.length > 0) lines.push(colors.dim(`  ${plural(report.unreached.length, 'manifest')} in lineage/ on no slot's chain (a branch given up after a fallback, or a save cut short)`));
  for (const p of report.problems) lines.push(`    ${colors.red(p.code)}: ${p.message}`);
  return lines;
}

/**
 * The lines about one manifest file checked against its files.
 *
 * @param v - the result of `verifyManifestFile`.
 * @param colors - from `colorsFor`.
 * @returns lines without newlines.
 */
export function manifestFileLines(v: ManifestFileVerification, colors: Colors): string[] {
  const m = v.manifest;
  if (m === null) return [`${colors.red('FAILED')}  ${v.file}  ${v.problems.map((p) => `${p.code}: ${p.message}`).join('; ')}`];
  const lineage = m.lineage;
  const from = lineage === null ? 'not an llmcp manifest (no lineage)' : lineage.parent === null ? `${lineage.kind} of a fresh model` : `${lineage.kind} of step ${lineage.parent.step}${lineage.parent.run === null ? '' : ` of run ${lineage.parent.run}`}${lineage.parent.manifest === null ? '' : ` (checkpoint ${lineage.parent.manifest.slice(0, 23)}…)`}`;
  const signature =
    v.signature === 'verified' ? 'signed by the trusted key' : v.signature === 'signed' ? `signed by key ${hint(m.hint ?? '')} (not checked: give --trust-key <public.pem>)` : v.signature === 'unsigned' ? 'unsigned' : `signature ${v.signature}`;
  const head = `${v.ok ? colors.green('ok') : colors.red('FAILED')}  ${v.file}  ${plural(v.files.length, 'file')}, ${plural(m.resources.length, 'shard')}, ${signature}; ${from}`;
  return [head, ...v.problems.map((p) => `    ${colors.red(p.code)}: ${p.message}`)];
}
