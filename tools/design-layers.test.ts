/**
 * The layer diagram of [../docs/DESIGN.md](../docs/DESIGN.md) says what
 * [layers.json](./layers.json) declares: every package appears with its
 * layer, and a "(uses …)" note lists exactly the packages it may import.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadRules } from './check-layers.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function diagram(): string[] {
  const design = readFileSync(path.join(root, 'docs/DESIGN.md'), 'utf8');
  const start = design.indexOf('## Layers');
  const open = design.indexOf('```\n', start);
  const close = design.indexOf('```\n', open + 4);
  return design.slice(open + 4, close).split('\n');
}

describe('docs/DESIGN.md layer diagram', () => {
  const rules = loadRules(root);
  const lines = diagram();
  const published = Object.entries(rules.packages).filter(([, r]) => typeof r.layer === 'number' || r.layer === 'side');

  it.each(published)('%s is drawn at its declared layer', (name, rule) => {
    const line = lines.find((l) => l.trimStart().startsWith(`${name} `));
    expect(line, `${name} missing from the diagram`).toBeDefined();
    const drawn = /\s(layer (\d+)|side)\s/.exec(line as string);
    expect(drawn?.[2] !== undefined ? Number(drawn[2]) : drawn?.[1]).toBe(rule.layer);
  });

  it('each "(uses …)" note lists exactly the allowed imports', () => {
    let checked = 0;
    for (const [name, rule] of published) {
      const line = lines.find((l) => l.trimStart().startsWith(`${name} `)) ?? '';
      const uses = /\(uses ([a-z, ]+)\)/.exec(line)?.[1];
      if (uses === undefined || uses.startsWith('every')) continue;
      checked += 1;
      expect(uses.split(', ').map((u) => `@llmcp/${u}`).sort(), name).toEqual([...rule.allow].sort());
    }
    expect(checked).toBeGreaterThan(0);
  });

  it('no package is drawn that layers.json does not declare', () => {
    const drawn = lines.flatMap((l) => [...l.matchAll(/@llmcp\/[a-z-]+/g)].map((m) => m[0]));
    for (const name of drawn) expect(Object.keys(rules.packages)).toContain(name);
  });
});
