import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkCitations, fixCitations } from './check-citations.ts';
import { scratchWorkspace } from './scratch-workspace.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function workspace(files: Record<string, string>): string {
  return scratchWorkspace('llmcp-citations-', {
    'docs/spec/model.md': '# Model\n\n## 4. Initialization\n\n### 4.1 SplitMix64\n',
    'docs/STYLE.md': '# Style\n\n1. **Root**\n2. **Package**\n',
    'packages/format/SPEC.md': '# Format\n\n## 5. Payload\n\n### 5.1 Record order\n',
    'tools/tool.ts': '',
    ...files,
  });
}

describe('citations in code comments', () => {
  it('every citation in the repository resolves', () => {
    expect(checkCitations(root)).toEqual([]);
  });

  it('accepts relative links to existing sections, in line and block comments', () => {
    const ws = workspace({
      'packages/model/src/a.ts': '// see ../../../docs/spec/model.md §4.1\n/**\n * [model.md §4](../../../docs/spec/model.md) and ../../format/SPEC.md §5.1\n */\nexport const a = 1;\n',
      'packages/format/src/b.ts': '/* ../SPEC.md §5 */ const url = "https://example.com/README.md";\n',
    });
    expect(checkCitations(ws)).toEqual([]);
  });

  it('reports a bare name, a missing file, a missing section and references a contributor does not have', () => {
    const ws = workspace({
      'packages/model/src/a.ts': [
        '// model.md §4',
        '// ../../../docs/spec/missing.md',
        '// ../../../docs/spec/model.md §9.9',
        '/* Acceptance 3: resumes */',
        ' * STYLE §2',
        'const s = "model.md §4 in a string is not a citation";',
      ].join('\n'),
    });
    const problems = checkCitations(ws).map((p) => `${p.line}: ${p.message}`);
    expect(problems).toEqual([
      '1: names model.md without a relative path from this file',
      '2: ../../../docs/spec/missing.md does not exist (resolved to docs/spec/missing.md)',
      '3: docs/spec/model.md has no section 9.9',
      "4: cites an issue's acceptance point; say what the test proves instead",
    ]);
  });

  it('--fix rewrites bare names that identify one document, preferring the own package, SPEC.md elsewhere meaning the format\'s', () => {
    const ws = workspace({
      'packages/format/src/a.ts': '// SPEC.md §5.1 and model.md §4\nconst x = "model.md";\n',
      'packages/data/SPEC.md': '# Data\n',
      'packages/model/src/b.ts': '// format.md §5 and STYLE.md §2; SPEC.md §5.1; notes.md is unknown here\n',
    });
    expect(fixCitations(ws)).toBe(5);
    expect(readFileSync(path.join(ws, 'packages/format/src/a.ts'), 'utf8')).toBe('// ../SPEC.md §5.1 and ../../../docs/spec/model.md §4\nconst x = "model.md";\n');
    expect(readFileSync(path.join(ws, 'packages/model/src/b.ts'), 'utf8')).toBe(
      '// ../../format/SPEC.md §5 and ../../../docs/STYLE.md §2; ../../format/SPEC.md §5.1; notes.md is unknown here\n',
    );
    expect(checkCitations(ws).map((p) => p.citation)).toEqual(['notes.md']);
  });
});
