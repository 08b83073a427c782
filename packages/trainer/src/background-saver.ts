/**
 * Checkpoint persistence off the training path. At a step boundary the job
 * takes a private copy of the state (the engine's snapshot) and hands it to the
 * saver; encoding, hashing, the sample audit and all writes happen in a worker
 * thread while training continues. The next update never touches the buffers
 * being saved (they are copies, transferred to the worker). At most one save is
 * in flight: a new one waits for the previous. A failed save is reported as a
 * `TRAINER_SAVE_FAILED` error at the next interaction, never dropped.
 */
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from './internal/module-worker.ts';
import type { CheckpointState } from '@llmcp/format';
import { TrainerError } from './errors.ts';
import { performSave, type SaveRequest, type SaveResult } from './save.ts';
import type { SaveWorkerData, SaveWorkerReady, SaveWorkerRequest, SaveWorkerResponse } from './save-worker.ts';
import { canRestorePriority, restoreThreadPriority, savePriorityFromEnv, type SavePriority } from './save-priority.ts';
import type { PublishHook } from './run-directory.ts';
import type { LineageParent, LineageVia } from './provenance.ts';
import type { LineageStep } from './checkpoint-manifest.ts';
import type { SigningKey } from './signing-key.ts';

/** How saves run. */
export type SaveMode = 'worker' | 'inline';

function transferables(state: CheckpointState): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  for (const t of state.parameters) buffers.add(t.data.buffer as ArrayBuffer);
  for (const m of state.optimizer.moments) {
    buffers.add(m.first.buffer as ArrayBuffer);
    buffers.add(m.second.buffer as ArrayBuffer);
  }
  return [...buffers];
}

function startSaveWorker(priority: SavePriority): Worker {
  const here = import.meta.url;
  const workerData: SaveWorkerData = { priority };
  return startModuleWorker(new URL(here.endsWith('.ts') ? './save-worker.ts' : './save-worker.js', here), workerData);
}

/** Options of a {@link CheckpointSaver}. */
export interface CheckpointSaverOptions {
  /** Called with each finished save. */
  readonly onSaved?: ((result: SaveResult) => void) | null;
  /** Publication crash-injection hook (inline mode only; tests). */
  readonly hook?: PublishHook;
  /** Whether the run had a checkpoint before this saver's first save (default true). */
  readonly hadCheckpoint?: boolean;
  /** The save thread's priority (worker mode; default: `LLMCP_SAVE_PRIORITY`, else `idle` where priorities can be restored, else `low` — see save-priority.ts). */
  readonly priority?: SavePriority;
  /** Gives the save thread the training threads' priority back while a save is waited for (default: save-priority.ts's, where permitted). */
  readonly restorePriority?: ((tid: number) => boolean) | null;
  /** Steps ({@link CheckpointSaver.stepDone}) after which a save still in flight is treated as waited for (default: never; a starved idle save then finishes before the next one is due). */
  readonly hurryAfterSteps?: number | null;
  /**
   * Provenance manifests (absent: none are written): the key that signs them
   * (null: unsigned) and the checkpoint the trajectory continues — the slot a
   * resume started from, or null for a fresh model. Each save names the
   * previous save of this saver (or that checkpoint) as its parent.
   * `headLineage`: how that checkpoint continued its own parent, when its
   * manifest says (a save of the same files is that checkpoint again).
   */
  readonly provenance?: { readonly key: SigningKey | null; readonly head: LineageParent | null; readonly headLineage?: LineageStep | null };
}

/** How saves ran: on the calling thread (`inline`), or on the save thread at the priority it reached. */
export type SaveThread = SavePriority | 'inline';

/** Runs checkpoint saves, in a worker thread or inline. */
export class CheckpointSaver {
  readonly mode: SaveMode;
  readonly #hook: PublishHook | undefined;
  #worker: Worker | null = null;
  #nextId = 1;
  #inflight: Promise<SaveResult> | null = null;
  #pending = new Map<number, { resolve: (r: SaveResult) => void; reject: (e: unknown) => void }>();
  #failure: unknown = null;
  #last: SaveResult | null = null;
  #onSaved: ((result: SaveResult) => void) | null;
  readonly #hadCheckpoint: boolean;
  readonly #priority: SavePriority;
  #thread: SaveThread | null;
  readonly #restore: ((tid: number) => boolean) | null;
  #tid: number | null = null;
  /** Whether the save in flight is urgent: waited for, or in flight for {@link CheckpointSaverOptions.hurryAfterSteps} steps (its priority is restored as soon as the worker's thread id is known). */
  #urgent = false;
  #restored = false;
  #restores = 0;
  readonly #hurryAfterSteps: number | null;
  #inflightSteps = 0;
  readonly #key: SigningKey | null;
  readonly #manifests: boolean;
  /** The newest checkpoint of the trajectory: the parent of the next save. */
  #head: LineageParent | null;
  /** How {@link CheckpointSaver.#head} continued its own parent, or null when unknown. */
  #headLineage: LineageStep | null;
  /** How the next save continues {@link CheckpointSaver.#head}: `resume` until this saver's first save, then `train`. */
  #via: LineageVia;

