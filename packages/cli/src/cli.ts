/**
 * The `llmcp` command line: one commander program per invocation, writing to
 * injected streams, returning the exit code (never calling `process.exit`).
 * User mistakes print one line plus a hint — never a stack trace.
 */
import { Command, CommanderError } from 'commander';
import { configCommand } from './commands/config.ts';
import { diffCommand } from './commands/diff.ts';
import { evalCommand, reportCommand } from './commands/eval.ts';
import { exportCommand } from './commands/export.ts';
import { importCommand } from './commands/import.ts';
import { inspectCommand } from './commands/inspect.ts';
import { forkCommand, pivotCommand, resumeCommand, statusCommand, trainCommand } from './commands/run.ts';
import { sampleCommand } from './commands/sample.ts';
import { verifyCommand } from './commands/verify.ts';
import { keygenCommand } from './commands/keygen.ts';
import { CLI_VERSION } from './version.ts';
import type { CliContext } from './context.ts';
import { reportError } from './error-report.ts';
import { CliError, isCliError } from './errors.ts';
import { EXIT_CODES, exitCodesHelp, type SetExit } from './exit-codes.ts';

export { CLI_VERSION } from './version.ts';

/**
 * What `llmcp --version` prints: the package version, and for the workspace's
 * `0.0.0` (a build that no release has versioned yet) a word saying so, since
 * a bare `0.0.0` reads as a broken install.
 *
 * @param version - the package version.
 * @returns the line.
 */
export function versionText(version: string): string {
  return version === '0.0.0' ? `${version} (unreleased: built from the llmcp workspace, before its first versioned release)` : version;
}

const EXIT_HELP = `
${exitCodesHelp()}
With --json (inspect, verify, diff, sample, status, eval, report), a failure prints one JSON document
{"schema": "llmcp-error/1", "error": {"code", "message", "exit", …}} on stdout instead of the
error line on stderr, with the same exit code.

Environment: NO_COLOR disables colours, FORCE_COLOR forces them (default: colours on a TTY only).
`;

/** Receives a usage error found by the command-line parser: the command path (e.g. `llmcp verify`) and the message. */
type UsageErrorSink = (command: string, message: string) => void;

function usageError(command: string, message: string): CliError {
  return new CliError('CLI_USAGE', message, { hint: `run '${command} --help' for usage and examples` });
}

/** Where a command's output and usage errors go: the context's streams, and the sink of usage errors. */
interface ProgramOutput {
  readonly ctx: CliContext;
  readonly onUsageError: UsageErrorSink;
}

/** Sends the output of `cmd` and of every subcommand (their paths under `parentPath`) to `output`, and turns commander's exits into exceptions. */
function configure(cmd: Command, parentPath: string, output: ProgramOutput): void {
  const { ctx, onUsageError } = output;
  const commandPath = parentPath === '' ? cmd.name() : `${parentPath} ${cmd.name()}`;
  cmd.exitOverride();
  cmd.configureOutput({
    writeOut: (s) => ctx.stdout.write(s),
    writeErr: (s) => ctx.stderr.write(s),
    outputError: (str) => onUsageError(commandPath, str.trim().replace(/^error:\s*/, '')),
    getOutHelpWidth: () => ctx.stdout.columns ?? 100,
    getErrHelpWidth: () => ctx.stderr.columns ?? 100,
    getOutHasColors: () => false,
    getErrHasColors: () => false,
  });
  cmd.showSuggestionAfterError(true);
  cmd.allowExcessArguments(false);
  for (const sub of cmd.commands) configure(sub, commandPath, output);
}

function buildProgram(ctx: CliContext, setExit: SetExit, onUsageError: UsageErrorSink): Command {
  const program = new Command('llmcp')
    .description('Inspect, verify, compare, sample, convert and train LLMCP35 v1 checkpoints.')
    .version(versionText(CLI_VERSION), '-V, --version', 'print the version')
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
    configCommand(ctx, setExit),
    evalCommand(ctx, setExit),
    reportCommand(ctx, setExit),
    keygenCommand(ctx, setExit),
  ]) {
    program.addCommand(cmd);
  }
  configure(program, '', { ctx, onUsageError });
  return program;
}

/**
 * Builds the `llmcp` program for one invocation.
 *
 * @param ctx - streams, environment and working directory.
 * @param setExit - receives the exit code of the action that ran.
 * @returns the commander program (not yet parsed).
 */
export function createProgram(ctx: CliContext, setExit: SetExit): Command {
  return buildProgram(ctx, setExit, (command, message) => {
    reportError(ctx, { command, error: usageError(command, message), json: false });
  });
}

/**
 * Runs `llmcp` with the given arguments.
 *
 * @param argv - the arguments after the program name, e.g. `['inspect', 'a.llmcp', '--json']`.
 * @param ctx - streams, environment and working directory.
 * @returns the process exit code (see `llmcp --help`).
 * @example
 * ```ts
 * const { stdout, stderr } = processOutput(); // write errors of the process streams end output, never the program
 * const code = await runCli(['verify', 'state.llmcp'], { stdout, stderr, env: process.env, cwd: process.cwd() });
 * ```
 */
export async function runCli(argv: readonly string[], ctx: CliContext): Promise<number> {
  let exitCode: number = EXIT_CODES.OK;
  let usage: { readonly command: string; readonly message: string } | null = null;
  // Set once the parser has accepted the command line: whether the command was given --json.
  let parsedJson: boolean | null = null;
  const program = buildProgram(
    ctx,
    (code) => {
      exitCode = code;
    },
    (command, message) => {
      usage ??= { command, message };
    },
  );
  program.hook('preAction', (_program, action) => {
    parsedJson = action.opts<{ json?: boolean }>().json === true;
  });
  const typed = argv[0];
  const command = typed === undefined ? undefined : program.commands.find((cmd) => cmd.name() === typed || cmd.aliases().includes(typed));
  // A command line the parser refused has no parsed options: a --json before any `--` of a command that has the flag counts.
  const json = (): boolean => {
    if (parsedJson !== null) return parsedJson;
    if (command === undefined || !command.options.some((o) => o.long === '--json')) return false;
    const end = argv.indexOf('--');
    return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
  };
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version') return EXIT_CODES.OK;
      // `llmcp help` exits 0; `llmcp` alone shows the help on stderr as a usage error, like every other commander error.
      if (e.code === 'commander.help') return e.exitCode === 0 ? EXIT_CODES.OK : EXIT_CODES.USAGE;
      const { command: commandPath, message } = usage ?? { command: 'llmcp', message: e.message.replace(/^error:\s*/, '') };
      return reportError(ctx, { command: commandPath, error: usageError(commandPath, message), json: json() });
    }
    const error = isCliError(e)
      ? e
      : new CliError('CLI_INTERNAL', e instanceof Error ? e.message : String(e), { hint: 'this is a bug in llmcp; set LLMCP_DEBUG=1 for a stack trace and report it', cause: e });
    return reportError(ctx, { command: command === undefined ? 'llmcp' : `llmcp ${typed}`, error, json: json() });
  }
}
