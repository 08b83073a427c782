import { describe, expect, it } from 'vitest';
import { indexChain, walkChain, type ChainContext, type ChainEntry } from './lineage-chain.ts';
import { LINEAGE_FORMAT, type Lineage, type LineageParent } from './provenance.ts';

const context: ChainContext = { runId: 'r', forkedFrom: [], manifestsAfter: -1 };

function entry(source: string, digest: string, step: number, via: Lineage['via'], parent: LineageParent | null, slots: string[] = []): ChainEntry {
  const lineage: Lineage = {
    format: LINEAGE_FORMAT,
    kind: 'checkpoint',
    run: 'r',
    step,
    via,
    parent,
    config: null,
    inputs: null,
    implementation: null,
    engine: { kind: 'llmcp', worldSize: 1 },
    tool: { name: '@llmcp/trainer', version: '0.0.0' },
  };
  return { source, digest, lineage, slots };
}

const link = (step: number, manifest: string): LineageParent => ({ run: 'r', step, job: `sha256:job${step}`, manifest, state: 'fnv1a64:0000000000000000' });

describe('walkChain', () => {
  it('walks through another manifest of the same files when a link names its own digest (the same checkpoint saved again)', () => {
    const root = entry('lineage/0', 'sha256:a', 0, 'init', null);
    const first = entry('lineage/10a', 'sha256:b', 10, 'train', link(0, 'sha256:a'));
    const again = entry('lineage/10b', 'sha256:b', 10, 'train', link(10, 'sha256:b'));
    const head = entry('checkpoints/latest/model.sig', 'sha256:c', 12, 'resume', link(10, 'sha256:b'), ['latest']);
    const chain = walkChain(head, indexChain([root, again, first, head]), context);
    expect(chain.map((l) => [l.step, l.status])).toEqual([
      [12, 'ok'],
      [10, 'ok'],
      [10, 'ok'],
      [0, 'root'],
    ]);
  });

  it('still names a cycle between different checkpoints as broken', () => {
    const a = entry('lineage/a', 'sha256:a', 4, 'train', link(4, 'sha256:b'));
    const b = entry('lineage/b', 'sha256:b', 4, 'train', link(4, 'sha256:a'));
    const chain = walkChain(a, indexChain([a, b]), context);
    expect(chain.at(-1)).toMatchObject({ status: 'broken', problem: expect.stringMatching(/closes a cycle of parent links/) });
  });
});
