#!/usr/bin/env node
/**
 * The `llmcp` executable: a thin shell over {@link runCli}.
 */
import { runCli } from './cli.ts';

// `llmcp inspect big.llmcp | head`: a reader that goes away is not an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

void runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd(), handleSignals: true }).then((code) => {
  process.exitCode = code;
});
