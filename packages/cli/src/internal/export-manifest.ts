/**
 * The provenance manifests of exports: every output file of an export gets
 * one beside it (`F.sig`; a directory export one `model.sig` listing all its
 * files), naming the checkpoint it was made from — its run, step, job and
 * manifest digests — and signed with `--sign-key` when given. Existing
 * manifests are refused before anything is written, like existing outputs.
 */
import path from 'node:path';
import type { SigningKey } from '@llmcp/trainer';
import type { CliContext } from '../context.ts';
import { CLI_VERSION } from '../version.ts';
import type { ResolvedCheckpoint } from './checkpoint-address.ts';
import { assertOutputWritable, resolvePath, writeOutputFile } from './files.ts';

/** What an export wrote and where it came from. */
export interface ExportOutputs {
  /** The resolved source checkpoint. */
  readonly source: Pick<ResolvedCheckpoint, 'checkpoint' | 'job' | 'manifest'>;
  /** `safetensors`, `gguf`, `hf`, `andrea-bin`, `andrea-config`, and the element type written. */
  readonly format: string;
  readonly dtype: string | null;
  readonly key: SigningKey | null;
  readonly force: boolean;
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
 * Refuses an export whose outputs or manifests already exist (without `--force`), before anything is written.
 *
 * @param ctx - the command context.
 * @param targets - the outputs whose manifests the export will write.
 * @param force - `--force`.
 * @throws CliError `CLI_WRITE_FAILED` naming the first that exists.
 */
export async function refuseExistingOutputs(ctx: CliContext, targets: readonly ManifestTarget[], force: boolean): Promise<void> {
  for (const target of targets) {
    // The output first (it is named when it exists), then its manifest.
    if ('file' in target) assertOutputWritable(ctx, target.file, force);
    assertOutputWritable(ctx, await manifestPath(target), force);
  }
}

/**
 * Writes the manifest of exported files (atomically, like the outputs).
 *
 * @param ctx - the command context.
 * @param target - the output file (its manifest covers it alone) or directory (its manifest lists `files`).
 * @param files - the files it covers: paths relative to the manifest's directory, and their bytes.
 * @param outputs - the source, format, key and `--force`.
 * @returns the manifest file as typed.
 */
export async function writeExportManifest(ctx: CliContext, target: ManifestTarget, files: readonly { readonly path: string; readonly bytes: Uint8Array }[], outputs: ExportOutputs): Promise<string> {
  const t = await import('@llmcp/trainer');
  const manifest = await manifestPath(target);
  const { checkpoint, job, manifest: sourceManifest } = outputs.source;
  const written = t.encodeExportManifest({
    name: 'dir' in target ? path.basename(resolvePath(ctx, target.dir)) : path.basename(target.file),
    files,
    ignorePaths: [path.basename(manifest)],
    source: { step: job?.step ?? Number(checkpoint.selectedStep), stateChecksum: checkpoint.layout.checksumLabel, job, manifest: sourceManifest },
    export: { format: outputs.format, dtype: outputs.dtype },
    tool: { name: '@llmcp/cli', version: CLI_VERSION },
    key: outputs.key,
  });
  await writeOutputFile(ctx, manifest, written.bytes, true);
  return manifest;
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