  /**
   * @param mode - `worker` (default for runs) or `inline` (on the calling thread).
   * @param options - `onSaved`: called with each finished save; `hook`: publication crash-injection hook (inline mode only; tests); `restorePriority`: see {@link CheckpointSaverOptions};
   *   `hadCheckpoint` (default true): whether the run had a checkpoint before this saver's first save (a resumed run), so that a failure says truthfully what is left to resume from;
   *   `priority`: the save thread's priority (default from `LLMCP_SAVE_PRIORITY`).
   * @throws TrainerError `TRAINER_CONFIG_INVALID` when `LLMCP_SAVE_PRIORITY` holds an unknown value (worker mode).
   */
  constructor(mode: SaveMode, options: CheckpointSaverOptions = {}) {
    this.mode = mode;
    this.#onSaved = options.onSaved ?? null;
    this.#hook = options.hook;
    this.#hadCheckpoint = options.hadCheckpoint ?? true;
    this.#priority = options.priority ?? (mode === 'worker' ? savePriorityFromEnv() : 'normal');
    this.#thread = mode === 'inline' ? 'inline' : null;
    this.#hurryAfterSteps = options.hurryAfterSteps ?? null;
    this.#restore = options.restorePriority !== undefined ? options.restorePriority : mode === 'worker' && canRestorePriority() ? restoreThreadPriority : null;
    this.#manifests = options.provenance !== undefined;
    this.#key = options.provenance?.key ?? null;
    this.#head = options.provenance?.head ?? null;
    this.#headLineage = options.provenance?.headLineage ?? null;
    this.#via = this.#head === null ? 'init' : 'resume';
  }

  /**
   * The newest checkpoint of the trajectory (the parent of the next save), or null before a fresh run's first save.
   * @returns its link.
   */
  get lineageHead(): LineageParent | null {
    return this.#head;
  }

  /**
   * How many urgent saves (waited for, or in flight too long) got the training threads' priority back (diagnostics, tests).
   * @returns the count.
   */
  get restoredSaves(): number {
    return this.#restores;
  }

