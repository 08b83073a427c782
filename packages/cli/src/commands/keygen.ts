/**
 * `llmcp keygen [-o key.pem] [--type ecdsa-p256|ecdsa-p384|ed25519]`: a key
 * pair for signing provenance manifests. The private key (PKCS #8 PEM) is
 * written with mode 0600 from its first byte, the public key beside it as
 * `<name>.pub.pem`; neither replaces an existing file without `--force`.
 * Any PEM key made with openssl works as well.
 */
import { closeSync, existsSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import type { SetExit } from '../exit-codes.ts';
import type { CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { resolvePath, writeOutputFile } from '../internal/files.ts';

/** Options of `llmcp keygen`. */
export interface KeygenOptions {
  readonly out?: string;
  readonly type?: 'ecdsa-p256' | 'ecdsa-p384' | 'ed25519';
  readonly force?: boolean;
}

/** The default private key file. */
export const DEFAULT_KEY_FILE = 'llmcp-signing-key.pem';

/**
 * The public key file beside a private key file: `key.pem` → `key.pub.pem`, `key` → `key.pub.pem`.
 *
 * @param privateFile - the private key file.
 * @returns the public key file.
 */
export function publicKeyFileOf(privateFile: string): string {
  return privateFile.endsWith('.pem') ? `${privateFile.slice(0, -'.pem'.length)}.pub.pem` : `${privateFile}.pub.pem`;
}

/** Writes a private key: a temporary file created with mode 0600, fsynced, renamed over the target. */
function writePrivateKey(absolute: string, pem: string): void {
  const tmp = path.join(path.dirname(absolute), `.${path.basename(absolute)}.tmp-${process.pid}`);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    const bytes = new TextEncoder().encode(pem);
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, bytes.length - at);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, absolute);
}

/**
 * Runs `llmcp keygen`.
 *
 * @param ctx - the command context.
 * @param options - output file, key type, force.
 * @returns 0.
 * @throws CliError `CLI_WRITE_FAILED` when a key file exists (without `--force`) or cannot be written.
 */
export async function runKeygen(ctx: CliContext, options: KeygenOptions): Promise<number> {
  const file = options.out ?? DEFAULT_KEY_FILE;
  const pub = publicKeyFileOf(file);
  const absolute = resolvePath(ctx, file);
  for (const [shown, abs] of [
    [file, absolute],
    [pub, resolvePath(ctx, pub)],
  ] as const) {
    if (existsSync(abs) && options.force !== true) throw new CliError('CLI_WRITE_FAILED', `${shown} already exists`, { path: abs, hint: 'pass --force to replace the key pair, or choose another -o' });
  }
  if (!existsSync(path.dirname(absolute))) throw new CliError('CLI_WRITE_FAILED', `cannot write ${file}: directory ${path.dirname(file) || '.'} does not exist`, { path: absolute, hint: 'create the directory first' });
  const { generateSigningKeyPair } = await import('@llmcp/trainer');
  const pair = generateSigningKeyPair(options.type ?? 'ecdsa-p256');
  try {
    writePrivateKey(absolute, pair.privatePem);
  } catch (e) {
    throw new CliError('CLI_WRITE_FAILED', `cannot write ${file}: ${(e as Error).message}`, { path: absolute, cause: e });
  }
  await writeOutputFile(ctx, pub, new TextEncoder().encode(pair.publicPem), true);
  ctx.stdout.write(`wrote ${file} (private, ${pair.algorithm}, mode 0600) and ${pub} (public); key hint ${pair.hint}\n`);
  ctx.stdout.write(`  sign:   llmcp train <run-dir> --config <file> --sign-key ${file}\n  verify: llmcp verify <run-dir> --trust-key ${pub}\n`);
  ctx.stderr.write('note: keep the private key out of run directories and configs; anyone holding it can sign checkpoints as you\n');
  return EXIT_CODES.OK;
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `keygen` command.
 */
export function keygenCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('keygen')
    .summary('make a key pair for signing provenance manifests')
    .description(
      'Make a key pair for --sign-key (train, resume, pivot, fork, export) and --trust-key (verify): the private key as PKCS #8 PEM ' +
        '(mode 0600) and the public key beside it as <name>.pub.pem. ECDSA P-256 by default; P-384 and Ed25519 on request. ' +
        'Keys made with openssl work the same (openssl genpkey -algorithm ed25519 -out key.pem; openssl pkey -in key.pem -pubout -out key.pub.pem).\n\n' +
        'Exit status: 0 ok, 2 bad options, 4 a key file exists or cannot be written.',
    )
    .option('-o, --out <file>', `private key file (default ${DEFAULT_KEY_FILE}; the public key goes to <name>.pub.pem)`)
    .addOption(new Option('--type <type>', 'key type').choices(['ecdsa-p256', 'ecdsa-p384', 'ed25519']))
    .option('-f, --force', 'replace an existing key pair')
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp keygen -o ~/.llmcp/signing.pem
  $ llmcp train runs/a --config train.json --sign-key ~/.llmcp/signing.pem
  $ llmcp verify runs/a --trust-key ~/.llmcp/signing.pub.pem
`,
    )
    .action(async (options: KeygenOptions) => {
      setExit(await runKeygen(ctx, options));
    });
}
