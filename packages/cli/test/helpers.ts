/**
 * Test helpers: run `llmcp` in-process with captured streams, and locate the
 * conformance fixtures (read by path; the cli package does not depend on
 * @llmcp/conformance).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../src/cli.ts';
import type { CliStream } from '../src/context.ts';

export const PACKAGE_DIR: string = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const REPO_ROOT: string = path.resolve(PACKAGE_DIR, '../..');
export const FIXTURES: string = path.join(REPO_ROOT, 'packages/conformance/fixtures');
export const GOLDEN: string = path.join(FIXTURES, 'golden-6330.llmcp');

export interface Captured {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

class Capture implements CliStream {
  text = '';
  constructor(readonly isTTY: boolean) {}
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
}

export interface RunOptions {
  readonly cwd?: string;
  readonly env?: Record<string, string | undefined>;
  readonly tty?: boolean;
}

/** Runs the CLI in-process. */
export async function llmcp(argv: readonly string[], options: RunOptions = {}): Promise<Captured> {
  const stdout = new Capture(options.tty ?? false);
  const stderr = new Capture(options.tty ?? false);
  const code = await runCli(argv, { stdout, stderr, env: options.env ?? {}, cwd: options.cwd ?? REPO_ROOT });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

/** A fresh temporary directory and its cleanup. */
export function tempDir(prefix = 'llmcp-cli-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface ManifestCase {
  readonly id: string;
  readonly file: string;
  readonly change: string;
  readonly expect: { readonly outcome: 'accept' } | { readonly outcome: 'reject'; readonly code: string; readonly reason: string; readonly alsoAccepted?: readonly string[] };
}
