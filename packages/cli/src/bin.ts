#!/usr/bin/env node
/**
 * The `llmcp` executable: a thin shell over {@link runCli}. Output goes
 * through {@link processOutput}, so a reader that goes away (`llmcp inspect
 * big.llmcp | head`, or `tee` killed by the same Ctrl-C as `llmcp train`)
 * ends the output but never the command: a stopped run still writes its
 * checkpoint and exits with its documented code.
 */
import { runCli } from './cli.ts';
import { processOutput } from './process-output.ts';

const { stdout, stderr } = processOutput();

void runCli(process.argv.slice(2), { stdout, stderr, env: process.env, cwd: process.cwd(), handleSignals: true }).then((code) => {
  process.exitCode = code;
});
