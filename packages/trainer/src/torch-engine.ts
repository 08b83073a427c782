/**
 * The torch engine's trainer side (../../../docs/engine-protocol.md): starts
 * the ranks of this node (`python -m llmcp.engine`) with the standard env://
 * variables, hands rank 0 the starting state, one command at a time (step,
 * evaluate, state, stop), and watches every local rank: a rank that exits,
 * reports a failure or stops sending heartbeats ends the engine with a typed
 * error naming it and the last lines of its stderr. The engine never writes
 * into the run directory; the trainer publishes what {@link EngineCompute.state}
 * returns like any other checkpoint.
 *
 * Ranks run in their own process group (a Ctrl-C at the terminal reaches only
 * the trainer, which decides what it means) and exit by themselves when the
 * trainer is gone: their standard input ends, and on Linux the parent-death
 * signal kills them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AdamWState, DecoderConfig, NamedTensor } from '@llmcp/format';
import type { Batch } from '@llmcp/data';
import type { EngineConfig } from './config.ts';
import type { EngineCompute, EngineDescription, EngineUpdate } from './engine.ts';
import { TrainerError } from './errors.ts';

/** The protocol the trainer speaks (`init` carries it; the engine refuses another). */
export const ENGINE_PROTOCOL = 'llmcp-engine/1';

/** Settings of this machine for the torch engine: never part of a run's config, free to differ between resumes. */
export interface TorchEngineOptions {
  /** Python interpreter with PyTorch (default: `$LLMCP_PYTHON`, else `python3`). */
  readonly python?: string;
  /** A directory holding the `llmcp` Python package, put first on `PYTHONPATH` (default: `$LLMCP_PYTHONPATH`, else the repository's `python/` when llmcp runs from its sources). */
  readonly pythonPath?: string;
  /** Ranks this node starts, 0 … n − 1 (default: the world size: every rank here). The others join from other nodes. */
  readonly localRanks?: number;
  /** Address of rank 0's rendezvous, as other nodes reach it (default `127.0.0.1`). */
  readonly masterAddr?: string;
  /** Port of the rendezvous (default: a free port, when every rank is local; required otherwise). */
  readonly masterPort?: number;
  /** Seconds without a heartbeat after which a local rank counts as hung (default 60). */
  readonly hangSeconds?: number;
  /** Seconds between a rank's heartbeats (default 1). */
  readonly heartbeatSeconds?: number;
  /** Lines for people while the engine starts (the command for other nodes, waiting for them). */
  readonly onStatus?: (line: string) => void;
}

/** The torch engine's part of a run config. */
export type TorchEngineConfig = Extract<EngineConfig, { kind: 'torch' }>;

/** What the ranks start from: llmcp's initial (or restored) parameters and AdamW state, and the update rules. */
export interface TorchStart {
  readonly decoder: DecoderConfig;
  readonly clipNorm: number | null;
  readonly groups: 'gain-no-decay' | 'none';
  readonly start: { readonly parameters: readonly NamedTensor[]; readonly optimizer: AdamWState };
}

interface Header {
  readonly kind: string;
  readonly [key: string]: unknown;
}

interface Frame {
  readonly header: Header;
  readonly payload: Buffer;
}

/** Largest frame header (a header is a few hundred bytes). */
const MAX_HEADER_BYTES = 1 << 20;
/** Bytes of stderr (and stdout) kept per rank for error messages. */
const TAIL_BYTES = 16 * 1024;
/** Lines of a rank's stderr quoted in an error. */
const TAIL_LINES = 12;
/** How long the other ranks have to report after a first failure, before the verdict. */
const SETTLE_MS = 300;

/** What a failure report is: a rank that ended without a word, a hang, a rank's own report, a protocol break. */
type FailureCause = 'ended' | 'hung' | 'reported' | 'protocol';
const FAILURE_RANK: Readonly<Record<FailureCause, number>> = { ended: 0, hung: 1, reported: 2, protocol: 3 };

/**
 * A frame: u32 header length, u64 payload length (little-endian), the JSON header, the payload.
 *
 * @param header - the header object (must have `kind`).
 * @param payload - raw payload bytes.
 * @returns the bytes.
 */
