/**
 * Deterministic, engine-independent transcendental functions for the training
 * path (../../../../docs/spec/model.md §14, ../../../../docs/spec/training.md §11): the only ones llmcp calls besides
 * `Math.sqrt` (IEEE-754 exact).
 *
 * - `exp`, `ln`, `sin`, `cos`, `pow`: correctly rounded (round to nearest,
 *   ties to even) for every double argument, so results never depend on the
 *   JavaScript engine or its version;
 * - `log1p`: the fdlibm algorithm, bit-identical to the reference's log1p
 *   (which is not correctly rounded).
 *
 * See [README.md](./README.md) in this directory for the algorithms, error bounds and how
 * they are verified.
 */
export { exp } from './exp.ts';
export { ln } from './ln.ts';
export { log1p } from './log1p.ts';
export { cos, sin } from './trig.ts';
export { pow } from './pow.ts';

/**
 * Identifies the results of this module's functions. Recorded in a run's
 * identity: two runs can only be bit-identical if they used the same
 * MATH_VERSION. It changes whenever any function could return different bits
 * for some argument (correctly rounded functions never need to change; a
 * change would be a bug fix).
 */
export const MATH_VERSION: string = 'llmcp-math/1';
