/**
 * The conformance report (`pnpm --filter @llmcp/conformance run report`; it
 * was the root `pnpm start` until the trainer app took that script): the
 * golden fixture decoded, validated and re-encoded with its full layout and
 * verdict, then the whole suite against `@llmcp/format`.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checksumLabel, encodeCheckpoint, fnv1a64 } from '@llmcp/format';
import { inspectCheckpoint, renderInspection } from '@llmcp/format/inspect';
import { sha256Hex } from '@llmcp/tokenizer';
import { createFormatAdapter } from './adapter.ts';
import { fixturesDirectory, loadFixture, loadManifest } from './manifest.ts';
import { runConformanceSuite, type ConformanceReport } from './suite.ts';

/**
 * Builds the report text.
 * @param directory - fixtures directory (default: this package's).
 * @returns the text and the suite report.
 */
export async function conformanceReport(directory: string = fixturesDirectory()): Promise<{ text: string; report: ConformanceReport }> {
  const manifest = loadManifest(directory);
  const golden = loadFixture(manifest.golden.file, directory);
  const lines: string[] = [];
  lines.push(`# ${manifest.specVersion} conformance report`, '');
  lines.push(`golden fixture: ${path.join(directory, manifest.golden.file)}`);
  const sha256 = sha256Hex(golden);
  lines.push(`  size ${golden.length} bytes (manifest ${manifest.golden.size}), sha256 ${sha256} (${sha256 === manifest.golden.sha256 ? 'matches manifest' : 'DIFFERS from manifest'})`, '');
  const inspection = inspectCheckpoint(golden);
  lines.push(renderInspection(golden, { inspection, file: manifest.golden.file }));
  if (inspection.verdict.valid) {
    const again = encodeCheckpoint(inspection.verdict.checkpoint);
    const identical = again.length === golden.length && again.every((b, i) => b === golden[i]);
    lines.push(`re-encoded: ${again.length} bytes, ${checksumLabel(fnv1a64(again))} (plain FNV-1a of the file), ${identical ? 'byte-identical to the fixture' : 'DIFFERENT from the fixture'}`);
  } else {
    lines.push('re-encoded: not possible, the fixture did not decode');
  }
  const report = await runConformanceSuite(createFormatAdapter(), { fixturesDirectory: directory });
  lines.push('', `## suite against ${report.adapter}: ${report.results.length} cases (${manifest.cases.length} corpus files from ${manifest.generator})`);
  for (const r of report.results) lines.push(`  ${r.passed ? 'ok  ' : 'FAIL'} ${r.group.padEnd(7)} ${r.id.padEnd(32)} ${r.actual.length > 110 ? `${r.actual.slice(0, 107)}...` : r.actual}`);
  for (const r of report.results.filter((x) => !x.passed)) lines.push('', `FAIL ${r.id}: ${r.title}`, `  expected: ${r.expected}`, `  actual:   ${r.actual}`);
  lines.push('', `${report.passed} passed, ${report.failed} failed`);
  return { text: lines.join('\n'), report };
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const { text, report } = await conformanceReport();
  process.stdout.write(`${text}\n`);
  process.exitCode = report.failed === 0 ? 0 : 1;
}
