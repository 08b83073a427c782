/**
 * The export fuzz's worker process (started and watched by
 * export-fuzz.ts's runExportFuzzCampaign): runs the cases [from, to) of a
 * campaign, each drawn from the hostile-checkpoint arbitrary with its own
 * seed, and prints one JSON line per case — the line is also the watcher's
 * sign of life — then one with the process's peak memory.
 */
import path from 'node:path';
import { caseAt, runExportCase } from './export-fuzz.ts';

/** Arguments (JSON in argv[2]). */
export interface ExportFuzzChildArgs {
  readonly seed: number;
  readonly from: number;
  readonly to: number;
  readonly workDir: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as ExportFuzzChildArgs;
for (let index = args.from; index < args.to; index++) {
  const c = caseAt(args.seed, index);
  const outcomes = await runExportCase(c, path.join(args.workDir, `case-${index}`));
  process.stdout.write(`${JSON.stringify({ index, traits: c.traits, outcomes })}\n`);
}
process.stdout.write(`${JSON.stringify({ done: true, maxRssKb: process.resourceUsage().maxRSS })}\n`);
