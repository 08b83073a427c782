/**
 * Hostile output targets and inputs, on real `llmcp` processes: FIFOs,
 * sockets, device nodes (the numbers of /dev/zero, made with mknod where the
 * process may), directories and symbolic links to them — always made inside
 * a scratch folder, never the real /dev. Every command that writes a file
 * (export to safetensors, andrea-bin and its config, gguf, hf; import), with
 * and without --force, must refuse such a target with exit 3 at once (without
 * --force an output that exists may be refused as existing first, exit 4)
 * and leave it exactly as it was (same kind, inode and device numbers) with no
 * temporary file beside it; every command that reads one as data (verify,
 * inspect, import's .bin and config, train's --config and --corpus, config)
 * must refuse it with exit 3 at once: nothing blocks, nothing is replaced.
 */
import { lstatSync, mkdirSync, readdirSync, type Stats } from 'node:fs';
import path from 'node:path';
import { canMakeDeviceNodes, goldenCheckpoint, makeSpecialFile, SPECIAL_FILE_KINDS, type SpecialFileKind } from '../../fixtures.ts';
import { classifyCli, describeExit, llmcpRun } from './run-harness.ts';

/** One case: a command and a hostile path it is given. */
export interface HostileCase {
  readonly command: string;
  readonly kind: SpecialFileKind;
  readonly force: boolean;
}

/** The commands, given the hostile path, the golden checkpoint and a fresh folder; `writes`: the path is an output. */
const COMMANDS: Readonly<Record<string, { readonly writes: boolean; readonly args: (hostile: string, golden: string, dir: string) => string[] }>> = {
  'export safetensors': { writes: true, args: (h, g) => ['export', '--to', 'safetensors', g, '-o', h] },
  'export andrea-bin': { writes: true, args: (h, g) => ['export', '--to', 'andrea-bin', g, '-o', h] },
  'export andrea-bin --config-out': { writes: true, args: (h, g, d) => ['export', '--to', 'andrea-bin', g, '-o', path.join(d, 'side.bin'), '--config-out', h] },
  'export gguf': { writes: true, args: (h, g) => ['export', '--to', 'gguf', g, '-o', h] },
  'export hf (a file in it)': { writes: true, args: (h, g) => ['export', '--to', 'hf', g, path.dirname(h)] },
  import: { writes: true, args: (h, g) => ['import', '--from', 'andrea-bin', `${g}.bin`, '--config', g, '-o', h] },
  verify: { writes: false, args: (h) => ['verify', h] },
  inspect: { writes: false, args: (h) => ['inspect', h] },
  'import (the .bin)': { writes: false, args: (h, g, d) => ['import', '--from', 'andrea-bin', h, '--config', g, '-o', path.join(d, 'x.llmcp')] },
  'import (the config)': { writes: false, args: (h, g, d) => ['import', '--from', 'andrea-bin', `${g}.bin`, '--config', h, '-o', path.join(d, 'x.llmcp')] },
  'train --config': { writes: false, args: (h, _g, d) => ['train', path.join(d, 'run'), '--config', h] },
  'train --corpus': { writes: false, args: (h, _g, d) => ['train', path.join(d, 'run'), '--size', 'tiny', '--corpus', h] },
  config: { writes: false, args: (h) => ['config', h] },
};

/** Every case: each command with each kind (devices only where they can be made), writers with and without --force. */
export function hostileCases(scratch: string): HostileCase[] {
  const kinds = SPECIAL_FILE_KINDS.filter((k) => !k.includes('device') || canMakeDeviceNodes(scratch));
  return Object.entries(COMMANDS).flatMap(([command, c]) =>
    kinds
      // A directory is a valid corpus (a folder of .txt files) and hf writes into directories: not hostile there.
      .filter((kind) => !(kind.endsWith('directory') && (command === 'train --corpus' || command.startsWith('export hf'))))
      .flatMap((kind) => (c.writes ? [false, true] : [false]).map((force) => ({ command, kind, force }))),
  );
}

function identity(st: Stats): string {
  return `${st.mode.toString(8)}:${st.ino}:${st.rdev}`;
}

