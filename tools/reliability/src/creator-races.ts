/**
 * Racing creators of one new run directory: `llmcp train` and `llmcp fork`
 * (from two different runs, or from one) into the same directory. The first
 * creator is frozen by the fault shim at an exact call — right after it made
 * the directory, right before it links `run.lock`, right after it did — while
 * the second runs to its end; then the first is released. Or both start
 * together with no pause. Whatever the interleaving, exactly one creator
 * must win; the loser exits 3 (`TRAINER_RUN_LOCKED` or `TRAINER_RUN_INVALID`)
 * and touches nothing (but the private temporary it links to take the lock,
 * which it removes when the link fails); the directory holds one run (one run id in run.json
 * and every slot, one `created` event, at most one `forked-from`) that
 * verifies; and only the winning fork's source records a `forked-to`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { classifyCli, describeExit, llmcp, llmcpRun, runEvents, slotNames, snapshotTree, treeDifference, type CliOutcome } from './run-harness.ts';
import { createPausePoint, exactPath, type FaultRule, type PausePoint } from './shim.ts';

/** A creator: a new run, or a fork of source run a (its latest) or b (a step snapshot). */
export type Creator = 'train' | 'fork-a' | 'fork-b';

/** Where the first creator is frozen while the second runs to its end (`none`: both start together). */
export type RacePause = 'after-mkdir' | 'before-lock' | 'after-lock' | 'none';

/** One race. */
export interface CreatorRace {
  readonly first: Creator;
  readonly second: Creator;
  readonly pause: RacePause;
}

/** What a race needs: two trained source runs, the harness config file, and a fresh folder for the target. */
export interface RaceSetup {
  readonly sourceA: string;
  readonly sourceB: string;
  /** The config file of `train`. */
  readonly config: string;
  /** A fresh, empty folder; the target is `<scratch>/target`. */
  readonly scratch: string;
}

/** How a race ended. */
export interface CreatorRaceOutcome {
  readonly race: CreatorRace;
  /** Which creator won (exited 0), or null. */
  readonly winner: 'first' | 'second' | null;
  /** The first broken invariant, or null. */
  readonly problem: string | null;
  /** How the loser was refused (its code), when there was one. */
  readonly loserCode: string | null;
}

const ALL_CREATORS: readonly Creator[] = ['train', 'fork-a', 'fork-b'];
const ALL_PAUSES: readonly RacePause[] = ['after-mkdir', 'before-lock', 'after-lock', 'none'];

/** Every race: each ordered pair of creators (the same one twice too) at each pause. */
export const ALL_RACES: readonly CreatorRace[] = ALL_CREATORS.flatMap((first) => ALL_CREATORS.flatMap((second) => ALL_PAUSES.map((pause) => ({ first, second, pause }))));

function argsOf(creator: Creator, setup: RaceSetup, target: string): string[] {
  if (creator === 'train') return ['train', target, '--config', setup.config, '--plain'];
  return creator === 'fork-a' ? ['fork', setup.sourceA, target, '--slot', 'latest'] : ['fork', setup.sourceB, target, '--slot', 'step_000020'];
}

function pauseRule(pause: RacePause, target: string, at: PausePoint): FaultRule[] {
  const lock = exactPath(path.join(target, 'run.lock'));
  if (pause === 'after-mkdir') return [{ op: 'mkdir', path: exactPath(target), nth: 1, ok: true, action: at.after }];
  if (pause === 'before-lock') return [{ op: 'link', path: lock, nth: 1, action: at.before }];
  if (pause === 'after-lock') return [{ op: 'link', path: lock, nth: 1, ok: true, action: at.after }];
  return [];
}

const forkedTo = (run: string): number => runEvents(run).filter((e) => e.event === 'forked-to').length;

