/**
 * Bit-pattern helpers for golden-vector tests (one home: tools/fixtures.ts,
 * shared with the other packages' tests).
 */
export { bits, f64, f64s, firstMismatch, vectorJson as fixture } from '../../../../tools/fixtures.ts';