  /**
   * Tells the saver that a training step finished: a save in flight for
   * `hurryAfterSteps` steps gets the training threads' priority back (on a
   * machine whose cores are all busy with other work, an idle-policy save
   * would otherwise wait until the training waits for it).
   */
  stepDone(): void {
    if (this.#inflight === null || this.#hurryAfterSteps === null) return;
    this.#inflightSteps += 1;
    if (this.#inflightSteps >= this.#hurryAfterSteps && !this.#urgent) {
      this.#urgent = true;
      this.#hurry();
    }
  }

  /** The save in flight is urgent: an idle-policy save thread gets the training threads' priority back (once per save). */
  #hurry(): void {
    if (!this.#urgent || this.#restored || this.#thread !== 'idle' || this.#tid === null || this.#restore === null) return;
    this.#restored = true;
    if (this.#restore(this.#tid)) this.#restores += 1;
  }

  /**
   * How saves run: `inline`, or the priority the save thread reached (`idle`,
   * `low`, `normal`; below the one asked for where the platform refuses it).
   * @returns it, or null before the save worker's first message.
   */
  get thread(): SaveThread | null {
    return this.#thread;
  }

  #startWorker(): Worker {
    if (this.#worker !== null) return this.#worker;
    const worker = startSaveWorker(this.#priority);
    worker.on('message', (message: SaveWorkerResponse | SaveWorkerReady) => {
      this.#thread = message.priority;
      if ('ready' in message) {
        this.#tid = message.tid;
        this.#hurry();
        return;
      }
      const entry = this.#pending.get(message.id);
      if (entry === undefined) return;
      this.#pending.delete(message.id);
      if (message.ok) entry.resolve(message.result);
      else {
        const cause = Object.assign(new Error(message.error.message), { name: message.error.name, code: message.error.code, stack: message.error.stack ?? undefined });
        entry.reject(cause);
      }
    });
    const failAll = (error: unknown): void => {
      for (const entry of this.#pending.values()) entry.reject(error);
      this.#pending.clear();
      this.#worker = null;
      this.#tid = null;
    };
    worker.on('error', failAll);
    worker.on('exit', (code) => {
      if (this.#pending.size > 0) failAll(new Error(`the save worker exited with code ${code}`));
      this.#worker = null;
      // A thread id names nothing once its thread is gone (and may be reused): the next worker reports its own.
      this.#tid = null;
    });
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  /**
   * The error of a failed save that has not been reported yet.
   * @returns the error, or null.
   */
  get failure(): unknown {
    return this.#failure;
  }

  /**
   * The last completed save.
   * @returns its result, or null before the first.
   */
  get last(): SaveResult | null {
    return this.#last;
  }

  /**
   * Whether a save is in flight.
   * @returns true while one runs.
   */
  get busy(): boolean {
    return this.#inflight !== null;
  }

  #raiseFailure(): void {
    if (this.#failure === null) return;
    const cause = this.#failure;
    this.#failure = null;
    const fallback = this.#hadCheckpoint || this.#last !== null ? 'the previous checkpoint is intact' : 'no checkpoint of this run exists yet, so there is nothing to resume from';
    throw new TrainerError('TRAINER_SAVE_FAILED', `a checkpoint save failed; ${fallback}: ${(cause as Error).message ?? String(cause)}`, {
      cause,
    });
  }

  /**
   * Waits for the save in flight (if any).
   *
   * @returns the last completed save.
   * @throws TrainerError `TRAINER_SAVE_FAILED` if a save failed.
   */
  async flush(): Promise<SaveResult | null> {
    if (this.#inflight !== null) {
      this.#urgent = true;
      this.#hurry();
      try {
        await this.#inflight;
      } catch {
        // recorded in #failure
      }
    }
    this.#raiseFailure();
    return this.#last;
  }

  /**
   * Starts a save once the previous one has finished. In worker mode it returns
   * as soon as the request is handed over; in inline mode when it is done.
   *
   * @param submitted - the save; its tensors must be private copies (they are transferred). Its provenance (parent, key) is set here.
   * @throws TrainerError `TRAINER_SAVE_FAILED` if an earlier save failed.
   */
  async submit(submitted: SaveRequest): Promise<void> {
    await this.flush();
    // The parent is known only now: the previous save (if any) has finished.
    const request: SaveRequest = this.#manifests
      ? { ...submitted, provenance: { lineage: this.#head === null ? { via: 'init', parent: null } : { via: this.#via, parent: this.#head, parentLineage: this.#headLineage }, key: this.#key } }
      : submitted;
    const run = (): Promise<SaveResult> => {
      if (this.mode === 'inline') return performSave(request, this.#hook);
      const worker = this.#startWorker();
      const id = this.#nextId++;
      this.#urgent = false;
      this.#restored = false;
      this.#inflightSteps = 0;
      return new Promise<SaveResult>((resolve, reject) => {
        this.#pending.set(id, { resolve, reject });
        worker.ref();
        worker.postMessage({ id, request } satisfies SaveWorkerRequest, transferables(request.state));
      });
    };
    const promise = run().then(
      (result) => {
        this.#last = result;
        if (result.manifest !== null) {
          this.#head = result.manifest.link;
          this.#headLineage = { via: result.manifest.lineage.via, parent: result.manifest.lineage.parent };
          this.#via = 'train';
        }
        this.#inflight = null;
        this.#worker?.unref();
        this.#onSaved?.(result);
        return result;
      },
      (error: unknown) => {
        this.#failure = error;
        this.#inflight = null;
        this.#worker?.unref();
        throw error;
      },
    );
    promise.catch(() => {});
    this.#inflight = promise;
    if (this.mode === 'inline') await this.flush();
  }

  /**
   * Stops the worker without waiting for the save in flight (a second Ctrl-C).
   * Resolves once the worker thread has ended; a worker blocked in a system call
   * never ends, so callers bound the wait.
   */
  async abandon(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    if (worker !== null) await worker.terminate();
  }

  /** Waits for the save in flight, then stops the worker. */
  async close(): Promise<void> {
    try {
      await this.flush();
    } finally {
      const worker = this.#worker;
      this.#worker = null;
      if (worker !== null) await worker.terminate();
    }
  }
}