function runIdsOf(target: string): string[] {
  const ids = new Set<string>();
  try {
    ids.add(String((JSON.parse(readFileSync(path.join(target, 'run.json'), 'utf8')) as { runId?: unknown }).runId));
  } catch {
    ids.add('run.json unreadable');
  }
  for (const slot of slotNames(target)) {
    try {
      ids.add(String((JSON.parse(readFileSync(path.join(target, 'checkpoints', slot, 'job.json'), 'utf8')) as { run?: { id?: unknown } }).run?.id));
    } catch {
      ids.add(`${slot}/job.json unreadable`);
    }
  }
  return [...ids];
}

/** The first broken invariant of a finished race, or null. */
async function judge(race: CreatorRace, outcomes: { first: CliOutcome; second: CliOutcome }, target: string, forks: { before: Record<string, number>; setup: RaceSetup }): Promise<Omit<CreatorRaceOutcome, 'race'>> {
  const { first, second } = outcomes;
  const message = `first (${race.first}): ${describeExit(first.exit)}\n--- second (${race.second}): ${describeExit(second.exit)}`;
  const wins = [first, second].filter((o) => o.kind === 'ok').length;
  const winner = first.kind === 'ok' && wins === 1 ? 'first' : second.kind === 'ok' && wins === 1 ? 'second' : null;
  const fail = (problem: string): Omit<CreatorRaceOutcome, 'race'> => ({ winner, problem: `${problem}\n${message}`, loserCode: null });
  if (wins !== 1) return fail(`${wins} creators exited 0, expected exactly one`);
  const loser = winner === 'first' ? second : first;
  if (loser.exit.code !== 3 || !/TRAINER_RUN_(LOCKED|INVALID)/.test(loser.exit.stderr)) return fail('the loser was not refused with TRAINER_RUN_LOCKED or TRAINER_RUN_INVALID (exit 3)');
  const events = runEvents(target).map((e) => e.event);
  if (events.filter((e) => e === 'created').length !== 1) return fail(`run.json records ${events.filter((e) => e === 'created').length} 'created' events`);
  const winnerCreator = winner === 'first' ? race.first : race.second;
  if (events.filter((e) => e === 'forked-from').length !== (winnerCreator === 'train' ? 0 : 1)) return fail(`run.json records events ${events.join(', ')}`);
  const ids = runIdsOf(target);
  if (ids.length !== 1) return fail(`the target holds more than one run id: ${ids.join(', ')}`);
  const verified = classifyCli(await llmcpRun(['verify', target]));
  if (verified.kind !== 'ok') return fail(`llmcp verify of the target: ${describeExit(verified.exit)}`);
  for (const [name, run] of [['fork-a', forks.setup.sourceA], ['fork-b', forks.setup.sourceB]] as const) {
    const expected = (forks.before[run] ?? 0) + (winnerCreator === name ? 1 : 0);
    if (forkedTo(run) !== expected) return fail(`${name}'s source records ${forkedTo(run) - (forks.before[run] ?? 0)} new forked-to events, expected ${expected - (forks.before[run] ?? 0)}`);
  }
  return { winner, problem: null, loserCode: /TRAINER_RUN_(LOCKED|INVALID)/.exec(loser.exit.stderr)?.[0] ?? null };
}

/**
 * Runs one race into `<scratch>/target`.
 *
 * @param race - the creators and the pause.
 * @param setup - the sources, the config and a fresh folder.
 * @returns the outcome (`problem` null when every invariant held).
 */
