/**
 * How the campaigns classify a command's exit (run-harness.ts `classifyCli`): verdicts on stdout (verify's FAILED,
 * exit 1, and UNSETTLED, exit 4) are typed outcomes; an exit of 2–4 with no typed line on stderr is not.
 */
import { describe, expect, it } from 'vitest';
import type { ChildExit } from '../src/proc.ts';
import { classifyCli } from '../src/run-harness.ts';

const exit = (code: number | null, stdout = '', stderr = ''): ChildExit => ({ code, signal: null, timedOut: false, stdout, stderr, ms: 1 });

describe('classifyCli', () => {
  it("takes verify's UNSETTLED verdict (exit 4, text or --json) as typed, like its FAILED verdict (exit 1)", () => {
    expect(classifyCli(exit(4, 'run /tmp/r: UNSETTLED\n  in use by process 12 on h (training since …)\n')).kind).toBe('typed');
    expect(classifyCli(exit(4, '{\n  "ok": false,\n  "run": {\n    "settled": false\n  }\n}\n')).kind).toBe('typed');
    expect(classifyCli(exit(1, 'run /tmp/r: FAILED\n')).kind).toBe('typed');
  });

  it('takes an exit of 2–4 with neither a verdict nor a typed line on stderr as untyped', () => {
    expect(classifyCli(exit(4)).kind).toBe('untyped');
    expect(classifyCli(exit(4, 'run /tmp/r: ok\n')).kind).toBe('untyped');
    expect(classifyCli(exit(3, '', 'something went wrong\n')).kind).toBe('untyped');
    expect(classifyCli(exit(3, '', 'llmcp verify: error: CLI_PATH_MISSING: /tmp/x does not exist\n')).kind).toBe('typed');
    expect(classifyCli(exit(0)).kind).toBe('ok');
  });
});
