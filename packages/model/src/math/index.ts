/**
 * Deterministic, engine-independent transcendental functions for the training
 * path (model.md §14). PLACEHOLDER: delegates to Math.* until the
 * deterministic implementations land; do not rely on bit-exactness yet.
 */
/** e^x. */
export const exp: (x: number) => number = Math.exp;
/** Natural logarithm. */
export const ln: (x: number) => number = Math.log;
/** ln(1 + x), fdlibm algorithm. */
export const log1p: (x: number) => number = Math.log1p;
/** sine. */
export const sin: (x: number) => number = Math.sin;
/** cosine. */
export const cos: (x: number) => number = Math.cos;
/** x^y. */
export const pow: (x: number, y: number) => number = Math.pow;
