/**
 * The decoder: flat parameters and gradients, training and evaluation passes
 * over batches, logits, checkpoint conversions (../../../docs/spec/model.md; ../../../docs/spec/backward.md).
 */
import type { CheckpointState, DecoderConfig, NamedTensor, SplitMix64 } from '@llmcp/format';
import { validateDecoderConfig } from './config.ts';
import { ModelError } from './errors.ts';
import { initializeParameters } from './init.ts';
import { kernelChoice, openKernels, resolveKernels } from './kernels/kernel-choice.ts';
import type { KernelChoice, Kernels } from './kernels/kernel-set.ts';
import { allocateBatchBuffers, allocateF64, finishSlice, firstNonFinite, meanLoss, REDUCE_LOCAL_ELEMENTS, reduceWork, sequenceGradients } from './internal/batch-reduce.ts';
import { decoderBackward, decoderForward, type DecoderState, type Sequence } from './reference/model.ts';
import { checkCacheOwner, checkProjection, checkRoom, decodeRow, ensureCacheRows, KvCache, recordWork, type KvCacheOptions } from './kv-cache.ts';
import { namedViews, parameterLayout, tensorAt, type ParameterEntry, type ParameterLayout } from './layout.ts';
import { kernelArenaPages } from './kernels/kernel-arena.ts';
import { clearableSharedF64 } from './kernels/wasm-clear.ts';
import { fixedMemory, type WasmMemory } from './kernels/wasm-assembler.ts';
import { arenaAdjoint, arenaFrontOf, runPhase, useArenas, type PhaseContext, type PhaseRunner, type WorkerArenas } from './parallel/batch-pass.ts';
import type { ThreadTuning } from './parallel/tuning.ts';
import { HELP, helpBlock, resetHelp } from './parallel/help.ts';
import { ThreadPool } from './parallel/pool.ts';
import { checkCalls, checkEntry, instantiateCalls, runAllCalls, type CallSetSpec, type SharedCalls } from './parallel/shared-calls.ts';
import { COMMAND, CTRL, GRADIENTS } from './parallel/protocol.ts';

/** A batch of B sequences of T tokens, row-major (`inputs[b·T + t]`); targets are the inputs shifted by one. */
export interface TokenBatch {
  /** (B·T) input token ids. */
  readonly inputs: ArrayLike<number>;
  /** (B·T) target token ids. */
  readonly targets: ArrayLike<number>;
  /** B, the number of sequences. */
  readonly rows: number;
  /** T, the positions per sequence (≤ maxPositions). */
  readonly columns: number;
}

/** Options of a decoder. */
export interface DecoderOptions {
  /**
   * Threads for training and evaluation passes (default 1). With more than one,
   * `parameters` lives on a SharedArrayBuffer and `threads − 1` worker threads
   * are started by {@link Decoder.create}. The bits never depend on this number.
   */
  readonly threads?: number;
  /**
   * Memory for the per-sequence weight-gradient partials of one wave of
   * sequences with threads > 1 (bytes, default 256 MiB), all workers
   * together: each worker keeps a slot for every sequence of a wave (at least
   * `threads` of them). A batch whose B partials do not fit runs in several
   * waves; the bits do not change.
   */
  readonly partialMemoryBytes?: number;
  /**
   * The kernel set the decoder and its worker threads run (default: the
   * calling thread's choice, `LLMCP_KERNELS` or `setKernels`). Every set
   * gives the same bits.
   */
  readonly kernels?: KernelChoice;
  /**
   * Tuning and fault injection of the worker threads, for tests and
   * benchmarks ({@link ThreadTuning}): kept by reference and read when a
   * phase starts, so the caller may change it between steps. The bits never
   * depend on it.
   */
  readonly tuning?: ThreadTuning;
}

/** Counters of the worker threads (diagnostics). */
export interface ParallelStats {
  /** Threads taking part in training and evaluation passes. */
  readonly threads: number;
  /** Sequences run by worker threads (not the calling thread) so far. */
  readonly workerSequences: number;
  /** Sequences one wave holds (partial slots). */
  readonly waveSize: number;
  /**
   * Sequences whose weight-gradient partial was written and then reduced so
   * far; the others were added straight into the gradient, in order, by the calling thread.
   */
  readonly partialSequences: number;
  /**
   * Milliseconds the calling thread spent so far waiting, after its own share
   * of a phase, for the worker threads to finish theirs (mostly the end of a
   * training wave: sequences are whole units of work, so the thread that
   * finishes first waits for the other's last one; also worker wake-ups). A
   * diagnostic of how evenly the threads share the work. A thread that
   * has run out of sequences computes rows of the others' matrix products
   * meanwhile (WebAssembly kernels): that time is not counted, only the time
   * it had none to compute (see {@link helpedProducts}).
   */
  readonly waitMs: number;
  /**
   * Matrix products whose lower rows a thread with no sequence left computed
   * so far, for a thread still running one (0 with one thread, and with the
   * scalar kernels). The bits are the same whichever thread, and whichever
   * kernels, compute which rows.
   */
  readonly helpedProducts: number;
  /**
   * Partials the reduction added into the gradient with a WebAssembly SIMD
   * kernel so far, counted once per thread that reduced a slice of them; the
   * others were added in JavaScript (same bits). With worker threads on the
   * WebAssembly memories the decoder makes, the first worker's partials are.
   */
  readonly foldedPartials: number;
}

/** Options of {@link Decoder.trainStep}. */
export interface TrainStepOptions {
  /**
   * Add this pass's gradient to the stored one (`stored + adjoint`, the
   * reference rule) instead of replacing it (`+0.0 + adjoint`, i.e. a
   * zero-grad first). Default false.
   */
  readonly accumulate?: boolean;
}

