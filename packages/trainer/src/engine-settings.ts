/**
 * The engine flags of the commands that train (`llmcp train`/`resume`, the
 * trainer app), in one place: which of them are the run's config
 * (`engine.kind`, world size, device, precision, threads per rank: a change
 * is a pivot) and which are this machine's (local ranks, interpreter,
 * rendezvous address and port).
 */
import { parseConfig, type EngineConfig, type TrainerConfig } from './config.ts';
import { TrainerError } from './errors.ts';
import type { TorchEngineOptions } from './torch-engine.ts';

/** The engine flags as the commands take them (`--engine`, `--nproc`, …). */
export interface EngineFlags {
  /** `--engine llmcp|torch`. */
  readonly engine?: string;
  /** `--nproc n`: ranks on this node (and the world size, unless `--world-size` is given). */
  readonly nproc?: number;
  /** `--world-size n`: ranks in all, when some join from other nodes. */
  readonly worldSize?: number;
  /** `--device cpu|cuda`. */
  readonly device?: string;
  /** `--dtype f64|f32` (a new torch engine on CUDA defaults to f32, on the CPU to f64). */
  readonly dtype?: string;
  /** `--threads-per-rank n`. */
  readonly threadsPerRank?: number;
  /** `--python <interpreter>`. */
  readonly python?: string;
  /** `--master-addr <host>`. */
  readonly masterAddr?: string;
  /** `--master-port <port>`. */
  readonly masterPort?: number;
}

/** Engine config fields asked for on the command line (applied over the config's own). */
export interface EngineOverrides {
  readonly kind?: 'llmcp' | 'torch';
  readonly worldSize?: number;
  readonly device?: 'cpu' | 'cuda';
  readonly dtype?: 'f64' | 'f32';
  readonly threadsPerRank?: number;
}

function choice<T extends string>(value: string | undefined, allowed: readonly T[], flag: string): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new TrainerError('TRAINER_CONFIG_INVALID', `${flag} must be ${allowed.join(' or ')}, got ${JSON.stringify(value)}`, { fields: ['engine'] });
  }
  return value as T;
}

/**
 * Splits the engine flags into config overrides and this machine's settings.
 *
 * @param flags - the flags given.
 * @returns the overrides (null when no engine config flag was given) and the torch engine's machine settings.
 * @throws TrainerError `TRAINER_CONFIG_INVALID` for a bad value.
 */
export function engineSettings(flags: EngineFlags): { overrides: EngineOverrides | null; torch: TorchEngineOptions } {
  const kind = choice(flags.engine, ['llmcp', 'torch'] as const, '--engine');
  const device = choice(flags.device, ['cpu', 'cuda'] as const, '--device');
  const dtype = choice(flags.dtype, ['f64', 'f32'] as const, '--dtype');
  const worldSize = flags.worldSize ?? flags.nproc;
  if (flags.nproc !== undefined && flags.worldSize !== undefined && flags.nproc > flags.worldSize) {
    throw new TrainerError('TRAINER_CONFIG_INVALID', `--nproc ${flags.nproc} is more ranks than --world-size ${flags.worldSize}`, { fields: ['engine.worldSize'] });
  }
  const overrides: EngineOverrides = {
    ...(kind === undefined ? {} : { kind }),
    ...(worldSize === undefined ? {} : { worldSize }),
    ...(device === undefined ? {} : { device }),
    ...(dtype === undefined ? {} : { dtype }),
    ...(flags.threadsPerRank === undefined ? {} : { threadsPerRank: flags.threadsPerRank }),
  };
  const torch: TorchEngineOptions = {
    ...(flags.nproc === undefined ? {} : { localRanks: flags.nproc }),
    ...(flags.python === undefined ? {} : { python: flags.python }),
    ...(flags.masterAddr === undefined ? {} : { masterAddr: flags.masterAddr }),
    ...(flags.masterPort === undefined ? {} : { masterPort: flags.masterPort }),
  };
  return { overrides: Object.keys(overrides).length === 0 ? null : overrides, torch };
}

/**
 * A config with engine overrides applied: `kind: 'llmcp'` removes the engine
 * block; torch fields update the config's torch engine, or make a new one
 * (whose precision defaults to f32 on CUDA and f64 on the CPU). Validated.
 *
 * @param config - the config (a new run's, or the recorded one of a resume).
 * @param overrides - the fields asked for, or null.
 * @returns the config to run with.
 * @throws TrainerError `TRAINER_CONFIG_INVALID` for torch fields on the llmcp engine, or an invalid result.
 */
export function withEngine(config: TrainerConfig, overrides: EngineOverrides | null): TrainerConfig {
  if (overrides === null) return config;
  const current = config.engine?.kind === 'torch' ? config.engine : null;
  const kind = overrides.kind ?? (current === null ? 'llmcp' : 'torch');
  const { kind: _kind, ...torchFields } = overrides;
  if (kind === 'llmcp') {
    if (Object.keys(torchFields).length > 0) {
      throw new TrainerError(
        'TRAINER_CONFIG_INVALID',
        `${Object.keys(torchFields).map((k) => `engine.${k}`).join(', ')} apply to the torch engine; add --engine torch`,
        { fields: Object.keys(torchFields).map((k) => `engine.${k}`) },
      );
    }
    const { engine: _engine, ...rest } = config;
    return rest;
  }
  const device = torchFields.device ?? current?.device ?? 'cpu';
  const engine: EngineConfig = {
    kind: 'torch',
    worldSize: torchFields.worldSize ?? current?.worldSize ?? 1,
    device,
    dtype: torchFields.dtype ?? current?.dtype ?? (device === 'cuda' ? 'f32' : 'f64'),
    threadsPerRank: torchFields.threadsPerRank ?? current?.threadsPerRank ?? 1,
  };
  return parseConfig({ ...config, engine });
}
