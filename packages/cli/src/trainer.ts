/**
 * The trainer as the commands call it: loaded lazily (keeps the start-up of
 * the commands that do not train fast), its failures turned into
 * `CLI_RUN_FAILED` with the exit code of {@link trainerExitCode} and a hint.
 * Shared by the run, config and eval commands (its own module, so that they
 * need not import one another).
 */
import { CliError } from './errors.ts';
import { EXIT_CODES, type ExitCode } from './exit-codes.ts';

/** The trainer, loaded when a run command runs (keeps the other commands' start-up fast). */
export type Trainer = typeof import('@llmcp/trainer');

/**
 * Loads the trainer.
 *
 * @returns the `@llmcp/trainer` module.
 */
export const loadTrainer = (): Promise<Trainer> => import('@llmcp/trainer');

/**
 * How trainer failures map to exit codes: refusals caused by the user's
 * inputs are input errors (3), a run whose files do not verify is a failed
 * verification (1), everything else is a runtime error (4).
 */
const TRAINER_EXIT: Readonly<Record<string, ExitCode>> = {
  TRAINER_CONFIG_INVALID: EXIT_CODES.INPUT,
  TRAINER_CONFIG_UNREADABLE: EXIT_CODES.INPUT,
  TRAINER_CONFIG_CHANGED: EXIT_CODES.INPUT,
  TRAINER_INPUT_CHANGED: EXIT_CODES.INPUT,
  TRAINER_INPUT_INVALID: EXIT_CODES.INPUT,
  TRAINER_IMPLEMENTATION_CHANGED: EXIT_CODES.INPUT,
  TRAINER_RUN_INVALID: EXIT_CODES.INPUT,
  TRAINER_RUN_LOCKED: EXIT_CODES.INPUT,
  TRAINER_ENGINE_UNAVAILABLE: EXIT_CODES.INPUT,
  TRAINER_JOB_INVALID: EXIT_CODES.FAILED,
  TRAINER_STATE_INVALID: EXIT_CODES.FAILED,
  TRAINER_PAIR_MISMATCH: EXIT_CODES.FAILED,
  TRAINER_NO_CHECKPOINT: EXIT_CODES.FAILED,
  TRAINER_SLOT_FOREIGN: EXIT_CODES.FAILED,
  TRAINER_LOSS_LOG_INVALID: EXIT_CODES.FAILED,
  TRAINER_RESTORE_MISMATCH: EXIT_CODES.FAILED,
  TRAINER_MANIFEST_INVALID: EXIT_CODES.FAILED,
  TRAINER_MANIFEST_MISMATCH: EXIT_CODES.FAILED,
  TRAINER_SIGNATURE_INVALID: EXIT_CODES.FAILED,
  TRAINER_LINEAGE_BROKEN: EXIT_CODES.FAILED,
  TRAINER_KEY_INVALID: EXIT_CODES.INPUT,
};

/**
 * The exit code of a trainer failure, by its `TRAINER_*` code (the table of
 * `CLI_RUN_FAILED`): refused inputs → 3, a run that does not verify → 1,
 * anything else → 4. Programs that run the trainer themselves (the trainer
 * app) use it to exit like `llmcp`.
 *
 * @param code - the `code` of a `TrainerError`.
 * @returns the exit code.
 * @example
 * ```ts
 * catch (e) { if (isTrainerError(e)) process.exitCode = trainerExitCode(e.code); }
 * ```
 */
export function trainerExitCode(code: string): ExitCode {
  return TRAINER_EXIT[code] ?? EXIT_CODES.RUNTIME;
}

const TRAINER_HINT: Readonly<Record<string, string>> = {
  TRAINER_CONFIG_CHANGED: "a resume continues with the recorded config; to change policy fields use 'llmcp pivot' (in place) or 'llmcp fork' (new run)",
  TRAINER_INPUT_CHANGED: 'the corpus, split or tokenizer differs from the one the run recorded; restore it or start a new run',
  TRAINER_RUN_INVALID: "check the directory: 'llmcp train' needs a new (or empty) one, the other run commands an existing run",
  TRAINER_RUN_LOCKED: 'another process is using this run; wait for it or stop it',
  TRAINER_NO_CHECKPOINT: "run 'llmcp verify <run-dir>' to see why each slot was refused",
  TRAINER_LOSS_LOG_INVALID: "run 'llmcp verify <run-dir>' for details on loss.jsonl",
  TRAINER_ENGINE_FAILED: "the last checkpoint is intact: 'llmcp resume <run-dir>' continues from it",
};

/**
 * Runs `work` with the trainer loaded, turning a `TrainerError` into `CLI_RUN_FAILED` (exit code by its code, with a hint).
 *
 * @param work - what to do with the trainer.
 * @param what - what failed, for the message.
 * @param hints - hints by trainer error code that depend on the fields the error names (default: the fixed hints).
 * @returns the result of `work`.
 * @throws CliError `CLI_RUN_FAILED` for a trainer failure.
 */
export async function trainer<T>(work: (t: Trainer) => Promise<T> | T, what: string, hints: Readonly<Record<string, (fields: readonly string[], t: Trainer) => string>> = {}): Promise<T> {
  const t = await loadTrainer();
  try {
    return await work(t);
  } catch (e) {
    if (!t.isTrainerError(e)) throw e;
    const hint = hints[e.code]?.(e.fields ?? [], t) ?? TRAINER_HINT[e.code];
    throw new CliError('CLI_RUN_FAILED', `${what}: ${e.code}: ${e.message}`, { causeCode: e.code, exitCode: trainerExitCode(e.code), ...(hint === undefined ? {} : { hint }), cause: e });
  }
}
