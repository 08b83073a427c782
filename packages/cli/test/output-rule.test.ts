/**
 * The output rule, for every command that writes a file (export to
 * safetensors, andrea-bin with its config, gguf and hf; import): nothing is
 * ever written inside a run directory, `--force` replaces only a regular
 * file, and a refused command leaves every path as it was, with no
 * temporary file behind.
 */
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canMakeDeviceNodes, makeSpecialFile, SPECIAL_FILE_KINDS, type SpecialFileKind } from '../../../tools/fixtures.ts';
import { GOLDEN, llmcp, tempDir } from './helpers.ts';

const tmp = tempDir('llmcp-output-rule-');
const run = path.join(tmp.dir, 'run');
const devices = canMakeDeviceNodes(tmp.dir);
let bin = '';
let binConfig = '';

beforeAll(async () => {
  expect((await llmcp(['train', run, '--preset', 'ch33', '--plain'])).code).toBe(0);
  bin = path.join(tmp.dir, 'src.bin');
  binConfig = path.join(tmp.dir, 'src.json');
  expect((await llmcp(['export', '--to', 'andrea-bin', GOLDEN, '-o', bin, '--config-out', binConfig])).code).toBe(0);
});
afterAll(() => tmp.cleanup());

/** Every entry under `dir`: kind, and the bytes of files or a link's target. */
function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const full = path.join(d, name);
      const st = lstatSync(full);
      if (st.isSymbolicLink()) out.set(full, `link ${readlinkSync(full)}`);
      else if (st.isDirectory()) {
        out.set(full, 'dir');
        walk(full);
      } else out.set(full, st.isFile() ? `file ${readFileSync(full).toString('base64')}` : `special ${st.mode.toString(8)} ${st.rdev}`);
    }
  };
  walk(dir);
  return out;
}

/** The writing commands, each writing to `out` (a file, or a directory for hf) from the run's latest slot or the golden file. */
const WRITERS: Readonly<Record<string, (out: string) => string[]>> = {
  safetensors: (out) => ['export', '--to', 'safetensors', `${run}:latest`, '-o', out, '--force'],
  'andrea-bin': (out) => ['export', '--to', 'andrea-bin', GOLDEN, '-o', out, '--force'],
  'andrea-bin --config-out': (out) => ['export', '--to', 'andrea-bin', GOLDEN, '-o', path.join(tmp.dir, `side-${path.basename(out)}.bin`), '--config-out', out, '--force'],
  gguf: (out) => ['export', '--to', 'gguf', `${run}:latest`, '-o', out, '--force'],
  import: (out) => ['import', '--from', 'andrea-bin', bin, '--config', binConfig, '-o', out, '--force'],
};
const HF = (out: string): string[] => ['export', '--to', 'hf', `${run}:latest`, out, '--force'];

describe('the output rule: nothing is written inside a run directory', () => {
  it('export -o <run>/loss.jsonl, <run>/run.json, and hf into <run>/checkpoints are refused (exit 3) and the run still resumes its history', async () => {
    const before = snapshot(run);
    for (const args of [WRITERS.safetensors!(path.join(run, 'loss.jsonl')), WRITERS.safetensors!(path.join(run, 'run.json')), HF(path.join(run, 'checkpoints')), HF(run), WRITERS.import!(path.join(run, 'loss.jsonl'))]) {
      const r = await llmcp(args);
      expect([r.code, r.stderr]).toEqual([3, expect.stringContaining('lies inside the run directory') as unknown]);
    }
    expect(snapshot(run)).toEqual(before);
    expect((await llmcp(['verify', run])).code).toBe(0);
  });

  it('refuses every writer at any depth inside a folder holding run.json, run.lock or checkpoints/ (also through a link), touching nothing', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...Object.keys(WRITERS), 'hf'),
        fc.constantFrom('run.json', 'run.lock', 'checkpoints'),
        fc.array(fc.constantFrom('a', 'checkpoints', 'latest', 'sub dir'), { maxLength: 3 }),
        fc.boolean(),
        fc.boolean(),
        async (writer, marker, depth, viaLink, exists) => {
          const root = path.join(tmp.dir, `fake-${n++}`);
          mkdirSync(path.join(root, ...depth), { recursive: true });
          if (marker === 'checkpoints') mkdirSync(path.join(root, 'checkpoints'), { recursive: true });
          else writeFileSync(path.join(root, marker), '{}');
          let folder = path.join(root, ...depth);
          if (viaLink) {
            const link = path.join(tmp.dir, `link-${n}`);
            symlinkSync(folder, link);
            folder = link;
          }
          const out = path.join(folder, writer === 'hf' ? 'model-hf' : 'out.file');
          if (exists && writer === 'hf') mkdirSync(out, { recursive: true });
          else if (exists) writeFileSync(out, 'old');
          const before = snapshot(root);
          const r = await llmcp(writer === 'hf' ? HF(out) : (WRITERS[writer] as (o: string) => string[])(out));
          expect([r.code, /lies inside the run directory/.test(r.stderr)]).toEqual([3, true]);
          expect(snapshot(root)).toEqual(before);
        },
      ),
      { numRuns: 24 },
    );
  });
});

