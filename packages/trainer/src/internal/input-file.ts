/**
 * The trainer's reader of input files (corpus, split, tokenizer file, config,
 * an evaluated checkpoint): `@llmcp/format/node`'s input rule — a regular
 * file, opened without blocking, of bounded size — with its refusals as
 * trainer errors of the caller's code, each naming the file and what is wrong.
 */
import { isFormatError } from '@llmcp/format';
import { MAX_FILE_BYTES, readRegularFileSync } from '@llmcp/format/node';
import { TrainerError, type TrainerErrorCode } from '../errors.ts';

/**
 * Reads a whole input file under the input rule.
 *
 * @param file - the path.
 * @param options - what it is (`corpus`, `config file`, …), the code of a refusal, and the size limit (default `MAX_FILE_BYTES`).
 * @returns its bytes.
 * @throws TrainerError with `options.code`: missing, not a regular file (a FIFO or device is refused, never waited on), too large, unreadable.
 */
export function readInputFile(file: string, options: { readonly what: string; readonly code: TrainerErrorCode; readonly maxBytes?: number }): Uint8Array {
  const { what, code } = options;
  try {
    return readRegularFileSync(file, { maxBytes: options.maxBytes ?? MAX_FILE_BYTES, what });
  } catch (cause) {
    const message =
      isFormatError(cause) && cause.reason === 'not-found'
        ? `cannot read the ${what} ${file}: it does not exist`
        : isFormatError(cause)
          ? cause.message
          : `cannot read the ${what} ${file}: ${(cause as Error).message}`;
    throw new TrainerError(code, message, { path: file, cause });
  }
}
