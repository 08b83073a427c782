/**
 * The names of a run directory (../../../docs/DESIGN.md "A run directory"), as the
 * trainer writes them. The trainer's own constants (`RUN_FILES`,
 * `NAMED_SLOTS`, `stepSlotName` in packages/trainer/src/run-directory.ts)
 * live in a Node-only module, so the page keeps this one copy; keep the two
 * in step.
 */

/** File and directory names inside a run directory. */
export const RUN_FILES = {
  manifest: 'run.json',
  lossLog: 'loss.jsonl',
  samples: 'samples.json',
  checkpoints: 'checkpoints',
  state: 'state.llmcp',
  job: 'job.json',
} as const;

/** The slots besides the `step_NNNNNN` snapshots, in the trainer's resume order, then best. */
export const NAMED_SLOTS: readonly string[] = ['latest', 'latest.backup', 'best', 'best.backup'];

const STEP_SLOT = /^step_(\d{6,})$/;

/**
 * @param name - a directory name below `checkpoints/`.
 * @returns the step of a `step_NNNNNN` snapshot, or null.
 */
export function stepOfSlot(name: string): number | null {
  const m = STEP_SLOT.exec(name);
  return m === null ? null : Number(m[1]);
}

/**
 * @param name - a directory name below `checkpoints/`.
 * @returns whether it is a slot (never a hidden `.tmp-*`/`.trash-*` publication leftover).
 */
export function isSlotName(name: string): boolean {
  return NAMED_SLOTS.includes(name) || STEP_SLOT.test(name);
}

/**
 * Display order of slots: the named slots in resume order, then step snapshots from the newest.
 *
 * @param a - a slot name.
 * @param b - another.
 * @returns the comparison.
 */
export function compareSlots(a: string, b: string): number {
  const na = NAMED_SLOTS.indexOf(a);
  const nb = NAMED_SLOTS.indexOf(b);
  if (na >= 0 || nb >= 0) return (na < 0 ? 99 : na) - (nb < 0 ? 99 : nb);
  return (stepOfSlot(b) ?? 0) - (stepOfSlot(a) ?? 0);
}