/** Default memory budget for the per-sequence weight partials of one wave (bytes). */
const PARTIAL_BUDGET_BYTES = 256 * 1024 * 1024;

/**
 * How a decoder runs its batch passes, given by {@link Decoder.create} when it
 * started worker threads (internal: a plain `new Decoder(config)` runs on the
 * calling thread).
 */
export interface DecoderThreads {
  /** The started worker threads. */
  readonly runner: PhaseRunner;
  /** The parameters, on the SharedArrayBuffer the workers read. */
  readonly parameters: Float64Array;
  /** The gradients, on a SharedArrayBuffer: the workers write their slices (REDUCE), and may read them (Decoder.shareCalls inputs: the optimizer's update). */
  readonly gradients: Float64Array;
  /** Sets every gradient to +0.0 faster than `fill` can on a SharedArrayBuffer (kernels/wasm-clear.ts), or null. */
  readonly clearGradients: (() => void) | null;
  /** Memory for the per-sequence weight partials of one wave (bytes). */
  readonly partialBudget: number;
  /** The tuning the threads were started with ({@link DecoderOptions.tuning}). */
  readonly tuning: ThreadTuning;
}

/** How {@link Decoder.create} sets a decoder up (internal: `new Decoder(config)` takes the defaults). */
export interface DecoderSetup {
  /** The kernel set (default: the calling thread's choice). */
  readonly kernels?: KernelChoice;
  /** The worker threads it started, or none. */
  readonly threaded?: DecoderThreads;
}

/** Which token ids a check covers: the first `count` of a (rows, columns) batch, named `what` in errors. */
interface TokenSpan {
  readonly count: number;
  readonly columns: number;
  readonly what: string;
}

function checkTokens(values: ArrayLike<number>, V: number, span: TokenSpan): void {
  const { count, columns: T, what } = span;
  for (let i = 0; i < count; i++) {
    const id = values[i] as number;
    if (!Number.isInteger(id) || id < 0 || id >= V) {
      throw new ModelError('MODEL_TOKEN_OUT_OF_RANGE', `${what} token at row ${Math.floor(i / T)}, column ${i % T}: expected an integer in [0, ${V}), found ${String(id)}`, {
        row: Math.floor(i / T),
        column: i % T,
        field: what,
      });
    }
  }
}

/**
 * A decoder-only transformer with every parameter in one `Float64Array`
 * (model order, see {@link ParameterLayout}) and a gradient array of the same
 * layout. Training passes are bit-exact with the reference implementation.
 *
 * @example
 * ```ts
 * const model = new Decoder(FIXTURE_DECODER_CONFIG);
 * model.initialize(33n);
 * const loss = model.trainStep({ inputs: [0, 1], targets: [1, 2], rows: 1, columns: 2 });
 * loss; // 2.289446593751845
 * model.gradient('final_norm.gain'); // Float64Array(4)
 * ```
 */
export class Decoder {
  /** The configuration. */
  readonly config: DecoderConfig;
  /** Names, shapes and offsets of the parameters. */
  readonly layout: ParameterLayout;
  /** All parameters, model order (a SharedArrayBuffer view when threads > 1). */
  readonly parameters: Float64Array;
  /** Gradients, same layout; written by {@link trainStep}. */
  readonly gradients: Float64Array;
  /** The kernel set of the calling thread, with its workspace. */
  readonly #kernels: Kernels;
  /** Clears the gradients with WebAssembly's memory.fill (threaded: kernels/wasm-clear.ts), or null (`fill`). */
  readonly #clearGradients: (() => void) | null;
  /** Whether worker threads take part (arrays on SharedArrayBuffers, partial slots, reduce phases). */
  readonly #threaded: boolean;
  /** The worker threads, which run the phases of a batch pass with the calling thread; null on one thread, where the pass runs directly. */
  readonly #pool: PhaseRunner | null;
  /** The worker threads' tuning ({@link DecoderOptions.tuning}; none on one thread). */
  readonly #tuning: ThreadTuning;
  /** The calling thread's kernels, batch buffers and inputs (and, with worker threads, the control block they share). */
  readonly #ctx: PhaseContext;
  #version = 0;
  readonly #partialBudget: number;
  /** Products helped in the help blocks of replaced arenas (parallelStats). */
  #helpedBefore = 0;
  /** Sets of worker arena memories made so far (their ids). */
  #arenaSets = 0;
  /** Call sets shared so far (their ids). */
  #callSets = 0;
  #closed = false;