export async function runCreatorRace(race: CreatorRace, setup: RaceSetup): Promise<CreatorRaceOutcome> {
  const target = path.join(setup.scratch, 'target');
  const before = { [setup.sourceA]: forkedTo(setup.sourceA), [setup.sourceB]: forkedTo(setup.sourceB) };
  if (race.pause === 'none') {
    const [first, second] = await Promise.all([llmcpRun(argsOf(race.first, setup, target)), llmcpRun(argsOf(race.second, setup, target))]);
    return { race, ...(await judge(race, { first: classifyCli(first), second: classifyCli(second) }, target, { before, setup })) };
  }
  const pause = createPausePoint();
  try {
    const firstChild = llmcp(argsOf(race.first, setup, target), { rules: pauseRule(race.pause, target, pause) });
    await pause.waitReached({ deadlineMs: 60_000, alive: firstChild.alive });
    const second = classifyCli(await llmcpRun(argsOf(race.second, setup, target)));
    const between = snapshotTree(target);
    await pause.release({ alive: firstChild.alive });
    const first = classifyCli(await firstChild.exited);
    const judged = await judge(race, { first, second }, target, { before, setup });
    // The first was frozen while the second ran to its end: if the second won, the first must not have changed its run.
    if (judged.problem === null && judged.winner === 'second') {
      // Except its own lock temporary (run.lock.tmp-<pid>-<token>, written to be linked as run.lock, removed after a
      // failed link): the lock protocol's private file, never read as the lock.
      const own = (tree: Map<string, string>): Map<string, string> => new Map([...tree].filter(([name]) => !name.startsWith('run.lock.tmp-')));
      const changed = treeDifference(own(between), own(snapshotTree(target)));
      if (changed !== null) return { race, ...judged, problem: `the released loser changed the winner's run: ${changed}` };
    }
    return { race, ...judged };
  } finally {
    pause.dispose();
  }
}

/** Counts of a campaign. */
export interface CreatorRaceReport {
  readonly races: number;
  /** Outcomes by pause: races, first wins, second wins. */
  readonly byPause: Readonly<Record<string, { races: number; first: number; second: number }>>;
  /** Loser refusals by code. */
  readonly loserCodes: Readonly<Record<string, number>>;
  readonly failures: readonly CreatorRaceOutcome[];
}

/**
 * Runs races one after another (each in a fresh folder) and counts the outcomes.
 *
 * @param races - the races.
 * @param options - sources and config, a folder factory, progress.
 * @returns the report.
 */
export async function runCreatorRaces(
  races: readonly CreatorRace[],
  options: { readonly sourceA: string; readonly sourceB: string; readonly config: string; readonly scratch: () => { dir: string; dispose: () => void }; readonly onProgress?: (done: number, total: number) => void },
): Promise<CreatorRaceReport> {
  const byPause: Record<string, { races: number; first: number; second: number }> = {};
  const loserCodes: Record<string, number> = {};
  const failures: CreatorRaceOutcome[] = [];
  let done = 0;
  for (const race of races) {
    const s = options.scratch();
    try {
      const o = await runCreatorRace(race, { sourceA: options.sourceA, sourceB: options.sourceB, config: options.config, scratch: s.dir });
      const row = (byPause[race.pause] ??= { races: 0, first: 0, second: 0 });
      row.races += 1;
      if (o.winner !== null) row[o.winner] += 1;
      if (o.loserCode !== null) loserCodes[o.loserCode] = (loserCodes[o.loserCode] ?? 0) + 1;
      if (o.problem !== null) failures.push(o);
    } finally {
      s.dispose();
    }
    done += 1;
    options.onProgress?.(done, races.length);
  }
  return { races: races.length, byPause, loserCodes, failures };
}

/**
 * The report as text (for `pnpm soak`).
 *
 * @param r - the report.
 * @returns lines.
 */
export function formatCreatorRaceReport(r: CreatorRaceReport): string {
  const lines = [`creator races: ${r.races} races of train/fork × train/fork into one new directory`];
  for (const [pause, row] of Object.entries(r.byPause)) lines.push(`  ${pause.padEnd(12)} ${row.races} races: the first won ${row.first}, the second ${row.second}`);
  lines.push(`  losers refused with: ${Object.entries(r.loserCodes).map(([c, n]) => `${c} ${n}`).join(', ') || '—'}`);
  lines.push(`  failures: ${r.failures.length}`);
  for (const f of r.failures.slice(0, 5)) lines.push(`    ${f.race.first} vs ${f.race.second} at ${f.race.pause}: ${(f.problem ?? '').split('\n')[0]}`);
  return lines.join('\n');
}