export function encodeFrame(header: Header, payload: Uint8Array = new Uint8Array(0)): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const prefix = Buffer.alloc(12);
  prefix.writeUInt32LE(json.length, 0);
  prefix.writeBigUInt64LE(BigInt(payload.length), 4);
  return Buffer.concat([prefix, json, payload]);
}

/** Splits a byte stream into frames, refusing a header or payload beyond its bounds. */
export class FrameReader {
  readonly #chunks: Buffer[] = [];
  #length = 0;
  #need: { header: number; payload: number } | null = null;
  #header: Header | null = null;
  readonly #maxPayload: () => number;

  /** @param maxPayload - the largest payload accepted now (read for every frame). */
  constructor(maxPayload: () => number) {
    this.#maxPayload = maxPayload;
  }

  #take(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const head = this.#chunks[0] as Buffer;
      const k = Math.min(n - filled, head.length);
      head.copy(out, filled, 0, k);
      filled += k;
      if (k === head.length) this.#chunks.shift();
      else this.#chunks[0] = head.subarray(k);
    }
    this.#length -= n;
    return out;
  }

  /**
   * @param chunk - bytes from the stream.
   * @returns the frames completed by it.
   * @throws Error for a frame that breaks the framing.
   */
  push(chunk: Buffer): Frame[] {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    const frames: Frame[] = [];
    for (;;) {
      if (this.#need === null) {
        if (this.#length < 12) break;
        const prefix = this.#take(12);
        const header = prefix.readUInt32LE(0);
        const payload = prefix.readBigUInt64LE(4);
        if (header === 0 || header > MAX_HEADER_BYTES) throw new Error(`a frame header of ${header} bytes (at most ${MAX_HEADER_BYTES})`);
        if (payload > BigInt(this.#maxPayload())) throw new Error(`a frame payload of ${payload} bytes (at most ${this.#maxPayload()})`);
        this.#need = { header, payload: Number(payload) };
      }
      if (this.#header === null) {
        if (this.#length < this.#need.header) break;
        const parsed: unknown = JSON.parse(this.#take(this.#need.header).toString('utf8'));
        if (typeof parsed !== 'object' || parsed === null || typeof (parsed as { kind?: unknown }).kind !== 'string') throw new Error('a frame header without a string kind');
        this.#header = parsed as Header;
      }
      if (this.#length < this.#need.payload) break;
      frames.push({ header: this.#header, payload: this.#take(this.#need.payload) });
      this.#need = null;
      this.#header = null;
    }
    return frames;
  }
}

/** The last bytes a stream wrote, for error messages. */
class Tail {
  #text = '';

  add(chunk: Buffer): void {
    this.#text = (this.#text + chunk.toString('utf8')).slice(-TAIL_BYTES);
  }

  lines(n = TAIL_LINES): string {
    return this.#text.trimEnd().split('\n').slice(-n).join('\n');
  }
}

interface Rank {
  readonly rank: number;
  readonly child: ChildProcess;
  readonly stderr: Tail;
  lastBeat: number;
  closed: boolean;
  fatal: Header | null;
}

/** The repository's `python/` directory, when llmcp runs from its sources. */
function repositoryPythonPath(): string | undefined {
  const candidate = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'python');
  return existsSync(path.join(candidate, 'llmcp', 'engine', '__main__.py')) ? candidate : undefined;
}

/** A free TCP port on this machine (bound and released; the ranks bind it next). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function f64Payload(arrays: readonly Float64Array[]): Uint8Array {
  const total = arrays.reduce((n, a) => n + a.length, 0);
  const out = new Float64Array(total);
  let offset = 0;
  for (const a of arrays) {
    out.set(a, offset);
    offset += a.length;
  }
  return new Uint8Array(out.buffer);
}

function flatOf(tensors: readonly { readonly data: Float64Array }[]): Float64Array[] {
  return tensors.map((t) => t.data);
}

/** Copies `count` f64 values at byte `offset` of a (possibly unaligned) buffer. */
function f64At(payload: Buffer, offset: number, count: number): Float64Array {
  const out = new Float64Array(count);
  payload.copy(new Uint8Array(out.buffer), 0, offset, offset + count * 8);
  return out;
}

/** What an `error` or `fatal` frame's code means for the user. */
function engineError(header: Header, rank: number, context: { readonly python: string; readonly port: number; readonly stderr: string }): TrainerError {
  const { python } = context;
  const code = String(header.code);
  const message = String(header.message ?? '');
  const tail = context.stderr === '' ? '' : `\nlast lines of rank ${rank}'s stderr:\n${context.stderr}`;
  switch (code) {
    case 'ENGINE_TORCH_MISSING':
      return new TrainerError('TRAINER_ENGINE_UNAVAILABLE', `PyTorch is not installed for ${python}: install it (Debian: apt-get install python3-torch; elsewhere: pip install torch) or name an interpreter that has it (--python or LLMCP_PYTHON)`);
    case 'ENGINE_CUDA_UNAVAILABLE':
      return new TrainerError('TRAINER_ENGINE_UNAVAILABLE', `${message}: train on the CPU (--device cpu) or install a CUDA build of PyTorch`, { fields: ['engine.device'] });
    case 'ENGINE_RENDEZVOUS_FAILED':
      return /address already in use|EADDRINUSE/i.test(message)
        ? new TrainerError('TRAINER_ENGINE_UNAVAILABLE', `the rendezvous port ${context.port} is in use: give a free one with --master-port`)
        : new TrainerError('TRAINER_ENGINE_FAILED', `${message}${tail}`);
    case 'ENGINE_PROTOCOL':
    case 'ENGINE_BAD_COMMAND':
      return new TrainerError('TRAINER_ENGINE_PROTOCOL', `the torch engine (rank ${rank}) refused a command: ${message}`);
    case 'ENGINE_NON_FINITE':
      return new TrainerError('TRAINER_NON_FINITE', message);
    default:
      return new TrainerError('TRAINER_ENGINE_FAILED', `rank ${rank} of the torch engine failed: ${message}${tail}`);
  }
}

/** The torch engine's numerics, in this node's rank processes. */
class TorchCompute implements EngineCompute {
  readonly parameterCount: number;
  description: EngineDescription;
  readonly #ranks: Rank[] = [];
  /** Names and shapes of the parameters, and the AdamW rules, of the state the ranks hand back. */
  readonly #names: readonly { readonly name: string; readonly shape: readonly number[]; readonly length: number }[];
  readonly #optimizer: Pick<AdamWState, 'config' | 'groups'>;
  readonly #python: string;
  readonly #port: number;
  readonly #hangMs: number;
  #failure: TrainerError | null = null;
  readonly #reports: { readonly error: TrainerError; readonly rank: number }[] = [];
  #verdict: NodeJS.Timeout | null = null;
  #pending: { resolve: (frame: Frame) => void; reject: (e: TrainerError) => void; expect: string } | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  #stopping = false;
  #watch: NodeJS.Timeout | null = null;
  readonly #onExit = (): void => this.#killAll();

  constructor(config: TorchEngineConfig, start: TorchStart, settings: { python: string; pythonPath: string | undefined; localRanks: number; masterAddr: string; port: number; hangSeconds: number; heartbeatSeconds: number }) {
    this.#names = start.start.parameters.map((t) => ({ name: t.name, shape: [...t.shape], length: t.data.length }));
    this.#optimizer = { config: start.start.optimizer.config, groups: start.start.optimizer.groups };
    this.#python = settings.python;
    this.#port = settings.port;
    this.#hangMs = settings.hangSeconds * 1000;
    this.parameterCount = start.start.parameters.reduce((n, t) => n + t.data.length, 0);
    this.description = { kind: 'torch', worldSize: config.worldSize, detail: `torch, ${config.worldSize} rank${config.worldSize === 1 ? '' : 's'}, ${config.device} ${config.dtype}`, processes: [] };
    const maxPayload = (): number => 3 * 8 * this.parameterCount + 1024;
    const pythonPath = [settings.pythonPath, process.env.PYTHONPATH].filter((p): p is string => p !== undefined && p !== '').join(path.delimiter);
    process.on('exit', this.#onExit);
    for (let rank = 0; rank < settings.localRanks; rank += 1) {
      const child = spawn(this.#python, ['-m', 'llmcp.engine'], {
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
        detached: true,
        env: {
          ...process.env,
          RANK: String(rank),
          LOCAL_RANK: String(rank),
          WORLD_SIZE: String(config.worldSize),
          LOCAL_WORLD_SIZE: String(settings.localRanks),
          MASTER_ADDR: settings.masterAddr,
          MASTER_PORT: String(settings.port),
          LLMCP_ENGINE_CHANNEL: '3',
          LLMCP_ENGINE_DEVICE: config.device,
          LLMCP_ENGINE_THREADS: String(config.threadsPerRank),
          LLMCP_ENGINE_HEARTBEAT: String(settings.heartbeatSeconds),
          ...(pythonPath === '' ? {} : { PYTHONPATH: pythonPath }),
        },
      });
      const r: Rank = { rank, child, stderr: new Tail(), lastBeat: performance.now(), closed: false, fatal: null };
      this.#ranks.push(r);
      const stdout = new Tail();
      child.stdout?.on('data', (chunk: Buffer) => stdout.add(chunk));
      child.stderr?.on('data', (chunk: Buffer) => r.stderr.add(chunk));
      child.stdin?.on('error', () => {}); // a dead rank 0: its exit is reported below
      const channel = child.stdio[3] as NodeJS.ReadableStream | null;
      const reader = new FrameReader(maxPayload);
      channel?.on('data', (chunk: Buffer) => {
        let frames: Frame[];
        try {
          frames = reader.push(chunk);
        } catch (e) {
          this.#fail(new TrainerError('TRAINER_ENGINE_PROTOCOL', `rank ${rank} broke the framing of the engine protocol: ${(e as Error).message}`), 'protocol');
          return;
        }
        for (const frame of frames) this.#onFrame(r, frame);
      });
      channel?.on('error', () => {});
      child.once('error', (e: NodeJS.ErrnoException) => {
        this.#fail(
          e.code === 'ENOENT'
            ? new TrainerError('TRAINER_ENGINE_UNAVAILABLE', `the Python interpreter ${this.#python} was not found: install Python 3 with PyTorch, or name an interpreter with --python (or LLMCP_PYTHON)`)
            : new TrainerError('TRAINER_ENGINE_UNAVAILABLE', `cannot start ${this.#python} for rank ${rank}: ${e.message}`),
          'ended',
        );
      });
      child.once('close', (code, signal) => this.#onClose(r, code, signal));
    }
    const heartbeatMs = settings.heartbeatSeconds * 1000;
    let expected = performance.now() + heartbeatMs;
    this.#watch = setInterval(() => {
      const now = performance.now();
      // A trainer that was itself stopped or busy (a late timer) has not read its ranks' heartbeats: no verdict this round.
      if (now - expected > heartbeatMs) {
        for (const r of this.#ranks) r.lastBeat = now;
      }
      expected = now + heartbeatMs;
      for (const r of this.#ranks) {
        if (!r.closed && now - r.lastBeat > this.#hangMs) {
          this.#fail(
            new TrainerError(
              'TRAINER_ENGINE_FAILED',
              `rank ${r.rank} of the torch engine sent no heartbeat for ${Math.round((now - r.lastBeat) / 1000)} s (stopped or hung); every rank was stopped${this.#stderrOf(r)}`,
            ),
            'hung',
          );
          return;
        }
      }
    }, heartbeatMs);
    this.#watch.unref();
  }

  #stderrOf(r: Rank): string {
    const lines = r.stderr.lines();
    return lines === '' ? '' : `\nlast lines of rank ${r.rank}'s stderr:\n${lines}`;
  }

  #onFrame(r: Rank, frame: Frame): void {
    const { header } = frame;
    r.lastBeat = performance.now();
    if (header.kind === 'heartbeat') return;
    if (header.kind === 'fatal') {
      r.fatal = header;
      this.#fail(engineError(header, r.rank, { python: this.#python, port: this.#port, stderr: r.stderr.lines() }), 'reported');
      return;
    }
    if (r.rank !== 0) {
      this.#fail(new TrainerError('TRAINER_ENGINE_PROTOCOL', `rank ${r.rank} sent a ${header.kind} frame; only rank 0 answers`), 'protocol');
      return;
    }
    const pending = this.#pending;
    if (pending === null) {
      this.#fail(new TrainerError('TRAINER_ENGINE_PROTOCOL', `rank 0 sent an unexpected ${header.kind} frame`), 'protocol');
      return;
    }
    this.#pending = null;
    if (header.kind === 'error') pending.reject(engineError(header, 0, { python: this.#python, port: this.#port, stderr: '' }));
    else if (header.kind !== pending.expect) pending.reject(new TrainerError('TRAINER_ENGINE_PROTOCOL', `rank 0 answered ${header.kind} where ${pending.expect} was due`));
    else pending.resolve(frame);
  }

  #onClose(r: Rank, code: number | null, signal: NodeJS.Signals | null): void {
    r.closed = true;
    if (this.#failure !== null) return;
    if (this.#stopping) {
      // A rank that ends while stopping: the stop's answer will not come.
      const pending = this.#pending;
      this.#pending = null;
      pending?.reject(new TrainerError('TRAINER_ENGINE_FAILED', `rank ${r.rank} ended while the engine stopped`));
      return;
    }
    const how = signal === null ? `exited with code ${code}` : `was killed by ${signal}`;
    const stderr = r.stderr.lines();
    if (/No module named '?llmcp/.test(stderr)) {
      this.#fail(
        new TrainerError(
          'TRAINER_ENGINE_UNAVAILABLE',
          `the llmcp Python package is not importable by ${this.#python}: install it (pip install ./python in the llmcp repository) or point LLMCP_PYTHONPATH at the directory holding it`,
        ),
        'ended',
      );
      return;
    }
    // A rank that reported its failure has said what happened; its exit adds nothing.
    if (r.fatal !== null) return;
    this.#fail(new TrainerError('TRAINER_ENGINE_FAILED', `rank ${r.rank} of the torch engine ${how}${this.#stderrOf(r)}`), 'ended');
  }

  #killAll(): void {
    for (const r of this.#ranks) {
      if (r.closed || r.child.pid === undefined) continue;
      try {
        process.kill(-r.child.pid, 'SIGKILL');
      } catch {
        try {
          r.child.kill('SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  }

  /**
   * Reports a failure; the verdict follows a moment later, once the other
   * ranks had their say: when one rank dies, the others' collectives fail
   * too, and the error should name the rank that died, not a rank that
   * merely lost its peer. A rank that ended without reporting comes first,
   * then a hang, then a rank's own report, then a protocol break.
   *
   * @param error - the error.
   * @param cause - how telling it is (0 most).
   */
  #fail(error: TrainerError, cause: FailureCause): void {
    if (this.#failure !== null) return;
    this.#reports.push({ error, rank: FAILURE_RANK[cause] });
    if (this.#verdict !== null) return;
    this.#verdict = setTimeout(() => {
      const chosen = [...this.#reports].sort((a, b) => a.rank - b.rank)[0] as { error: TrainerError };
      this.#failure = chosen.error;
      this.#killAll();
      const pending = this.#pending;
      this.#pending = null;
      pending?.reject(chosen.error);
    }, SETTLE_MS);
  }

  /** Sends one command to rank 0 and waits for its answer; commands never overlap. */
  #request(header: Header, payload: Uint8Array | undefined, expect: string): Promise<Frame> {
    const run = async (): Promise<Frame> => {
      if (this.#failure !== null) throw this.#failure;
      const answer = new Promise<Frame>((resolve, reject) => {
        this.#pending = { resolve, reject, expect };
      });
      const stdin = this.#ranks[0]?.child.stdin;
      if (stdin === null || stdin === undefined) throw new TrainerError('TRAINER_ENGINE_FAILED', 'rank 0 has no command channel');
      stdin.write(encodeFrame(header, payload));
      return answer;
    };
    const next = this.#queue.then(run, run);
    this.#queue = next.catch(() => {});
    return next;
  }

  /**
   * Sends `init` and waits for `ready` (every rank has joined and holds the state).
   *
   * @param start - the starting state and rules.
   * @param config - the engine config.
   */
  async init(start: TorchStart, config: TorchEngineConfig): Promise<void> {
    const opt = start.start.optimizer;
    const hasMoments = opt.moments.length > 0;
    const arrays = flatOf(start.start.parameters);
    if (hasMoments) arrays.push(...opt.moments.map((m) => m.first), ...opt.moments.map((m) => m.second));
    const header: Header = {
      kind: 'init',
      protocol: ENGINE_PROTOCOL,
      decoder: start.decoder,
      optimizer: { beta1: opt.config.beta1, beta2: opt.config.beta2, epsilon: opt.config.epsilon, weightDecay: opt.config.weightDecay, groups: start.groups, clipNorm: start.clipNorm },
      step: Number(opt.step),
      beta1Power: opt.beta1Power,
      beta2Power: opt.beta2Power,
      hasMoments,
      dtype: config.dtype,
      deterministic: config.device === 'cpu',
    };
    const { header: ready } = await this.#request(header, f64Payload(arrays), 'ready');
    if (ready.protocol !== ENGINE_PROTOCOL) throw new TrainerError('TRAINER_ENGINE_PROTOCOL', `the torch engine speaks ${String(ready.protocol)}, the trainer ${ENGINE_PROTOCOL}`);
    const blas = Array.isArray(ready.blas) ? (ready.blas as unknown[]).map((b) => path.basename(String(b))).filter((b) => /openblas|mkl|blis|libblas/i.test(b)) : [];
    const threads = config.threadsPerRank === 1 ? '' : ` × ${config.threadsPerRank} threads`;
    this.description = {
      kind: 'torch',
      worldSize: config.worldSize,
      detail: `torch ${String(ready.torch)}, ${config.worldSize} rank${config.worldSize === 1 ? '' : 's'}${threads}, ${String(ready.device)} ${config.dtype}${blas.length === 0 ? '' : `, ${blas.at(-1)}`}`,
      processes: this.#ranks.map((r) => r.child.pid).filter((pid): pid is number => pid !== undefined),
    };
  }

  async update(batch: Batch, learningRate: number): Promise<Omit<EngineUpdate, 'tokens'>> {
    const { header } = await this.#request({ kind: 'step', learningRate, rows: batch.rows, columns: batch.columns }, batchPayload(batch), 'stepped');
    return { loss: header.loss as number, gradientNorm: header.gradientNorm as number, clipped: header.clipped === true };
  }

  async evaluate(batch: Batch): Promise<number> {
    const { header } = await this.#request({ kind: 'evaluate', rows: batch.rows, columns: batch.columns }, batchPayload(batch), 'evaluated');
    return header.loss as number;
  }

  async state(): Promise<{ parameters: NamedTensor[]; optimizer: AdamWState }> {
    const { header, payload } = await this.#request({ kind: 'state' }, undefined, 'state');
    const P = this.parameterCount;
    const hasMoments = header.hasMoments === true;
    if (payload.length !== (hasMoments ? 3 : 1) * 8 * P) {
      throw new TrainerError('TRAINER_ENGINE_PROTOCOL', `the torch engine's state holds ${payload.length} bytes, expected ${(hasMoments ? 3 : 1) * 8 * P}`);
    }
    const name = (values: Float64Array): NamedTensor[] => {
      let offset = 0;
      return this.#names.map((t) => {
        const data = values.subarray(offset, offset + t.length);
        offset += t.length;
        return { name: t.name, shape: [...t.shape], data };
      });
    };
    const parameters = name(f64At(payload, 0, P));
    const moments = hasMoments
      ? (() => {
          const first = name(f64At(payload, 8 * P, P));
          const second = name(f64At(payload, 16 * P, P));
          return first.map((f, i) => ({ name: f.name, shape: f.shape, first: f.data, second: (second[i] as NamedTensor).data }));
        })()
      : [];
    return {
      parameters,
      optimizer: { ...this.#optimizer, step: BigInt(header.step as number), beta1Power: header.beta1Power as number, beta2Power: header.beta2Power as number, moments },
    };
  }

  async dispose(): Promise<void> {
    if (this.#failure === null && !this.#stopping) {
      this.#stopping = true;
      try {
        await withTimeout(this.#request({ kind: 'stop' }, undefined, 'stopped'), 30_000);
      } catch {
        // a failed stop: the ranks are killed below
      }
    }
    this.#stopping = true;
    const closed = Promise.all(this.#ranks.map((r) => (r.closed ? Promise.resolve() : new Promise<void>((resolve) => r.child.once('close', () => resolve())))));
    if ((await withTimeout(closed, 10_000).then(() => true, () => false)) === false) this.#killAll();
    await withTimeout(closed, 10_000).catch(() => {});
    if (this.#watch !== null) clearInterval(this.#watch);
    if (this.#verdict !== null && this.#failure === null) clearTimeout(this.#verdict);
    process.removeListener('exit', this.#onExit);
  }

  /** Ends a start-up that failed: every rank killed, every handle released. */
  async abandon(): Promise<void> {
    this.#stopping = true;
    this.#killAll();
    await this.dispose();
  }
}

function batchPayload(batch: Batch): Uint8Array {
  const n = batch.rows * batch.columns;
  const ids = new Int32Array(2 * n);
  ids.set(batch.inputs.subarray(0, n), 0);
  ids.set(batch.targets.subarray(0, n), n);
  return new Uint8Array(ids.buffer);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    timer.unref();
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/**
 * Starts the torch engine's ranks of this node and hands them the starting
 * state; resolves once every rank (local and remote) has joined.
 *
 * @param config - the run's engine config.
 * @param start - the starting state and rules.
 * @param options - this machine's settings.
 * @returns the engine's compute half.
 * @throws TrainerError `TRAINER_ENGINE_UNAVAILABLE`, `TRAINER_ENGINE_FAILED` or `TRAINER_ENGINE_PROTOCOL`.
 */
export async function startTorchCompute(config: TorchEngineConfig, start: TorchStart, options: TorchEngineOptions): Promise<EngineCompute> {
  if (os.endianness() !== 'LE') throw new TrainerError('TRAINER_ENGINE_UNAVAILABLE', 'the torch engine hands tensors over as little-endian bytes; this machine is big-endian');
  const localRanks = options.localRanks ?? config.worldSize;
  if (!Number.isSafeInteger(localRanks) || localRanks < 1 || localRanks > config.worldSize) {
    throw new TrainerError('TRAINER_CONFIG_INVALID', `the ranks of this node (${localRanks}) must be between 1 and the world size (${config.worldSize})`, { fields: ['engine.worldSize'] });
  }
  if (localRanks < config.worldSize && options.masterPort === undefined) {
    throw new TrainerError('TRAINER_CONFIG_INVALID', `ranks ${localRanks}…${config.worldSize - 1} join from other nodes: give the rendezvous port they use (--master-port)`, { fields: ['engine.worldSize'] });
  }
  const python = options.python ?? process.env.LLMCP_PYTHON ?? 'python3';
  const pythonPath = options.pythonPath ?? process.env.LLMCP_PYTHONPATH ?? repositoryPythonPath();
  const masterAddr = options.masterAddr ?? '127.0.0.1';
  const port = options.masterPort ?? (await freePort());
  const compute = new TorchCompute(config, start, {
    python,
    pythonPath,
    localRanks,
    masterAddr,
    port,
    hangSeconds: options.hangSeconds ?? 60,
    heartbeatSeconds: options.heartbeatSeconds ?? 1,
  });
  if (localRanks < config.worldSize) {
    const device = config.device === 'cpu' ? '' : ` --device ${config.device}`;
    const threads = config.threadsPerRank === 1 ? '' : ` --threads ${config.threadsPerRank}`;
    options.onStatus?.(
      `waiting for ranks ${localRanks}…${config.worldSize - 1}: on each other node run\n  python -m llmcp.engine --rank <r> --world-size ${config.worldSize} --master-addr ${masterAddr} --master-port ${port}${device}${threads}`,
    );
  }
  try {
    await compute.init(start, config);
  } catch (e) {
    await compute.abandon();
    throw e;
  }
  return compute;
}