describe('the output rule: --force replaces only a regular file', () => {
  const cases: [string, SpecialFileKind][] = [];
  for (const writer of [...Object.keys(WRITERS), 'hf']) for (const kind of SPECIAL_FILE_KINDS) cases.push([writer, kind]);
  const refuses = async (writer: string, kind: SpecialFileKind): Promise<void> => {
    const dir = path.join(tmp.dir, `target-${writer.replace(/\W/g, '_')}-${kind}`);
    mkdirSync(dir, { recursive: true });
    // hf writes into a directory: a hostile entry where one of its files goes (directories are not hostile there: hf makes one).
    const out = writer === 'hf' ? path.join(dir, 'hf') : path.join(dir, 'out');
    if (writer === 'hf') {
      mkdirSync(out);
      makeSpecialFile(path.join(out, 'config.json'), kind);
    } else makeSpecialFile(out, kind);
    const before = snapshot(dir);
    const r = await llmcp(writer === 'hf' ? HF(out) : (WRITERS[writer] as (o: string) => string[])(out));
    expect([r.code, r.stderr]).toEqual([3, expect.stringMatching(/is (a symbolic link to )?(a|an) (FIFO|socket|character device|directory)/) as unknown]);
    expect(snapshot(dir)).toEqual(before);
  };
  it.each(cases.filter(([, k]) => !k.includes('device')))('%s over %s: refused (exit 3), left as it was, no temporary file', refuses);
  // Device nodes (with the numbers of /dev/zero) need CAP_MKNOD; made in the scratch folder, never /dev.
  it.skipIf(!devices).each(cases.filter(([, k]) => k.includes('device')))('%s over %s: refused (exit 3), the node left in place', refuses);

  it('replaces an existing regular file with --force, and a failure of the second output of andrea-bin leaves no first output', async () => {
    const out = path.join(tmp.dir, 'regular.safetensors');
    writeFileSync(out, 'old');
    expect((await llmcp(WRITERS.safetensors!(out))).code).toBe(0);
    expect(readFileSync(out).subarray(8, 9).toString()).toBe('{');
    const binOut = path.join(tmp.dir, 'pair.bin');
    const fifo = makeSpecialFile(path.join(tmp.dir, 'pair.json'), 'fifo');
    const r = await llmcp(['export', '--to', 'andrea-bin', GOLDEN, '-o', binOut, '--config-out', fifo, '--force']);
    expect(r.code).toBe(3);
    expect(existsSync(binOut)).toBe(false);
    expect(readdirSync(tmp.dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });
});

describe('the output rule keeps a copy of a run intact', () => {
  it('a run copied elsewhere is a run directory too: exports into the copy are refused', async () => {
    const copy = path.join(tmp.dir, 'copy');
    cpSync(run, copy, { recursive: true });
    const r = await llmcp(WRITERS.gguf!(path.join(copy, 'checkpoints', 'latest', 'model.gguf')));
    expect(r.code).toBe(3);
    expect(existsSync(path.join(copy, 'checkpoints', 'latest', 'model.gguf'))).toBe(false);
  });
});
