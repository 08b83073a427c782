/**
 * The signing and trusted keys of the commands (`--sign-key`, `--trust-key`):
 * read from the file the user names, checked by the trainer (ECDSA P-256,
 * P-384 or Ed25519 PEM), an unusable key refused as an input error before
 * any work starts. Keys are never copied anywhere.
 */
import type { SigningKey, TrustedKey } from '@llmcp/trainer';
import type { CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { requirePath } from './files.ts';

async function keyCall<T>(file: string, absolute: string, load: (t: typeof import('@llmcp/trainer')) => Promise<T> | T): Promise<T> {
  const t = await import('@llmcp/trainer');
  try {
    return await load(t);
  } catch (e) {
    if (!t.isTrainerError(e)) throw e;
    throw new CliError('CLI_INVALID_INPUT', `${file}: ${e.message.replace(`${absolute}: `, '')}`, {
      path: absolute,
      causeCode: e.code,
      hint: "make a key pair with 'llmcp keygen', or with openssl (genpkey -algorithm ed25519, or -algorithm EC -pkeyopt ec_paramgen_curve:P-256)",
      cause: e,
    });
  }
}

/**
 * Reads `--sign-key`.
 *
 * @param ctx - the command context.
 * @param file - the private key file as typed, or undefined.
 * @returns the key, or null when none was given.
 * @throws CliError `CLI_FILE_NOT_FOUND`, `CLI_WRONG_FILE_KIND` or `CLI_INVALID_INPUT` (not a usable private key).
 */
export async function readSigningKey(ctx: CliContext, file: string | undefined): Promise<SigningKey | null> {
  if (file === undefined) return null;
  const { absolute } = requirePath(ctx, file, 'file', 'signing key');
  return keyCall(file, absolute, (t) => t.loadSigningKey(absolute));
}

/**
 * Reads `--trust-key`.
 *
 * @param ctx - the command context.
 * @param file - the public key file as typed, or undefined.
 * @returns the key, or null when none was given.
 * @throws CliError `CLI_FILE_NOT_FOUND`, `CLI_WRONG_FILE_KIND` or `CLI_INVALID_INPUT` (not a usable public key).
 */
export async function readTrustedKey(ctx: CliContext, file: string | undefined): Promise<TrustedKey | null> {
  if (file === undefined) return null;
  const { absolute } = requirePath(ctx, file, 'file', 'trusted key');
  return keyCall(file, absolute, (t) => t.loadTrustedKey(absolute));
}
