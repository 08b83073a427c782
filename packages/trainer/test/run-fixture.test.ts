/**
 * The test helpers clean up after themselves: a directory from `tempDir` is
 * gone once the test that made it has finished, and one made outside a test
 * (in `beforeAll`) lasts until the end of the file.
 */
import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers/run-fixture.ts';

describe('tempDir', () => {
  let fileLevel = '';
  let madeInTest = '';
  beforeAll(() => {
    fileLevel = tempDir();
  });

  it('makes a fresh directory', () => {
    madeInTest = tempDir();
    expect(existsSync(madeInTest)).toBe(true);
    expect(madeInTest).not.toBe(fileLevel);
  });

  it('has removed the previous test\'s directory, and keeps the one made in beforeAll until the file ends', () => {
    expect(madeInTest).not.toBe('');
    expect(existsSync(madeInTest)).toBe(false);
    expect(existsSync(fileLevel)).toBe(true);
  });
});