  /**
   * Creates a single-threaded decoder with zeroed parameters (call
   * {@link initialize} or {@link loadParameters}). For worker threads use
   * {@link Decoder.create}.
   *
   * @param config - a valid decoder configuration.
   * @param setup - internal: the kernel set and the worker threads {@link Decoder.create} chose (omit it).
   * @throws ModelError `MODEL_INVALID_CONFIG` for an invalid configuration, `MODEL_KERNELS_UNAVAILABLE` when the native kernels are required but missing.
   */
  constructor(config: DecoderConfig, setup: DecoderSetup = {}) {
    validateDecoderConfig(config);
    // LLMCP_KERNELS=native without the addon fails here (MODEL_KERNELS_UNAVAILABLE), not in a step.
    const set = resolveKernels(setup.kernels);
    const threaded = setup.threaded;
    const pool = threaded?.runner ?? null;
    const parameters = threaded?.parameters ?? null;
    const gradients = threaded?.gradients ?? null;
    this.#clearGradients = threaded?.clearGradients ?? null;
    const partialBudget = threaded?.partialBudget ?? PARTIAL_BUDGET_BYTES;
    this.config = Object.freeze({ ...config });
    this.layout = parameterLayout(this.config);
    this.parameters = parameters ?? new Float64Array(this.layout.size);
    this.gradients = gradients ?? new Float64Array(this.layout.size);
    this.#kernels = openKernels(this.config, set);
    this.#threaded = pool !== null;
    this.#pool = pool;
    this.#tuning = threaded?.tuning ?? {};
    this.#partialBudget = partialBudget;
    const shared = this.#threaded;
    this.#ctx = {
      config: this.config,
      kernels: this.#kernels,
      parameters: this.parameters,
      gradients: this.gradients,
      // One thread has no control block: nothing is shared.
      control: pool?.control ?? new Int32Array(0),
      inputs: new Int32Array(0),
      targets: new Int32Array(0),
      buffers: allocateBatchBuffers(this.layout, this.config.layers, this.config.modelWidth, 0, 0, 0, shared),
      regions: [],
      arenas: null,
      helping: null,
      fold: null,
      idleMs: 0,
      calls: new Map(),
    };
  }

  /**
   * Creates a decoder, starting worker threads when `options.threads > 1`.
   *
   * @param config - a valid decoder configuration.
   * @param options - thread count.
   * @returns the decoder (zeroed parameters).
   * @throws ModelError `MODEL_INVALID_CONFIG`, or `MODEL_WORKER_FAILED` when a worker cannot start.
   * @example
   * ```ts
   * const model = await Decoder.create(config, { threads: 2 });
   * try { model.initialize(33n); model.trainStep(batch); } finally { await model.close(); }
   * ```
   */
  static async create(config: DecoderConfig, options: DecoderOptions = {}): Promise<Decoder> {
    const threads = options.threads ?? 1;
    if (!Number.isSafeInteger(threads) || threads < 1 || threads > 256) {
      throw new ModelError('MODEL_INVALID_CONFIG', `threads: expected an integer in [1, 256], found ${String(threads)}`, { field: 'threads' });
    }
    const budget = options.partialMemoryBytes ?? PARTIAL_BUDGET_BYTES;
    if (typeof budget !== 'number' || !(budget >= 0) || !Number.isFinite(budget)) {
      throw new ModelError('MODEL_INVALID_CONFIG', `partialMemoryBytes: expected a finite number ≥ 0, found ${String(budget)}`, { field: 'partialMemoryBytes' });
    }
    validateDecoderConfig(config);
    const kernels = options.kernels ?? kernelChoice();
    const set = resolveKernels(kernels); // before the workers start: they run the same set
    if (threads === 1) return new Decoder(config, { kernels });
    const layout = parameterLayout(config);
    // The gradients in a shared WebAssembly memory of their own where one can be had: zero-grad is then a memory.fill.
    const clearable = clearableSharedF64(layout.size);
    const arrays = { parameters: allocateF64(layout.size, true), gradients: clearable?.array ?? allocateF64(layout.size, true) };
    const tuning = options.tuning ?? {};
    const pool = await ThreadPool.start(config, arrays, threads, set, tuning);
    try {
      return new Decoder(config, { kernels: set, threaded: { runner: pool, ...arrays, clearGradients: clearable?.clear ?? null, partialBudget: budget, tuning } });
    } catch (e) {
      await pool.close();
      throw e;
    }
  }

  /**
   * A single-threaded decoder holding the parameters of a checkpoint.
   *
   * @param state - a decoded checkpoint (only `decoder` and `parameters` are used).
   * @returns the decoder.
   * @throws ModelError `MODEL_INVALID_CONFIG` or `MODEL_PARAMETER_MISMATCH`.
   */
  static fromCheckpoint(state: Pick<CheckpointState, 'decoder' | 'parameters'>): Decoder {
    const model = new Decoder(state.decoder);
    model.loadParameters(state.parameters);
    return model;
  }

  /**
   * Threads used by training and evaluation passes.
   * @returns 1 without worker threads.
   */
  get threads(): number {
    return this.#pool?.threads ?? 1;
  }

  /**
   * Worker-thread counters (diagnostics, e.g. to see that workers took part).
   * @returns the counters.
   */
  parallelStats(): ParallelStats {
    if (this.#pool === null) return { threads: 1, workerSequences: 0, waveSize: 0, partialSequences: 0, waitMs: 0, helpedProducts: 0, foldedPartials: 0 };
    return {
      threads: this.threads,
      workerSequences: Atomics.load(this.#ctx.control, CTRL.WORKER_SEQUENCES),
      waveSize: this.#ctx.buffers.slots,
      partialSequences: Atomics.load(this.#ctx.control, CTRL.PARTIAL_SEQUENCES),
      waitMs: this.#pool.waitMs + this.#ctx.idleMs,
      helpedProducts: this.#helpedProducts(),
      foldedPartials: Atomics.load(this.#ctx.control, CTRL.FOLDED),
    };
  }

  /**
   * Xavier-uniform initialization from SplitMix64 (../../../docs/spec/model.md §4): gains 1.0,
   * matrices drawn in model order from one generator.
   * @param seed - the generator state to start from (33n for the fixture), or a generator to draw from.
   */
  initialize(seed: bigint | SplitMix64): void {
    initializeParameters(this.parameters, this.layout, seed);
  }

  #entry(name: string): ParameterEntry {
    const i = this.layout.indexByName.get(name);
    if (i === undefined) throw new ModelError('MODEL_PARAMETER_MISMATCH', `no parameter named ${JSON.stringify(name)}`, { tensorName: name });
    return this.layout.entries[i] as ParameterEntry;
  }

  /**
   * A live view of one parameter tensor.
   * @param name - canonical name.
   * @returns a `subarray` of {@link parameters}.
   * @throws ModelError `MODEL_PARAMETER_MISMATCH` for an unknown name.
   */
  parameter(name: string): Float64Array {
    const e = this.#entry(name);
    return this.parameters.subarray(e.offset, e.offset + e.length);
  }

  /**
   * A live view of one gradient tensor.
   * @param name - canonical name.
   * @returns a `subarray` of {@link gradients}.
   * @throws ModelError `MODEL_PARAMETER_MISMATCH` for an unknown name.
   */
  gradient(name: string): Float64Array {
    const e = this.#entry(name);
    return this.gradients.subarray(e.offset, e.offset + e.length);
  }

  /** Resets every stored gradient to +0.0 (the zero-grad of ../../../docs/spec/training.md §4). */
  zeroGradients(): void {
    if (this.#clearGradients !== null) this.#clearGradients();
    else this.gradients.fill(0);
  }

  /** @returns the products helped so far (those counted in the help blocks replaced, and in the current one). */
  #helpedProducts(): number {
    const help = this.#ctx.helping;
    return this.#helpedBefore + (help === null ? 0 : Atomics.load(help.block, HELP.HELPED));
  }

  #checkOpen(): void {
    if (this.#closed) throw new ModelError('MODEL_CLOSED', 'the decoder was closed');
  }

  #prepareBatch(batch: TokenBatch): { B: number; T: number } {
    this.#checkOpen();
    if (typeof batch !== 'object' || batch === null) throw new TypeError('batch must be an object');
    const B = batch.rows;
    const T = batch.columns;
    if (!Number.isSafeInteger(B) || B < 1 || !Number.isSafeInteger(T) || T < 1) {
      throw new ModelError('MODEL_INVALID_BATCH', `batch shape: expected integer rows ≥ 1 and columns ≥ 1, found ${String(B)} × ${String(T)}`);
    }
    if (T > this.config.maxPositions) {
      throw new ModelError('MODEL_CONTEXT_TOO_LONG', `batch columns: expected at most maxPositions = ${this.config.maxPositions}, found ${T}`, { field: 'columns' });
    }
    const n = B * T;
    if (batch.inputs?.length !== n || batch.targets?.length !== n) {
      throw new ModelError(
        'MODEL_INVALID_BATCH',
        `batch arrays: expected ${n} inputs and targets (${B} × ${T}), found ${String(batch.inputs?.length)} and ${String(batch.targets?.length)}`,
      );
    }
    const V = this.config.vocabularySize;
    checkTokens(batch.inputs, V, { count: n, columns: T, what: 'input' });
    checkTokens(batch.targets, V, { count: n, columns: T, what: 'target' });
    const ctx = this.#ctx;
    const shared = this.#threaded;
    let grown = false;
    if (ctx.inputs.length < n) {
      ctx.inputs = shared ? new Int32Array(new SharedArrayBuffer(n * 4)) : new Int32Array(n);
      ctx.targets = shared ? new Int32Array(new SharedArrayBuffer(n * 4)) : new Int32Array(n);
      grown = true;
    }
    const old = ctx.buffers;
    // Every worker holds the slots of a whole wave (any of them may run any sequence of it): the budget is theirs together.
    const P = this.layout.size;
    const slots = shared ? Math.max(1, Math.min(B, Math.max(this.threads, Math.floor(this.#partialBudget / ((this.threads - 1) * P * 8))))) : 0;
    if (old.rows !== B || old.columns !== T || old.slots !== slots) {
      const arenas = shared ? this.#workerArenas(slots * P, T) : null;
      ctx.buffers = allocateBatchBuffers(this.layout, this.config.layers, this.config.modelWidth, B, T, slots, shared, arenas === null, arenas === null ? null : arenaAdjoint(arenas));
      if (arenas !== ctx.arenas) {
        this.#helpedBefore = this.#helpedProducts();
        useArenas(ctx, arenas, 0);
      }
      grown = true;
    }
    // The calling thread's arena opens on its shared memory too, so that a worker with no sequence left can compute its products (help.ts);
    // and goes back onto it after a longer sequence (logits, generation) moved it to a memory of its own (else nothing is done).
    if (ctx.arenas !== null) this.#kernels.workspace.adoptArenaMemory({ memory: ctx.arenas.memories[0] as WasmMemory, front: 0 }, ctx.arenas.positions);
    for (let i = 0; i < n; i++) {
      ctx.inputs[i] = batch.inputs[i] as number;
      ctx.targets[i] = batch.targets[i] as number;
    }
    this.#version = (this.#version + 1) | 0;
    if (this.#pool !== null) {
      if (grown) this.#pool.reconfigure(ctx);
      const c = ctx.control;
      Atomics.store(c, CTRL.ROWS, B);
      Atomics.store(c, CTRL.COLUMNS, T);
      Atomics.store(c, CTRL.VERSION, this.#version);
      Atomics.store(c, CTRL.THREADS, this.threads);
    }
    return { B, T };
  }

  /**
   * The workers' arena memories for `reserved` partial elements each and
   * sequences of `T` positions: the current ones when they are large enough,
   * else new ones (at least as large as the old, so alternating batch shapes
   * settle on one set). A worker opens its kernel arena after its slots (with
   * the native kernels too: they read its views in place); with the scalar
   * kernels the arena part stays untouched (memory is committed when
   * written). The first worker's memory also holds the pass
   * adjoint, after its slots, where the memory allows (else the adjoint stays
   * an array of its own and the reduction adds in JavaScript). Null when they
   * cannot be made (no shared WebAssembly memory here, or too large for one):
   * the partials then go through {@link BatchBuffers.partials}, as the same bits.
   */
  #workerArenas(reserved: number, T: number): WorkerArenas | null {
    const old = this.#ctx.arenas;
    if (old !== null && old.reserved >= reserved && old.positions >= T) return old;
    const want = { reserved: Math.max(reserved, old?.reserved ?? 0), positions: Math.max(T, old?.positions ?? 0) };
    const elements = this.#kernels.workspace.arenaElements(want.positions);
    for (const adjoint of [this.layout.size, 0]) {
      try {
        const set = { id: this.#arenaSets + 1, memories: [] as WasmMemory[], help: helpBlock(this.threads), adjoint, ...want };
        for (let t = 0; t < this.threads; t++) set.memories.push(fixedMemory(kernelArenaPages(arenaFrontOf(set, t), elements), true));
        this.#arenaSets++;
        return set;
      } catch {
        // without the adjoint, or none
      }
    }
    return null;
  }

  /** Runs a TRAIN or EVALUATE phase over sequences [start, end) (a wave, or all of the batch). */
  #phase(command: number, start: number, end: number): void {
    const c = this.#ctx.control;
    const tuning = this.#tuning;
    const plan = tuning.frontShare ?? null;
    let share = -1;
    if (plan !== null) {
      // Waves start at multiples of the slot count (an evaluation is one wave).
      const wanted = plan(start / this.#ctx.buffers.slots, end - start);
      if (!Number.isFinite(wanted)) throw new RangeError(`tuning.frontShare must return a finite number, returned ${String(wanted)}`);
      share = Math.max(0, Math.min(end - start, Math.floor(wanted)));
    }
    Atomics.store(c, CTRL.FRONT_SHARE, share + 1);
    Atomics.store(c, CTRL.NEXT, start);
    Atomics.store(c, CTRL.BACK, end);
    Atomics.store(c, CTRL.REMAINING, share < 0 ? end - start : end - start - share);
    Atomics.store(c, CTRL.END, end);
    Atomics.store(c, CTRL.WAVE_START, start);
    const help = this.#ctx.helping;
    if (help !== null) resetHelp(help.block, this.threads, tuning.helpEnabled ?? true, tuning.helpForce ?? false);
    (this.#pool as PhaseRunner).run(this.#ctx, command);
  }

  /**
   * After the TRAIN phase of the wave [start, end): reduces the partials of the
   * sequences after the calling thread's in-order prefix and, for the last
   * wave (`write` not null), finishes the adjoint and writes it into the
   * gradients as `write` says, unless an element of it is not finite (skipped
   * when there is nothing to do).
   * @returns the first non-finite adjoint element after finishing, or −1.
   */
  #reduce(start: number, end: number, write: number | null): number {
    const c = this.#ctx.control;
    const from = Atomics.load(c, CTRL.NEXT);
    const finish = write !== null;
    if (from === end && !finish) return -1;
    Atomics.store(c, CTRL.REDUCE_FROM, from);
    Atomics.store(c, CTRL.END, end);
    Atomics.store(c, CTRL.WAVE_START, start);
    Atomics.store(c, CTRL.FINISH, finish ? 1 : 0);
    Atomics.store(c, CTRL.FIRST_BAD, -1);
    Atomics.store(c, CTRL.GRADIENTS, write ?? GRADIENTS.NONE);
    Atomics.store(c, CTRL.ARRIVED, 0);
    Atomics.store(c, CTRL.FAILED, 0);
    const fault = this.#tuning.faultSlice ?? -1;
    Atomics.store(c, CTRL.FAULT, fault < 0 ? 0 : 2 * (fault + 1) + (this.#tuning.faultThrows === true ? 1 : 0));
    Atomics.add(c, CTRL.PARTIAL_SEQUENCES, end - from);
    const work = reduceWork(this.layout, end - from, finish, this.#ctx.buffers.rows * this.#ctx.buffers.columns);
    if (work < (this.#tuning.reduceLocalElements ?? REDUCE_LOCAL_ELEMENTS)) {
      // The calling thread alone, as the only slice: cheaper than waking the workers.
      Atomics.store(c, CTRL.SLICES, 1);
      Atomics.store(c, CTRL.COMMAND, COMMAND.REDUCE);
      runPhase(this.#ctx, 0);
    } else {
      Atomics.store(c, CTRL.SLICES, this.threads);
      (this.#pool as PhaseRunner).run(this.#ctx, COMMAND.REDUCE);
    }
    return Atomics.load(c, CTRL.FIRST_BAD);
  }

  /**
   * One forward and backward pass on a batch: returns the mean next-token
   * cross-entropy and writes the gradient of every parameter into
   * {@link gradients} (replacing it, or adding to it with `accumulate`).
   * Nothing is written when the loss or a gradient is not finite.
   *
   * @param batch - B sequences of T ≤ maxPositions tokens.
   * @param options - `accumulate` to add to the stored gradients.
   * @returns the batch loss.
   * @throws ModelError `MODEL_INVALID_BATCH`, `MODEL_TOKEN_OUT_OF_RANGE`, `MODEL_CONTEXT_TOO_LONG`, `MODEL_NON_FINITE`, `MODEL_WORKER_FAILED`.
   */
  trainStep(batch: TokenBatch, options: TrainStepOptions = {}): number {
    const { B, T } = this.#prepareBatch(batch);
    const write = options.accumulate === true ? GRADIENTS.ADD : GRADIENTS.SET;
    if (this.#pool !== null) return this.#trainThreaded(B, T, write);
    // One thread: the reference pass on this thread's kernels, sequence by sequence, each S_b added into the adjoint in order.
    const k = this.#kernels;
    const ws = k.workspace;
    const { buffers } = this.#ctx;
    ws.prepare(this.parameters, this.#version);
    const state = ws.state(T);
    const scale = 1.0 / (B * T);
    for (let b = 0; b < B; b++) {
      const seq = this.#sequence(b, T);
      decoderForward(k, state, seq);
      buffers.rowLoss.set(state.acts.rowLoss.subarray(0, T), b * T);
      const weights = ws.weightGradients(buffers.adjoint, 0, b > 0);
      decoderBackward(k, state, seq, sequenceGradients(weights, buffers, { row: b * T, rows: T, add: b > 0, scale }));
      ws.sequenceDone();
    }
    ws.flushGradients();
    const loss = this.#loss(B * T, 'training');
    // The batch's sums (the gains, the embedding lookup), then the gradients: written only when every element is finite.
    const bad = finishSlice(buffers.adjoint, buffers, this.layout, this.#ctx.inputs, B * T, this.config.modelWidth, 0, this.layout.size);
    if (bad >= 0) throw this.#nonFiniteGradient(bad);
    const adjoint = buffers.adjoint;
    if (write === GRADIENTS.SET) this.gradients.set(adjoint);
    else for (let i = 0; i < adjoint.length; i++) this.gradients[i] = (this.gradients[i] as number) + (adjoint[i] as number);
    return loss;
  }

  /** Sequence b of the batch in the buffers, T positions, with its targets. */
  #sequence(b: number, T: number): Sequence {
    const { inputs, targets } = this.#ctx;
    return { tokens: inputs, offset: b * T, targets: targets.subarray(b * T, b * T + T), logitsFrom: 0 };
  }

  /** @returns the batch's mean loss from its row losses. @throws ModelError `MODEL_NON_FINITE` when it is not finite. */
  #loss(n: number, what: 'training' | 'evaluation'): number {
    const loss = meanLoss(this.#ctx.buffers.rowLoss, n);
    if (!Number.isFinite(loss)) throw new ModelError('MODEL_NON_FINITE', `${what} loss is not finite: ${loss}`);
    return loss;
  }

  /** @returns the error of the first non-finite adjoint element, by tensor. */
  #nonFiniteGradient(bad: number): ModelError {
    const e = this.#locate(bad);
    return new ModelError('MODEL_NON_FINITE', `gradient of ${e.name}[${bad - e.offset}] is not finite: ${this.#ctx.buffers.adjoint[bad]}`, {
      tensorName: e.name,
      index: bad - e.offset,
    });
  }

  /**
   * A training pass with worker threads: waves of up to `slots` sequences
   * (parallel/batch-pass.ts), each trained and then its partials reduced in
   * order b by parameter slices; the last reduction finishes the adjoint and
   * writes the gradients as `write` says, unless the loss or an element is
   * not finite.
   */
  #trainThreaded(B: number, T: number, write: number): number {
    const buffers = this.#ctx.buffers;
    const wave = buffers.slots;
    let bad = -1;
    let loss = NaN;
    for (let start = 0; start < B; start += wave) {
      const end = Math.min(B, start + wave);
      this.#phase(COMMAND.TRAIN, start, end);
      if (end < B) {
        this.#reduce(start, end, null);
        continue;
      }
      // The last wave: every row's loss is in. The REDUCE writes the gradients only when it and every gradient are finite.
      loss = meanLoss(buffers.rowLoss, B * T);
      bad = this.#reduce(start, end, !Number.isFinite(loss) ? GRADIENTS.NONE : write);
    }
    this.#loss(B * T, 'training');
    if (bad >= 0) throw this.#nonFiniteGradient(bad);
    return loss;
  }

  /**
   * The batch mean loss without gradients (the no-grad evaluation of
   * ../../../docs/spec/training.md §7; identical arithmetic to {@link trainStep}'s forward).
   *
   * @param batch - B sequences of T ≤ maxPositions tokens.
   * @returns the batch loss.
   * @throws ModelError `MODEL_INVALID_BATCH`, `MODEL_TOKEN_OUT_OF_RANGE`, `MODEL_CONTEXT_TOO_LONG`, `MODEL_NON_FINITE`, `MODEL_WORKER_FAILED`.
   */
  evaluateLoss(batch: TokenBatch): number {
    const { B, T } = this.#prepareBatch(batch);
    if (this.#pool !== null) this.#phase(COMMAND.EVALUATE, 0, B);
    else {
      const ws = this.#kernels.workspace;
      ws.prepare(this.parameters, this.#version);
      const state = ws.state(T);
      for (let b = 0; b < B; b++) {
        decoderForward(this.#kernels, state, this.#sequence(b, T));
        this.#ctx.buffers.rowLoss.set(state.acts.rowLoss.subarray(0, T), b * T);
      }
    }
    return this.#loss(B * T, 'evaluation');
  }

  /** @returns T, after checking a prefix of tokens. */
  #checkPrefix(tokens: ArrayLike<number>): number {
    this.#checkOpen();
    const T = tokens?.length;
    if (!Number.isSafeInteger(T) || T < 1) throw new ModelError('MODEL_INVALID_BATCH', `tokens: expected at least one token, found ${String(T)}`);
    if (T > this.config.maxPositions) {
      throw new ModelError('MODEL_CONTEXT_TOO_LONG', `tokens: expected at most maxPositions = ${this.config.maxPositions}, found ${T}`);
    }
    checkTokens(tokens, this.config.vocabularySize, { count: T, columns: T, what: 'input' });
    return T;
  }

  /** The no-grad forward pass of a checked prefix of T tokens, logits of every row or of the last; returns the pass's state. */
  #forward(tokens: ArrayLike<number>, T: number, rows: 'all' | 'last'): DecoderState {
    this.#version = (this.#version + 1) | 0;
    const ws = this.#kernels.workspace;
    ws.prepare(this.parameters, this.#version);
    const state = ws.state(T);
    decoderForward(this.#kernels, state, { tokens, offset: 0, targets: null, logitsFrom: rows === 'all' ? 0 : T - 1 });
    return state;
  }

  /**
   * Logits of every position of one sequence (a no-grad forward of shape [1, T]).
   *
   * @param tokens - 1 … maxPositions token ids.
   * @returns (T, V) a fresh array.
   * @throws ModelError `MODEL_INVALID_BATCH`, `MODEL_TOKEN_OUT_OF_RANGE`, `MODEL_CONTEXT_TOO_LONG`.
   */
  logits(tokens: ArrayLike<number>): Float64Array {
    const { logits } = this.#forward(tokens, this.#checkPrefix(tokens), 'all').acts;
    return logits.data.slice(0, logits.rows * logits.columns);
  }

  /**
   * Logits of the last position only (what generation samples from); the same
   * bits as the last row of {@link logits}.
   *
   * @param tokens - 1 … maxPositions token ids.
   * @returns (V) a fresh array.
   * @throws ModelError `MODEL_INVALID_BATCH`, `MODEL_TOKEN_OUT_OF_RANGE`, `MODEL_CONTEXT_TOO_LONG`.
   */
  nextTokenLogits(tokens: ArrayLike<number>): Float64Array {
    const { logits } = this.#forward(tokens, this.#checkPrefix(tokens), 'last').acts;
    const V = logits.columns;
    return logits.data.slice((logits.rows - 1) * V, logits.rows * V);
  }

  /**
   * A key/value cache for this decoder (use it with {@link prefill} and
   * {@link decodeNext}, or pass it to `generate`).
   *
   * @param options - capacity in positions (default maxPositions; storage grows on demand).
   * @returns an empty cache.
   * @throws ModelError `MODEL_INVALID_CONFIG` for a capacity outside [1, maxPositions].
   */
  createKvCache(options: KvCacheOptions = {}): KvCache {
    return new KvCache(this, options);
  }

  /**
   * Runs a prompt into an empty cache: one no-grad forward on the prompt (the
   * same pass as {@link nextTokenLogits}), whose rotated keys and values of
   * every layer are kept. Nothing is written to the cache on failure.
   *
   * @param cache - an empty cache built by this decoder.
   * @param tokens - 1 … capacity token ids.
   * @returns (V) the last position's logits (a fresh array; the bits of `nextTokenLogits(tokens)`).
   * @throws ModelError `MODEL_CACHE_MISMATCH`, `MODEL_CACHE_STATE` (not empty), `MODEL_CACHE_OVERFLOW`, `MODEL_INVALID_BATCH`, `MODEL_TOKEN_OUT_OF_RANGE`, `MODEL_CONTEXT_TOO_LONG`, `MODEL_NON_FINITE`.
   */
  prefill(cache: KvCache, tokens: ArrayLike<number>): Float64Array {
    this.#checkOpen();
    const s = checkCacheOwner(cache, this);
    if (s.length !== 0) {
      throw new ModelError('MODEL_CACHE_STATE', `prefill: the cache already holds ${s.length} positions; reset it first or continue with decodeNext`, { field: 'cache' });
    }
    const T = this.#checkPrefix(tokens);
    checkRoom(s, T);
    const { acts } = this.#forward(tokens, T, 'last');
    const D = this.config.modelWidth;
    const V = this.config.vocabularySize;
    const n = T * D;
    for (let l = 0; l < this.config.layers; l++) {
      const a = acts.blocks[l]!;
      checkProjection(a.q.data, n, { what: 'query', layer: l });
      checkProjection(a.k.data, n, { what: 'key', layer: l });
      checkProjection(a.v.data, n, { what: 'value', layer: l });
    }
    const logits = acts.logits.data.slice((T - 1) * V, T * V);
    checkProjection(logits, V, { what: 'logit', layer: -1 });
    ensureCacheRows(s, T);
    for (let l = 0; l < this.config.layers; l++) {
      const a = acts.blocks[l]!;
      s.keys[l]!.set(a.kr.data.subarray(0, n));
      s.values[l]!.set(a.v.data.subarray(0, n));
    }
    recordWork(s, T, true);
    return logits;
  }

  /**
   * One cached decode step: appends `token` at the next position of every
   * layer cache and returns its logits, projecting only the new row. The bits
   * equal `nextTokenLogits(prefix + token)`. Nothing is written to the cache
   * on failure.
   *
   * @param cache - a prefilled cache built by this decoder.
   * @param token - a token id in [0, V).
   * @returns (V) the new position's logits (a fresh array).
   * @throws ModelError `MODEL_CACHE_MISMATCH`, `MODEL_CACHE_STATE` (before a prefill), `MODEL_CACHE_OVERFLOW`, `MODEL_TOKEN_OUT_OF_RANGE`, `MODEL_NON_FINITE`.
   */
  decodeNext(cache: KvCache, token: number): Float64Array {
    this.#checkOpen();
    const s = checkCacheOwner(cache, this);
    if (s.length === 0) throw new ModelError('MODEL_CACHE_STATE', 'decodeNext: the cache is empty; prefill it with the prompt first', { field: 'cache' });
    checkRoom(s, 1);
    checkTokens([token], this.config.vocabularySize, { count: 1, columns: 1, what: 'input' });
    return decodeRow(s, { kernels: this.#kernels, parameters: this.parameters }, token);
  }

  #locate(index: number): ParameterEntry {
    return tensorAt(this.layout, index) ?? (this.layout.entries[this.layout.entries.length - 1] as ParameterEntry);
  }

  /**
   * The parameters as checkpoint tensors: views into {@link parameters} (no
   * copy), in model order with their shapes — pass them straight to the format.
   * @returns named tensors.
   */
  toCheckpointParameters(): NamedTensor[] {
    return namedViews(this.layout, this.parameters);
  }

  /**
   * Copies named tensors into the parameters. They must be exactly the
   * layout's tensors in model order with the same shapes and finite values;
   * on any mismatch nothing is copied.
   *
   * @param tensors - e.g. `decodeCheckpoint(bytes).parameters`.
   * @throws ModelError `MODEL_PARAMETER_MISMATCH` or `MODEL_NON_FINITE`.
   */
  loadParameters(tensors: readonly NamedTensor[]): void {
    const entries = this.layout.entries;
    if (!Array.isArray(tensors) || tensors.length !== entries.length) {
      throw new ModelError('MODEL_PARAMETER_MISMATCH', `parameters: expected ${entries.length} tensors, found ${String((tensors as unknown[] | undefined)?.length)}`);
    }
    entries.forEach((e, i) => {
      const t = tensors[i] as NamedTensor;
      if (t.name !== e.name) {
        throw new ModelError('MODEL_PARAMETER_MISMATCH', `parameter ${i}: expected ${e.name}, found ${JSON.stringify(t.name)}`, { tensorName: t.name, index: i });
      }
      if (t.shape.length !== e.shape.length || t.shape.some((s, k) => s !== e.shape[k]) || t.data.length !== e.length) {
        throw new ModelError('MODEL_PARAMETER_MISMATCH', `parameter ${e.name}: expected shape [${e.shape.join(', ')}], found [${t.shape.join(', ')}] with ${t.data.length} values`, {
          tensorName: e.name,
        });
      }
      const bad = firstNonFinite(t.data);
      if (bad >= 0) throw new ModelError('MODEL_NON_FINITE', `parameter ${e.name}[${bad}] is not finite: ${t.data[bad]}`, { tensorName: e.name, index: bad });
    });
    entries.forEach((e, i) => this.parameters.set((tensors[i] as NamedTensor).data, e.offset));
  }

  /**
   * Stops the worker threads (if any). The decoder cannot run afterwards;
   * its arrays stay readable.
   * @returns when the workers have exited.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#pool?.close();
  }

  /**
   * Shares calls of a WebAssembly module's functions with the decoder's
   * threads, which are idle between training passes: another package's
   * kernel (the optimizer's update, `@llmcp/optim`) then runs on every core
   * without any of its code running there but the module. Each thread
   * instantiates the module on the memory now; {@link SharedCalls.run} then
   * has them call an entry once per argument tuple, sharing the tuples out in
   * contiguous runs, each thread first copying in the input elements its own
   * tuples read and, once every call of every thread returned 0, copying out
   * the output elements they wrote. The calls of different threads must write
   * disjoint parts of the memory (the caller's design; nothing is checked).
   *
   * @param spec - the module, its memory (shared with worker threads), the entry names, the tuples (on a SharedArrayBuffer with worker threads) and their arity, and the inputs and outputs if any.
   * @returns the shared calls; after {@link close} the calling thread makes them all.
   * @throws TypeError or RangeError for unusable arguments; ModelError `MODEL_WORKER_FAILED` when a worker cannot instantiate the module (or a call fails there), `MODEL_CLOSED` after {@link close}.
   */
  shareCalls(spec: CallSetSpec): SharedCalls {
    this.#checkOpen();
    checkCalls(spec);
    const inputs = spec.inputs ?? null;
    const outputs = spec.outputs ?? null;
    const everything = [spec.memory, spec.calls, ...(inputs === null ? [] : [inputs.spans, ...inputs.sources]), ...(outputs === null ? [] : [outputs.spans, ...outputs.targets])];
    if (this.#threaded && !everything.every((a) => a.buffer instanceof SharedArrayBuffer)) {
      throw new TypeError('shareCalls: with worker threads the memory, the calls, the inputs and the outputs must be shared (a shared WebAssembly.Memory, arrays on SharedArrayBuffers)');
    }
    const id = ++this.#callSets;
    const results = new Int32Array(this.#threaded ? new SharedArrayBuffer(this.threads * 4) : new ArrayBuffer(this.threads * 4));
    const message = { ...spec, entries: [...spec.entries], inputs, outputs, id, results };
    const calls0 = instantiateCalls(message);
    this.#pool?.share(message);
    this.#ctx.calls.set(id, calls0);
    let released = false;
    return {
      run: (entry) => {
        if (released) throw new RangeError('shareCalls: these calls were released');
        checkEntry(entry, calls0.entries.length);
        const pool = this.#pool;
        if (this.#closed || pool === null) {
          runAllCalls(calls0, entry);
          return results[0] as number;
        }
        const c = this.#ctx.control;
        Atomics.store(c, CTRL.CALLS_ID, id);
        Atomics.store(c, CTRL.ARRIVED, 0);
        Atomics.store(c, CTRL.FAILED, 0);
        Atomics.store(c, CTRL.CALLS_ENTRY, entry);
        Atomics.store(c, CTRL.THREADS, this.threads);
        pool.run(this.#ctx, COMMAND.CALLS);
        let first = -1;
        for (let t = 0; t < this.threads; t++) {
          const r = results[t] as number;
          if (r >= 0 && (first < 0 || r < first)) first = r;
        }
        return first;
      },
      release: () => {
        if (released) return;
        released = true;
        this.#ctx.calls.delete(id);
        if (!this.#closed) this.#pool?.share({ id, drop: true });
      },
    };
  }
}