/**
 * Runs one case in a fresh folder `dir`.
 *
 * @param c - the case.
 * @param dir - a fresh folder (created).
 * @returns the exit's first line, and the problem (null when every rule held).
 */
export async function runHostileCase(c: HostileCase, dir: string): Promise<{ readonly outcome: string; readonly problem: string | null }> {
  mkdirSync(dir, { recursive: true });
  const golden = path.join(dir, 'golden.llmcp');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(golden, goldenCheckpoint());
  const made = await llmcpRun(['export', '--to', 'andrea-bin', golden, '-o', `${golden}.bin`]);
  if (made.code !== 0) return { outcome: 'setup', problem: `cannot make the .bin: ${describeExit(made)}` };
  const spec = COMMANDS[c.command];
  if (spec === undefined) throw new Error(`unknown command ${c.command}`);
  const folder = c.command.startsWith('export hf') ? path.join(dir, 'hf') : dir;
  mkdirSync(folder, { recursive: true });
  const hostile = makeSpecialFile(path.join(folder, c.command.startsWith('export hf') ? 'config.json' : 'target'), c.kind);
  const before = identity(lstatSync(hostile));
  const listing = readdirSync(folder).sort().join(',');
  const exit = await llmcpRun([...spec.args(hostile, golden, dir), ...(c.force ? ['--force'] : [])]);
  const outcome = classifyCli(exit);
  const first = `exit ${exit.code}${exit.timedOut ? ' (hung)' : ''}`;
  // Exit 3 (not a regular file, not a file); without --force an output that exists may be refused first as existing (exit 4: hf's non-empty folder).
  const allowed = spec.writes && !c.force ? [3, 4] : [3];
  if (!allowed.includes(exit.code ?? -1) || outcome.kind !== 'typed') return { outcome: first, problem: `expected a typed refusal, exit ${allowed.join(' or ')}: ${describeExit(exit)}` };
  if (identity(lstatSync(hostile)) !== before) return { outcome: first, problem: `${c.kind} was replaced or changed` };
  if (readdirSync(folder).sort().join(',') !== listing) return { outcome: first, problem: `the folder changed: ${readdirSync(folder).join(', ')}` };
  return { outcome: first, problem: null };
}

/** Counts of a campaign. */
export interface HostileReport {
  readonly cases: number;
  /** Refusals per command. */
  readonly byCommand: Readonly<Record<string, number>>;
  readonly failures: readonly { readonly case: HostileCase; readonly problem: string }[];
}

/**
 * Runs cases one after another, each in a fresh folder.
 *
 * @param cases - the cases.
 * @param options - a folder factory, progress.
 * @returns the report.
 */
export async function runHostileTargets(cases: readonly HostileCase[], options: { readonly scratch: () => { dir: string; dispose: () => void }; readonly onProgress?: (done: number, total: number) => void }): Promise<HostileReport> {
  const byCommand: Record<string, number> = {};
  const failures: { case: HostileCase; problem: string }[] = [];
  let done = 0;
  for (const c of cases) {
    const s = options.scratch();
    try {
      const r = await runHostileCase(c, path.join(s.dir, 'case'));
      if (r.problem === null) byCommand[c.command] = (byCommand[c.command] ?? 0) + 1;
      else failures.push({ case: c, problem: r.problem });
    } finally {
      s.dispose();
    }
    done += 1;
    options.onProgress?.(done, cases.length);
  }
  return { cases: cases.length, byCommand, failures };
}

/**
 * The report as text (for `pnpm soak`).
 *
 * @param r - the report.
 * @returns lines.
 */
export function formatHostileReport(r: HostileReport): string {
  const lines = [`hostile targets and inputs (FIFOs, sockets, device nodes, directories, links to them, in a scratch folder): ${r.cases} cases`];
  lines.push(`  refused (exit 3; exit 4 for an existing output without --force), left as they were: ${Object.entries(r.byCommand).map(([c, n]) => `${c} ${n}`).join(', ')}`);
  lines.push(`  failures: ${r.failures.length}`);
  for (const f of r.failures.slice(0, 6)) lines.push(`    ${f.case.command} on ${f.case.kind}${f.case.force ? ' --force' : ''}: ${f.problem.split('\n')[0]?.slice(0, 300) ?? ''}`);
  return lines.join('\n');
}
