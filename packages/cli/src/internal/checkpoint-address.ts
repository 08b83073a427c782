/**
 * The one home of "which checkpoint does this argument name": every command
 * that takes a checkpoint (inspect, sample, diff, eval, export, fork's
 * `--slot`) accepts
 *
 * - a checkpoint file (`state.llmcp`, any `.llmcp`),
 * - a run directory: its `best/` slot (else the checkpoint a resume would
 *   use); with `--latest` the newest checkpoint that verifies (the one a
 *   resume would continue from),
 * - a slot directory (`runs/a/checkpoints/step_000600`),
 * - `run:slot` (`runs/a:best`, `runs/a:step_000600`, `runs/a:latest`): that
 *   slot, by name (a trailing `:slot` counts only when the whole argument is
 *   not itself a path).
 *
 * Slot names are the trainer's (`NAMED_SLOTS`, `isSlotName`); a name that is
 * not one, or a slot the run does not have, is refused listing the slots the
 * run has. Run slots are verified in full (job digest, state, pairing)
 * except by {@link locateCheckpoint}, which only finds the file (inspect
 * audits damaged files too).
 */
import { existsSync } from 'node:fs';
import { MAX_TEXT_FILE_BYTES, readRegularFileSync } from '@llmcp/format/node';
import path from 'node:path';
import type { DecodedCheckpoint } from '@llmcp/format';
import type { Job } from '@llmcp/trainer';
import type { CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { readCheckpointFile, requirePath, resolvePath } from './files.ts';

type Trainer = typeof import('@llmcp/trainer');

/** What an address argument names, before any slot is read. */
export type CheckpointAddress =
  | {
      readonly kind: 'file';
      /** The file as typed (relative to the working directory). */
      readonly file: string;
      readonly absolute: string;
      /** The run and slot the file lies in (`<run>/checkpoints/<slot>/state.llmcp`), else null. */
      readonly within: { readonly runDir: string; readonly run: string; readonly slot: string } | null;
    }
  | {
      readonly kind: 'run';
      /** The run directory as typed. */
      readonly run: string;
      readonly runDir: string;
      /** The slot named (`run:slot` or a slot directory); null: the run's default (best, or the newest with `--latest`). */
      readonly slot: string | null;
      /** `--latest` was given (and no slot was named). */
      readonly latest: boolean;
    };

/** Options of the address functions. */
export interface AddressOptions {
  /** `--latest`: for a run without a named slot, the newest checkpoint instead of the best. */
  readonly latest?: boolean;
  /** What the argument is called in messages (default `checkpoint`). */
  readonly what?: string;
}

/** The slot names, spelled for messages. */
export const SLOT_NAMES_TEXT = 'latest, latest.backup, best, best.backup or step_NNNNNN';

/** The run a slot directory belongs to: `<run>/checkpoints/<slot>` with a run directory above. */
function slotOwner(absolute: string, t: Trainer): { runDir: string; slot: string } | null {
  const slot = path.basename(absolute);
  const checkpoints = path.dirname(absolute);
  if (!t.isSlotName(slot) || path.basename(checkpoints) !== t.RUN_FILES.checkpoints) return null;
  const runDir = path.dirname(checkpoints);
  return t.isRunDirectory(runDir) ? { runDir, slot } : null;
}

/** A path for messages: relative to the working directory when below it. */
function shown(ctx: CliContext, absolute: string): string {
  const rel = path.relative(ctx.cwd, absolute);
  return rel === '' ? '.' : rel.startsWith('..') || path.isAbsolute(rel) ? absolute : rel;
}

/**
 * Parses an address argument (see the module comment). Reads the file system
 * (what exists decides how it is read), reads no slot.
 *
 * @param ctx - the command context.
 * @param spec - the argument as typed.
 * @param options - `--latest`, the argument's name.
 * @returns the address.
 * @throws CliError `CLI_FILE_NOT_FOUND`/`CLI_PATH_NOT_UTF8` (nothing there), `CLI_WRONG_FILE_KIND` (a directory that is no run or slot, a `:slot` on a file), `CLI_USAGE` (`--latest` with a named slot).
 */
export async function parseCheckpointAddress(ctx: CliContext, spec: string, options: AddressOptions = {}): Promise<CheckpointAddress> {
  const t = await import('@llmcp/trainer');
  const what = options.what ?? 'checkpoint';
  const latest = options.latest === true;
  let runPart = spec;
  let slot: string | null = null;
  const colon = spec.lastIndexOf(':');
  if (colon > 0 && !existsSync(resolvePath(ctx, spec))) {
    runPart = spec.slice(0, colon);
    slot = spec.slice(colon + 1);
  }
  const { absolute, isDirectory: dir } = requirePath(ctx, runPart, 'file-or-directory', slot === null ? what : 'run directory');
  if (!dir) {
    if (slot !== null) throw new CliError('CLI_WRONG_FILE_KIND', `${runPart} is a file; a :slot suffix needs a run directory`, { path: absolute, hint: `give the run directory, e.g. runs/a:${slot}` });
    if (latest) throw new CliError('CLI_USAGE', `--latest picks a run's newest checkpoint; ${spec} is a checkpoint file`, { option: '--latest' });
    const owner = path.basename(absolute) === t.RUN_FILES.state ? slotOwner(path.dirname(absolute), t) : null;
    return { kind: 'file', file: spec, absolute, within: owner === null ? null : { runDir: owner.runDir, run: shown(ctx, owner.runDir), slot: owner.slot } };
  }
  if (!t.isRunDirectory(absolute)) {
    const owner = slot === null ? slotOwner(absolute, t) : null;
    if (owner !== null) {
      if (latest) throw new CliError('CLI_USAGE', `--latest picks a run's newest checkpoint; ${spec} names the slot ${owner.slot}`, { option: '--latest' });
      return { kind: 'run', run: shown(ctx, owner.runDir), runDir: owner.runDir, slot: owner.slot, latest: false };
    }
    const state = path.join(absolute, t.RUN_FILES.state);
    const parent = path.dirname(absolute);
    throw new CliError('CLI_WRONG_FILE_KIND', `${runPart} is a directory but not a run directory (no run.json, run.lock or checkpoints/) or a slot directory of one`, {
      path: absolute,
      hint: existsSync(state)
        ? `give the checkpoint file: ${path.join(runPart, t.RUN_FILES.state)}`
        : path.basename(absolute) === t.RUN_FILES.checkpoints && t.isRunDirectory(parent)
          ? `give the run directory (${shown(ctx, parent)}) or one of its slots, e.g. ${shown(ctx, parent)}:best`
          : 'give a checkpoint file (.llmcp), a run directory, a slot directory or run:slot',
    });
  }
  if (slot !== null && latest) throw new CliError('CLI_USAGE', `give either --latest or a slot (${spec}), not both`, { option: '--latest' });
  return { kind: 'run', run: runPart, runDir: absolute, slot, latest };
}

/** What {@link unknownSlotError} checks. */
export interface SlotCheck {
  /** The run directory as typed. */
  readonly run: string;
  /** The run directory (absolute). */
  readonly runDir: string;
  /** The slot as given. */
  readonly slot: string;
  /** The slots the run has. */
  readonly slots: readonly string[];
  /** How the slot was given, e.g. `--slot`, or `slot` for `run:slot`. */
  readonly label: string;
}

/**
 * The error for a slot that is not a slot name (never a path: `../../etc`
 * must not reach the file system), or that the run does not have: both list
 * the slots it has.
 *
 * @param check - run, slot, the run's slots, label.
 * @param isSlotName - the trainer's slot-name rule.
 * @returns the `CLI_UNKNOWN_SLOT` error, or null when the run has the slot.
 */
export function unknownSlotError(check: SlotCheck, isSlotName: (s: string) => boolean): CliError | null {
  const { run, runDir, slot, slots, label } = check;
  const has = slots.length === 0 ? 'no slots' : slots.join(', ');
  const hint = "run 'llmcp status <run-dir>' or 'llmcp verify <run-dir>' to see the slots and whether they verify";
  const option = label.startsWith('--') ? { option: label } : {};
  if (!isSlotName(slot)) {
    return new CliError('CLI_UNKNOWN_SLOT', `${label} ${JSON.stringify(slot)} is not a slot name (${SLOT_NAMES_TEXT}); ${run} has: ${has}`, { path: runDir, ...option, hint });
  }
  if (!slots.includes(slot)) {
    return new CliError('CLI_UNKNOWN_SLOT', `${label} ${slot}: ${run} has no such slot; it has: ${has}`, { path: path.join(runDir, 'checkpoints', slot), ...option, hint });
  }
  return null;
}

async function trainerCall<T>(what: string, absolute: string, f: (t: Trainer) => Promise<T> | T): Promise<T> {
  const t = await import('@llmcp/trainer');
  try {
    return await f(t);
  } catch (e) {
    if (!t.isTrainerError(e)) throw e;
    throw new CliError('CLI_INVALID_CHECKPOINT', `${what}: ${e.code}: ${e.message}`, {
      path: absolute,
      causeCode: e.code,
      hint: "run 'llmcp verify <run-dir>' to see every slot and whether it verifies",
      cause: e,
    });
  }
}

/**
 * The slots of a run, and a check that a named slot is one of them.
 *
 * @param run - the run directory as typed.
 * @param runDir - the run directory (absolute).
 * @param slot - a slot to require, or null.
 * @param label - how the slot was given (`--slot`, `slot`).
 * @returns the run's slots.
 * @throws CliError `CLI_UNKNOWN_SLOT` (listing the slots), `CLI_INVALID_CHECKPOINT` (the run cannot be read).
 */
export async function runSlots(run: string, runDir: string, slot: string | null, label = 'slot'): Promise<readonly string[]> {
  const t = await import('@llmcp/trainer');
  const slots = await trainerCall(`cannot read run ${run}`, runDir, (tr) => tr.runStatus(runDir).slots);
  if (slot !== null) {
    const error = unknownSlotError({ run, runDir, slot, slots, label }, t.isSlotName);
    if (error !== null) throw error;
  }
  return slots;
}

/** Where an address leads: the state file and, for a run, which slot. */
export interface LocatedCheckpoint {
  readonly address: CheckpointAddress;
  /** Absolute path of the checkpoint file. */
  readonly stateFile: string;
  /** The run directory and slot, when it is a run's slot. */
  readonly run: { readonly dir: string; readonly name: string; readonly slot: string } | null;
  /** How to name it in messages: the file as typed, or `run:slot`. */
  readonly description: string;
  /** File-name stem of outputs made from it: `<run>-<slot>` (e.g. `default-best`), or the file's name without `.llmcp`. */
  readonly outputStem: string;
}

function located(address: CheckpointAddress, stateFile: string, run: { dir: string; name: string; slot: string } | null): LocatedCheckpoint {
  const description = address.kind === 'file' ? address.file : `${address.run}:${run?.slot ?? ''}`;
  const outputStem = run === null ? path.basename(stateFile).replace(/\.llmcp$/, '') : `${path.basename(run.dir)}-${run.slot}`;
  return { address, stateFile, run, description, outputStem };
}

function newestStep(slots: readonly string[], t: Trainer): string | null {
  let best: string | null = null;
  for (const s of slots) if (t.stepOfSlot(s) !== null && (best === null || (t.stepOfSlot(s) as number) > (t.stepOfSlot(best) as number))) best = s;
  return best;
}

/**
 * Finds the checkpoint file an address names without verifying anything
 * (for the layout audit, which shows damaged files too). A run's default is
 * `best`, else `latest`, else its newest step snapshot; with `--latest`:
 * `latest`, else the newest step snapshot, else `best`.
 *
 * @param ctx - the command context.
 * @param spec - the argument as typed.
 * @param options - `--latest`, the argument's name.
 * @returns the file and where it lies.
 * @throws CliError as {@link parseCheckpointAddress}, `CLI_UNKNOWN_SLOT`, or `CLI_FILE_NOT_FOUND` for a run without slots or a slot without its state file.
 */
export async function locateCheckpoint(ctx: CliContext, spec: string, options: AddressOptions = {}): Promise<LocatedCheckpoint> {
  const address = await parseCheckpointAddress(ctx, spec, options);
  if (address.kind === 'file') return located(address, address.absolute, address.within === null ? null : { dir: address.within.runDir, name: address.within.run, slot: address.within.slot });
  const t = await import('@llmcp/trainer');
  const slots = await runSlots(address.run, address.runDir, address.slot);
  const order = address.latest ? ['latest', newestStep(slots, t), 'best'] : ['best', 'latest', newestStep(slots, t)];
  const slot = address.slot ?? order.find((s): s is string => s !== null && slots.includes(s)) ?? null;
  if (slot === null) {
    throw new CliError('CLI_FILE_NOT_FOUND', `${address.run} has no checkpoint yet (no slots in ${path.join(address.run, 'checkpoints')})`, { path: address.runDir, hint: `train it first: llmcp resume ${address.run}` });
  }
  const stateFile = path.join(address.runDir, t.RUN_FILES.checkpoints, slot, t.RUN_FILES.state);
  if (!existsSync(stateFile)) {
    throw new CliError('CLI_FILE_NOT_FOUND', `slot ${slot} of ${address.run} has no ${t.RUN_FILES.state}`, { path: stateFile, hint: "run 'llmcp verify <run-dir>' to see every slot and whether it verifies" });
  }
  return located(address, stateFile, { dir: address.runDir, name: address.run, slot });
}

/** A resolved, verified checkpoint. */
export interface ResolvedCheckpoint extends LocatedCheckpoint {
  readonly checkpoint: DecodedCheckpoint;
  readonly bytes: Uint8Array;
  /** The slot's job (for a file: the `job.json` beside it when it pairs with it), else null. */
  readonly job: Job | null;
  /** The subject digest of the slot's provenance manifest, checked against the slot's files (null: a file, or a slot written before manifests). */
  readonly manifest: string | null;
}

/**
 * The job beside a checkpoint file (`<slot>/job.json`), when it decodes and
 * names this very file (same LLMCP35 checksum label); otherwise null.
 */
async function pairedJob(stateFile: string, checkpoint: DecodedCheckpoint): Promise<Job | null> {
  const jobFile = path.join(path.dirname(stateFile), 'job.json');
  if (!existsSync(jobFile)) return null;
  const { decodeJob } = await import('@llmcp/trainer');
  try {
    const job = decodeJob(readRegularFileSync(jobFile, { maxBytes: MAX_TEXT_FILE_BYTES, what: 'job.json' }), jobFile);
    return job.state.checksum === checkpoint.layout.checksumLabel ? job : null;
  } catch {
    return null;
  }
}

/**
 * Resolves an address to a valid checkpoint: a file is decoded with every
 * LLMCP35 rule (with the `job.json` beside it when that job pairs with it);
 * a run's slot is verified in full (job digest, state, pairing). A run's
 * default is its `best` slot, or, without one — and always with `--latest` —
 * the checkpoint a resume would use (the newest that verifies).
 *
 * @param ctx - the command context.
 * @param spec - the argument as typed.
 * @param options - `--latest`, the argument's name.
 * @returns the checkpoint, its bytes, job and where it lies.
 * @throws CliError as {@link parseCheckpointAddress}, `CLI_UNKNOWN_SLOT`, `CLI_INVALID_CHECKPOINT` (does not decode or verify).
 * @example
 * ```ts
 * const { checkpoint, description } = await resolveCheckpoint(ctx, 'runs/default:step_000600');
 * ```
 */
export async function resolveCheckpoint(ctx: CliContext, spec: string, options: AddressOptions = {}): Promise<ResolvedCheckpoint> {
  const address = await parseCheckpointAddress(ctx, spec, options);
  if (address.kind === 'file') {
    const { checkpoint, bytes } = readCheckpointFile(ctx, address.file);
    const run = address.within === null ? null : { dir: address.within.runDir, name: address.within.run, slot: address.within.slot };
    return { ...located(address, address.absolute, run), checkpoint, bytes, job: await pairedJob(address.absolute, checkpoint), manifest: null };
  }
  const slots = await runSlots(address.run, address.runDir, address.slot);
  const named = address.slot ?? (!address.latest && slots.includes('best') ? 'best' : null);
  const runDir = address.runDir;
  const verified =
    named === null
      ? await trainerCall(`no checkpoint of ${address.run} verifies`, runDir, async (t) => (await t.loadRunCheckpoint(runDir)).checkpoint)
      : await trainerCall(`slot ${named} of ${address.run} does not verify`, runDir, (t) => t.verifySlot(runDir, named));
  const { checkpoint, bytes } = readCheckpointFile(ctx, verified.stateFile);
  return { ...located(address, verified.stateFile, { dir: runDir, name: address.run, slot: verified.slot }), checkpoint, bytes, job: verified.job, manifest: verified.manifest?.parsed.digest ?? null };
}

/**
 * The default output file of an export: `<run>-<slot><ext>` for a run's slot
 * (`default-best.safetensors`, `default-step_000600.gguf`), else
 * `<file name without .llmcp><ext>`; in the working directory.
 *
 * @param source - where the checkpoint lies.
 * @param extension - e.g. `.safetensors`.
 * @returns the file name.
 */
export function defaultOutputName(source: LocatedCheckpoint, extension: string): string {
  return `${source.outputStem}${extension}`;
}
