/**
 * The exit codes of `llmcp`, in one place: their values ({@link EXIT_CODES}),
 * what each means ({@link EXIT_CODE_MEANINGS}, rendered into `llmcp --help`
 * by {@link exitCodesHelp}; the README's table, `tools/pnpm-llmcp.sh` and the
 * reliability harness are checked against it by `test/exit-codes.test.ts`),
 * and the callback through which a command's action reports its code
 * ({@link SetExit}). This module imports nothing, so the commands and
 * `cli.ts` can both depend on it without an import cycle.
 */

/** Process exit codes of `llmcp` (documented in the README and in `llmcp --help`). */
export const EXIT_CODES = {
  /** Success: the command did what was asked; a checked file or run verified. */
  OK: 0,
  /** Verification failed: an invalid checkpoint, a run that does not verify, or (diff) inputs that differ. */
  FAILED: 1,
  /** Usage error: unknown command or flag, missing argument, bad number. */
  USAGE: 2,
  /** Input error: a file is missing, a directory where a file was expected, unreadable, or in the wrong format. */
  INPUT: 3,
  /** Runtime error: a write failed, or a training run failed. */
  RUNTIME: 4,
  /** A training run was interrupted (SIGINT/SIGTERM) after writing its checkpoint. */
  INTERRUPTED: 130,
} as const;

/** One of the {@link EXIT_CODES} values. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

/** The name of an exit code in {@link EXIT_CODES} (`OK`, `FAILED`, …). */
export type ExitCodeName = keyof typeof EXIT_CODES;

/**
 * What each exit code means, as `llmcp --help` and the README's table say it
 * (words in backticks are command names and flags; the help prints them
 * without the backticks).
 */
export const EXIT_CODE_MEANINGS: Readonly<Record<ExitCodeName, string>> = {
  OK: 'ok: the command succeeded; a checked file or run verified; `diff` found no difference',
  FAILED: 'verification failed: invalid checkpoint (`inspect`, `verify`), a run that does not verify, `diff` found differences, a resume refused because no slot verifies',
  USAGE: 'usage error: unknown command or flag, missing or extra argument, bad number',
  INPUT: 'input error: missing file, directory instead of file, unreadable or wrong-format input, bad config, changed run inputs',
  RUNTIME: 'runtime error: an output could not be written or already exists, a training run failed, `verify` found no moment when a run being trained stood still (UNSETTLED)',
  INTERRUPTED: 'a training run was interrupted (its checkpoint was written first)',
};

/** Sets the exit code a command's action produced. */
export type SetExit = (code: number) => void;

const HELP_WIDTH = 100;
const CODE_COLUMN = 5;

/** Greedy word wrap of `text` into lines of at most `width` characters (a longer word stays whole). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

/**
 * The `Exit codes:` block of `llmcp --help`, rendered from
 * {@link EXIT_CODES} and {@link EXIT_CODE_MEANINGS}.
 *
 * @returns one line per code (value, then its meaning without backticks, wrapped under itself at 100 columns), after an `Exit codes:` heading.
 */
export function exitCodesHelp(): string {
  const indent = ' '.repeat(2 + CODE_COLUMN);
  const rows = (Object.keys(EXIT_CODES) as ExitCodeName[]).map((name) => {
    const [first = '', ...rest] = wrap(EXIT_CODE_MEANINGS[name].replaceAll('`', ''), HELP_WIDTH - indent.length);
    return [`  ${String(EXIT_CODES[name]).padEnd(CODE_COLUMN)}${first}`, ...rest.map((l) => `${indent}${l}`)].join('\n');
  });
  return `Exit codes:\n${rows.join('\n')}\n`;
}
