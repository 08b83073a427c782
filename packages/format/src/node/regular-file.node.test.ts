import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { canMakeDeviceNodes, makeSpecialFile, SPECIAL_FILE_KINDS } from '../../../../tools/fixtures.ts';
import { isFormatError } from '../errors.ts';
import { loadCheckpoint } from './load.ts';
import { openRegularFile, readRegularFile, readRegularFileSync } from './regular-file.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'llmcp-regular-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const devices = canMakeDeviceNodes(scratch);

function outcome(f: () => unknown): string {
  try {
    f();
    return 'read';
  } catch (e) {
    return isFormatError(e) ? `${e.code}/${e.reason}/${e.found ?? ''}` : `untyped ${String(e)}`;
  }
}

async function outcomeAsync(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'read';
  } catch (e) {
    return isFormatError(e) ? `${e.code}/${e.reason}/${e.found ?? ''}` : `untyped ${String(e)}`;
  }
}

/** What each hostile kind is reported as: the kind a link leads to. */
const REPORTED: Record<(typeof SPECIAL_FILE_KINDS)[number], string> = {
  fifo: 'fifo',
  socket: 'socket',
  'character-device': 'character-device',
  directory: 'directory',
  'symlink-to-fifo': 'fifo',
  'symlink-to-character-device': 'character-device',
  'symlink-to-directory': 'directory',
};

describe('the input rule (readRegularFile, readRegularFileSync, openRegularFile, loadCheckpoint)', () => {
  const refuses = async (kind: (typeof SPECIAL_FILE_KINDS)[number]): Promise<void> => {
    const file = makeSpecialFile(path.join(scratch, `in-${kind}`), kind);
    const expected = `FORMAT_IO/not-a-regular-file/${REPORTED[kind]}`;
    expect(outcome(() => readRegularFileSync(file, { maxBytes: 1 << 20 }))).toBe(expected);
    expect(await outcomeAsync(readRegularFile(file, { maxBytes: 1 << 20 }))).toBe(expected);
    expect(await outcomeAsync(openRegularFile(file))).toBe(expected);
    expect(await outcomeAsync(loadCheckpoint(file))).toBe(expected);
  };
  const deviceKinds = SPECIAL_FILE_KINDS.filter((k) => k.includes('device'));
  it.each(SPECIAL_FILE_KINDS.filter((k) => !k.includes('device')))('refuses %s at once, typed, naming its kind — never blocks', refuses);
  // Device nodes need CAP_MKNOD (root in most containers); without it there is nothing to make.
  it.skipIf(!devices).each(deviceKinds)('refuses %s at once, typed — the device is never opened or read', refuses);

  it('reads a regular file up to its limit and refuses one byte more, before reading it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.integer({ min: 0, max: 300 }), async (bytes, limit) => {
        const file = path.join(scratch, 'sized.bin');
        writeFileSync(file, bytes);
        const sync = outcome(() => readRegularFileSync(file, { maxBytes: limit }));
        const async_ = await outcomeAsync(readRegularFile(file, { maxBytes: limit }));
        if (bytes.length <= limit) {
          expect([sync, async_]).toEqual(['read', 'read']);
          expect(readRegularFileSync(file, { maxBytes: limit })).toEqual(bytes);
        } else {
          expect([sync, async_]).toEqual([`FORMAT_IO/too-large/${bytes.length}`, `FORMAT_IO/too-large/${bytes.length}`]);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('says not-found for a missing path or a dangling link, and refuses a limit outside 0…2^31 − 1', async () => {
    expect(outcome(() => readRegularFileSync(path.join(scratch, 'nope'), { maxBytes: 1 }))).toBe('FORMAT_IO/not-found/ENOENT');
    expect(await outcomeAsync(loadCheckpoint(path.join(scratch, 'nope', 'x.llmcp')))).toBe('FORMAT_IO/not-found/ENOENT');
    expect(() => readRegularFileSync(scratch, { maxBytes: 2 ** 31 })).toThrow(RangeError);
    expect(() => readRegularFileSync(scratch, { maxBytes: -1 })).toThrow(RangeError);
  });
});
