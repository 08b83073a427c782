/**
 * The `llmcp` command line: one commander program per invocation, writing to
 * injected streams, returning the exit code (never calling `process.exit`).
 * User mistakes print one line plus a hint — never a stack trace.
 */
import { Command, CommanderError } from 'commander';
import manifest from '../package.json' with { type: 'json' };
import { diffCommand } from './commands/diff.ts';
import { exportCommand } from './commands/export.ts';
import { importCommand } from './commands/import.ts';
import { inspectCommand } from './commands/inspect.ts';
import { forkCommand, pivotCommand, resumeCommand, statusCommand, trainCommand } from './commands/run.ts';
import { sampleCommand } from './commands/sample.ts';
import { verifyCommand } from './commands/verify.ts';
import { colorsFor, type CliContext } from './context.ts';
import { EXIT_CODES, isCliError } from './errors.ts';

/** Version of `@llmcp/cli` (printed by `llmcp --version`). */
export const CLI_VERSION: string = manifest.version;

/** Sets the exit code a command's action produced. */
export type SetExit = (code: number) => void;

const EXIT_HELP = `
Exit codes:
  0    ok: the command succeeded; a checked file or run verified; diff found no difference
  1    verification failed: invalid checkpoint, run that does not verify, or diff found differences
  2    usage error: unknown command or flag, missing or extra argument, bad number
  3    input error: missing file, directory instead of file, unreadable or wrong-format input
  4    runtime error: an output could not be written, or a training run failed
  130  a training run was interrupted (its checkpoint was written first)

Environment: NO_COLOR disables colours, FORCE_COLOR forces them (default: colours on a TTY only).
`;

function errorWriter(ctx: CliContext, commandPath: string): (str: string, write: (s: string) => void) => void {
  const c = colorsFor(ctx.stderr, ctx.env);
  return (str, write) => {
    const message = str.trim().replace(/^error:\s*/, '');
    write(`${commandPath}: ${c.red('error:')} ${message}\n${c.dim(`hint: run '${commandPath} --help' for usage and examples`)}\n`);
  };
}

function configure(cmd: Command, ctx: CliContext, parentPath: string): void {
  const commandPath = parentPath === '' ? cmd.name() : `${parentPath} ${cmd.name()}`;
  cmd.exitOverride();
  cmd.configureOutput({
    writeOut: (s) => ctx.stdout.write(s),
    writeErr: (s) => ctx.stderr.write(s),
    outputError: errorWriter(ctx, commandPath),
    getOutHelpWidth: () => ctx.stdout.columns ?? 100,
    getErrHelpWidth: () => ctx.stderr.columns ?? 100,
    getOutHasColors: () => false,
    getErrHasColors: () => false,
  });
  cmd.showSuggestionAfterError(true);
  cmd.allowExcessArguments(false);
  for (const sub of cmd.commands) configure(sub, ctx, commandPath);
}

/**
 * Builds the `llmcp` program for one invocation.
 *
 * @param ctx - streams, environment and working directory.
 * @param setExit - receives the exit code of the action that ran.
 * @returns the commander program (not yet parsed).
 */
export function createProgram(ctx: CliContext, setExit: SetExit): Command {
  const program = new Command('llmcp')
    .description('Inspect, verify, compare, sample, convert and train LLMCP35 v1 checkpoints.')
    .version(CLI_VERSION, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help (every command has --help with examples)')
    .addHelpText('after', EXIT_HELP);
  for (const cmd of [
    inspectCommand(ctx, setExit),
    verifyCommand(ctx, setExit),
    diffCommand(ctx, setExit),
    sampleCommand(ctx, setExit),
    exportCommand(ctx, setExit),
    importCommand(ctx, setExit),
    trainCommand(ctx, setExit),
    resumeCommand(ctx, setExit),
    pivotCommand(ctx, setExit),
    forkCommand(ctx, setExit),
    statusCommand(ctx, setExit),
  ]) {
    program.addCommand(cmd);
  }
  configure(program, ctx, '');
  return program;
}

/**
 * Runs `llmcp` with the given arguments.
 *
 * @param argv - the arguments after the program name, e.g. `['inspect', 'a.llmcp', '--json']`.
 * @param ctx - streams, environment and working directory.
 * @returns the process exit code (see `llmcp --help`).
 * @example
 * ```ts
 * const code = await runCli(['verify', 'state.llmcp'], { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() });
 * ```
 */
export async function runCli(argv: readonly string[], ctx: CliContext): Promise<number> {
  let exitCode: number = EXIT_CODES.OK;
  const program = createProgram(ctx, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return EXIT_CODES.OK;
      // `llmcp help` exits 0; `llmcp` alone shows the help on stderr as a usage error, like every other commander error.
      if (e.code === 'commander.help') return e.exitCode === 0 ? EXIT_CODES.OK : EXIT_CODES.USAGE;
      return EXIT_CODES.USAGE;
    }
    const c = colorsFor(ctx.stderr, ctx.env);
    const name = argv[0] !== undefined && program.commands.some((cmd) => cmd.name() === argv[0]) ? `llmcp ${argv[0]}` : 'llmcp';
    if (isCliError(e)) {
      ctx.stderr.write(`${name}: ${c.red('error:')} ${e.message}\n`);
      if (e.hint !== undefined) ctx.stderr.write(`${c.dim(`hint: ${e.hint}`)}\n`);
      return e.exitCode;
    }
    const detail = e instanceof Error ? e.message : String(e);
    ctx.stderr.write(`${name}: ${c.red('internal error:')} ${detail}\n`);
    if (ctx.env.LLMCP_DEBUG === '1' && e instanceof Error && e.stack !== undefined) ctx.stderr.write(`${e.stack}\n`);
    else ctx.stderr.write(`${c.dim('hint: this is a bug in llmcp; set LLMCP_DEBUG=1 for a stack trace and report it')}\n`);
    return EXIT_CODES.RUNTIME;
  }
}
