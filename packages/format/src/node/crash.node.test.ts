/**
 * A real crash in the middle of an atomic save: a child process starts
 * saving over an existing checkpoint, is SIGKILLed after its first write, and
 * the destination must still be the complete previous checkpoint.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { GOLDEN_PATH } from '../../../../tools/fixtures.ts';
import { goldenBytes } from '../../test/golden.ts';
import { loadCheckpoint } from './load.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('saveCheckpointAtomic killed mid-write', () => {
  it('leaves the previous checkpoint complete and loadable; the orphan temporary is never the destination', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'llmcp-crash-'));
    const target = path.join(dir, 'state.llmcp');
    writeFileSync(target, goldenBytes());
    const child = path.join(dir, 'child.mts');
    writeFileSync(
      child,
      `import { decodeCheckpoint } from ${JSON.stringify(path.join(here, '..', 'decode.ts'))};
import { readFileSync } from 'node:fs';
const goldenBytes = () => new Uint8Array(readFileSync(${JSON.stringify(GOLDEN_PATH)}));
import { nodeFileSystem, saveCheckpointAtomic } from ${JSON.stringify(path.join(here, '..', 'node.ts'))};
const state = decodeCheckpoint(goldenBytes());
const next = { ...state, selectedStep: 0n, optimizer: { ...state.optimizer, step: 0n, beta1Power: 1, beta2Power: 1, moments: [] } };
let writes = 0;
const fileSystem = {
  ...nodeFileSystem,
  open: async (p, flags) => {
    const h = await nodeFileSystem.open(p, flags);
    if (flags !== 'wx') return h;
    return { ...h, write: async (b, o, l, pos) => {
      if (++writes === 2) { process.stdout.write('WROTE-ONE\\n'); await new Promise(() => {}); }
      return h.write(b, o, l, pos);
    } };
  },
};
await saveCheckpointAtomic(${JSON.stringify(target)}, next, { fileSystem });
`,
    );
    const proc = spawn(process.execPath, ['--import', 'tsx', child], { cwd: path.join(here, '..', '..'), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await new Promise<void>((resolve, reject) => {
      proc.stdout.on('data', (d: Buffer) => {
        if (d.toString().includes('WROTE-ONE')) {
          proc.kill('SIGKILL');
          resolve();
        }
      });
      proc.on('exit', (code) => reject(new Error(`child exited (${code}) before writing: ${stderr}`)));
    });
    await new Promise((resolve) => proc.on('close', resolve));
    expect(proc.signalCode).toBe('SIGKILL');
    const loaded = await loadCheckpoint(target);
    expect(loaded.layout.checksumLabel).toBe('fnv1a64:2b8b6097eaed6a91');
    const orphans = readdirSync(dir).filter((f) => f.startsWith('.state.llmcp.tmp-'));
    expect(orphans).toHaveLength(1); // a crash cannot clean up; the partial file is only ever a temporary
    const orphan = await loadCheckpoint(path.join(dir, orphans[0] as string)).catch((e: { code?: string }) => e.code);
    expect(orphan).toBe('FORMAT_FILE_EXTENT');
  });
});
