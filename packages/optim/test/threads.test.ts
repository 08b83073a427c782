import { describe, expect, it } from 'vitest';
import { bits } from './helpers/bits.ts';
import { runFixture } from './helpers/fixture-run.ts';

describe('worker threads (acceptance 6)', () => {
  it('runs the ch33 fixture with 1 and 2 threads to identical bits', async () => {
    const one = await runFixture(1);
    const two = await runFixture(2);
    try {
      expect(two.model.threads).toBe(2);
      for (let k = 0; k < one.steps.length; k++) {
        const a = one.steps[k]!;
        const b = two.steps[k]!;
        expect(bits(b.loss)).toBe(bits(a.loss));
        expect(Array.from(b.gradients, bits)).toEqual(Array.from(a.gradients, bits));
        expect(Array.from(b.parameters, bits)).toEqual(Array.from(a.parameters, bits));
      }
      expect(two.checkpoints.map((c) => bits(c.validation.mean))).toEqual(one.checkpoints.map((c) => bits(c.validation.mean)));
    } finally {
      await one.model.close();
      await two.model.close();
    }
  });
});
