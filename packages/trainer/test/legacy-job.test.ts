/**
 * Runs written before llmcp-job/4 — whose job.json holds the whole window
 * order (`@llmcp/data`'s update-batch state of version 1) and a config
 * without the keys added since (`data.windows`, `checkpoint.keepEvery`,
 * `checkpoint.everyMinutes`) — still load and resume bit for bit, and the
 * resumed run writes the constant-size state from then on.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { UpdateBatches, type UpdateBatchStateJSONV1 } from '@llmcp/data';
import type { TrainerConfig } from '../src/config.ts';
import { canonicalDigest } from '../src/internal/canonical-json.ts';
import { decodeJob, encodeJob, JOB_FORMAT, JOB_FORMAT_V3, sealJob } from '../src/job.ts';
import { LINEAGE_DIR, MANIFEST_FILE } from '../src/provenance.ts';
import { resumeRun } from '../src/run.ts';
import { runStatus } from '../src/status.ts';
import { smallBpe } from './helpers/configs.ts';
import { finalBytes, sameBytes } from './helpers/run-files.ts';
import { stoppedRun, tempDir, trainedRun } from './helpers/run-fixture.ts';
import { versionOneBatchState } from '../../../tools/fixtures.ts';

/** The version 1 data state of a version 2 one: the order itself and the generator state after its shuffle. */
const versionOneState = (data: unknown): UpdateBatchStateJSONV1 => versionOneBatchState(UpdateBatches.fromJSON(data).state()) as unknown as UpdateBatchStateJSONV1;

/**
 * Rewrites every slot's job.json as llmcp-job/3 wrote it: the whole order, and a config without the keys added
 * since; and removes what llmcp-job/3 runs never had: the provenance manifests (each slot's model.sig, lineage/).
 */
function downgradeToJobFormat3(runDir: string): void {
  const checkpoints = path.join(runDir, 'checkpoints');
  rmSync(path.join(runDir, LINEAGE_DIR), { recursive: true, force: true });
  for (const slot of readdirSync(checkpoints).filter((n) => !n.startsWith('.'))) {
    rmSync(path.join(checkpoints, slot, MANIFEST_FILE), { force: true });
    const file = path.join(checkpoints, slot, 'job.json');
    const job = decodeJob(readFileSync(file));
    const { windows: _windows, ...data } = job.config.data;
    const { keepEvery: _keepEvery, everyMinutes: _everyMinutes, ...checkpoint } = job.config.checkpoint;
    const config = { ...job.config, data, checkpoint } as unknown as TrainerConfig;
    const { digest: _digest, ...body } = job;
    writeFileSync(file, encodeJob(sealJob({ ...body, format: JOB_FORMAT_V3, config, configDigest: canonicalDigest(config), data: versionOneState(job.data) as never })));
  }
}

describe('runs of llmcp-job/3', () => {
  for (const epochs of ['reshuffle', 'repeat'] as const) {
    it(`resume bit for bit from the whole stored order across an epoch boundary (${epochs}), then save the constant-size state`, async () => {
      // A text source recorded before data.windows existed trained with windows inside documents.
      const dir = tempDir();
      const corpus = path.join(dir, 'stories.txt');
      writeFileSync(corpus, Array.from({ length: 60 }, (_, i) => `Story ${i}: ${'the cat sat on the mat and '.repeat(1 + (i % 4))}end.`).join('\n\n'));
      const config = smallBpe({
        data: { source: { kind: 'text', path: corpus, validationFraction: 0.2 }, windows: 'documents', stride: 1, batchSize: 128, shuffle: { epochs } },
        steps: 34,
      });
      const uninterrupted = finalBytes(await trainedRun(config));
      const { dir: runDir } = await stoppedRun(config, 12);
      downgradeToJobFormat3(runDir);
      const legacy = decodeJob(readFileSync(path.join(runDir, 'checkpoints', 'latest', 'job.json')));
      expect(legacy.format).toBe(JOB_FORMAT_V3);
      expect(legacy.config.data.windows).toBe('documents');
      // Stopped at step 12, the resumed part crosses an epoch boundary (two, in fact).
      const epochLength = Math.ceil((legacy.data as unknown as UpdateBatchStateJSONV1).order.length / 128);
      expect(epochLength).toBeGreaterThan(12);
      expect(2 * epochLength).toBeLessThan(34);
      const result = await resumeRun(runDir, { saveMode: 'inline' });
      expect(result).toMatchObject({ status: 'completed', step: 34, resumedFrom: 'latest' });
      expect(sameBytes(uninterrupted, finalBytes(runDir))).toBeNull();
      const latest = readFileSync(path.join(runDir, 'checkpoints', 'latest', 'job.json'));
      expect(decodeJob(latest).format).toBe(JOB_FORMAT);
      expect((decodeJob(latest).data as { version: number }).version).toBe(2);
      expect(runStatus(runDir).state).toBe('complete');
    });
  }
});
