/**
 * What a resume did, in words: the one formatter behind `llmcp resume`'s
 * summary and the trainer app's screen.
 */
import type { RunResult } from '@llmcp/trainer';
import type { Colors } from './context.ts';
import { plural } from './internal/text.ts';

/**
 * The lines saying what a resume did beyond continuing: the slot it used,
 * each slot it refused and why, the loss records it cut beyond the
 * checkpoint, and the work a crash had left undone at the resumed step.
 * Empty for a fresh start.
 *
 * @param result - the result of `resumeRun` (or `trainRun`: no lines).
 * @param colors - from `colorsFor` (plain text when disabled).
 * @returns lines without newlines.
 * @example
 * ```ts
 * for (const line of resumeReportLines(result, colorsFor(process.stdout, process.env))) console.log(line);
 * ```
 */
export function resumeReportLines(result: RunResult, colors: Colors): string[] {
  if (result.resumedFrom === null) {
    // A run restarted from step 0 (no checkpoint was ever written) may still have cut records.
    return result.lossRecordsCut > 0 ? [`${colors.yellow('cut')} ${plural(result.lossRecordsCut, 'loss record')} a crash left in loss.jsonl before the first checkpoint`] : [];
  }
  const lines: string[] = [];
  const used = result.loadReport?.find((r) => r.slot === result.resumedFrom);
  lines.push(`resumed from ${result.resumedFrom}${used?.step === null || used === undefined ? '' : ` (step ${used.step})`}`);
  for (const r of result.loadReport ?? []) if (r.status === 'refused') lines.push(`${colors.yellow('refused')} ${r.slot}: ${r.reason ?? r.code ?? ''}`);
  if (result.lossRecordsCut > 0) {
    lines.push(`${colors.yellow('cut')} ${plural(result.lossRecordsCut, 'loss record')} beyond the checkpoint from loss.jsonl (steps a crash lost; they are recomputed identically)`);
  }
  const at = used?.step === null || used === undefined ? result.resumedFrom : `step ${used.step} (${result.resumedFrom})`;
  if (result.repaired.length > 0) {
    const why =
      result.repairedAfter === 'fork'
        ? `what the fork left to its first resume at ${at}`
        : result.repairedAfter === 'pivot'
          ? `what the pivot left to the resume at ${at}`
          : `what the crash left undone at ${at}`;
    lines.push(`${colors.yellow('completed')} ${why}: ${result.repaired.join(', ')}`);
  }
  return lines;
}
