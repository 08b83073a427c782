/**
 * The provenance manifests of exports: every output file of an export gets
 * one beside it (`F.sig`; a directory export one `model.sig` listing all its
 * files), naming the checkpoint it was made from — its run, step, job and
 * manifest digests — and signed with `--sign-key` when given. A manifest is
 * one more output of the export, under the same output rule.
 */
import path from 'node:path';
import type { SigningKey } from '@llmcp/trainer';
import type { CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { CLI_VERSION } from '../version.ts';
import type { ResolvedCheckpoint } from './checkpoint-address.ts';
import { resolvePath, type OutputFile } from './files.ts';

/** What an export wrote and where it came from. */
export interface ExportOutputs {
  /** The resolved source checkpoint. */
  readonly source: Pick<ResolvedCheckpoint, 'checkpoint' | 'job' | 'manifest'>;
  /** `safetensors`, `gguf`, `hf`, `andrea-bin`, `andrea-config`, and the element type written. */
  readonly format: string;
  readonly dtype: string | null;
  readonly key: SigningKey | null;
}

/** Where a manifest goes: beside one output file (`F.sig`), or inside an output directory (`model.sig`). */
export type ManifestTarget = { readonly file: string } | { readonly dir: string };

/**
 * The manifest file of a target, as typed.
 *
 * @param target - the output file or directory, as typed.
 * @returns `F.sig`, or `<dir>/model.sig`.
 */
export async function manifestPath(target: ManifestTarget): Promise<string> {
  const t = await import('@llmcp/trainer');
  return 'file' in target ? `${target.file}${t.MANIFEST_SUFFIX}` : path.join(target.dir, t.MANIFEST_FILE);
}

/**
 * The manifest of exported files, encoded (and signed) but not written: the
 * export writes it together with its outputs in one call of the output rule
 * (`writeOutputFiles`), so every destination is checked before anything is
 * written and a failed export leaves neither an output nor a manifest.
 *
 * @param ctx - the command context.
 * @param target - the output file (its manifest covers it alone) or directory (its manifest lists `files`).
 * @param files - the files it covers: paths relative to the manifest's directory, and their bytes.
 * @param outputs - the source, format and key.
 * @returns the manifest file as typed and its bytes.
 * @throws CliError `CLI_INVALID_INPUT` for a bare checkpoint file whose step a manifest cannot state exactly (beyond 2^53 − 1).
 */
export async function exportManifestFile(ctx: CliContext, target: ManifestTarget, files: readonly { readonly path: string; readonly bytes: Uint8Array }[], outputs: ExportOutputs): Promise<OutputFile> {
  const t = await import('@llmcp/trainer');
  const manifest = await manifestPath(target);
  const { checkpoint, job, manifest: sourceManifest } = outputs.source;
  try {
    const written = t.encodeExportManifest({
      name: 'dir' in target ? path.basename(resolvePath(ctx, target.dir)) : path.basename(target.file),
      files,
      ignorePaths: [path.basename(manifest)],
      source: { step: job?.step ?? Number(checkpoint.selectedStep), stateChecksum: checkpoint.layout.checksumLabel, job, manifest: sourceManifest },
      export: { format: outputs.format, dtype: outputs.dtype },
      tool: { name: '@llmcp/cli', version: CLI_VERSION },
      key: outputs.key,
    });
    return { file: manifest, bytes: written.bytes };
  } catch (e) {
    // The lineage rule refuses a step it cannot state exactly (a bare file's u64 step beyond 2^53 − 1): an input
    // the export cannot describe, refused before anything is written.
    if (t.isTrainerError(e) && e.code === 'TRAINER_MANIFEST_INVALID') {
      throw new CliError('CLI_INVALID_INPUT', `the checkpoint cannot be exported with a provenance manifest: ${e.message}`, { cause: e });
    }
    throw e;
  }
}

/**
 * The line an export prints about its manifest.
 *
 * @param manifest - the manifest file as typed.
 * @param key - the signing key, or null.
 * @returns the line (no newline).
 */
export function manifestLine(manifest: string, key: SigningKey | null): string {
  return `wrote ${manifest}: provenance manifest, ${key === null ? 'unsigned (sign with --sign-key)' : `signed (${key.algorithm}, key hint ${key.hint.slice(0, 16)}…)`}`;
}
