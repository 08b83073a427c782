/**
 * `llmcp verify <file|run-dir>`: exit 0 only if everything verifies. A file
 * is decoded with every LLMCP35 rule; a run directory has every checkpoint
 * slot verified (job digest and schema, state file, job/state pairing, the
 * files against the slot's provenance manifest), its lineage chain and
 * lineage store checked, its loss history checked for continuity and its
 * run.json read. An export (a file with `F.sig` beside it, a directory with
 * `model.sig`, or the manifest itself) is checked against its manifest.
 * `--trust-key` checks every manifest's signature against that key.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { decodeCheckpoint, isFormatError, type DecodedCheckpoint } from '@llmcp/format';
import { formatErrorData, type InspectionError } from '@llmcp/format/inspect';
import type { ManifestFileVerification, RunVerification, SignatureStatus, TrustedKey } from '@llmcp/trainer';
import type { SetExit } from '../exit-codes.ts';
import { colorsFor, type CliContext } from '../context.ts';
import { CliError } from '../errors.ts';
import { EXIT_CODES } from '../exit-codes.ts';
import { ERROR_SCHEMA_ID } from '../error-report.ts';
import { detectFileKind, FILE_KIND_PREFIX_BYTES, foreignFileJson, describeForeignFile, type ForeignFileJson } from '@llmcp/format/foreign';
import { parseCheckpointAddress, runSlots } from '../internal/checkpoint-address.ts';
import { readInputFile, requirePath, resolvePath } from '../internal/files.ts';
import { foreignErrorJson, foreignErrorText, foreignKindName, readFilePrefix, readForeignInput, type ForeignErrorJson, type ForeignInput } from '../internal/foreign.ts';
import { alignTable, plural } from '../internal/text.ts';
import { loadTrainer } from '../trainer.ts';
import { readTrustedKey } from '../internal/keys.ts';
import { manifestFileLines, provenanceLines } from '../provenance-report.ts';

/** Identifier of the JSON document (`schema` member). */
export const VERIFY_SCHEMA_ID = 'llmcp-verify/1';

/** `llmcp verify --json` for a checkpoint file. */
export interface VerifyFileJson {
  readonly schema: typeof VERIFY_SCHEMA_ID;
  readonly kind: 'checkpoint';
  readonly path: string;
  readonly ok: boolean;
  readonly checksum: string | null;
  readonly step: string | null;
  readonly error: InspectionError | null;
  /** Its provenance manifest's verdict, when it has one beside it (`F.sig`). */
  readonly manifest?: ManifestJson;
}

/** `llmcp verify --json` for a safetensors or GGUF file: its header and tensor table checked (it is not an LLMCP35 checkpoint). */
export interface VerifyForeignJson {
  readonly schema: typeof VERIFY_SCHEMA_ID;
  readonly kind: 'safetensors' | 'gguf';
  readonly path: string;
  readonly ok: boolean;
  readonly file: ForeignFileJson | null;
  readonly error: ForeignErrorJson | null;
  /** Its provenance manifest's verdict, when it has one beside it (`F.sig`). */
  readonly manifest?: ManifestJson;
}

/** `llmcp verify --json` for a run directory. */
export interface VerifyRunJson {
  readonly schema: typeof VERIFY_SCHEMA_ID;
  readonly kind: 'run';
  readonly path: string;
  readonly ok: boolean;
  readonly run: RunVerification;
}

/** `llmcp verify --json` for an export checked against its provenance manifest (`F.sig`, `model.sig`, or the manifest itself). */
export interface VerifyManifestJson {
  readonly schema: typeof VERIFY_SCHEMA_ID;
  readonly kind: 'manifest';
  readonly path: string;
  readonly ok: boolean;
  readonly manifest: ManifestJson;
}

/** A manifest file's verdict, as the JSON documents carry it. */
export interface ManifestJson {
  readonly file: string;
  readonly ok: boolean;
  /** The subject digest (`sha256:…`), or null when it cannot be read. */
  readonly digest: string | null;
  /** With --trust-key: verified, unsigned, other-key or invalid; without: signed or unsigned (not checked). */
  readonly signature: ManifestFileVerification['signature'];
  readonly signer: string | null;
  readonly files: readonly string[];
  readonly lineage: unknown;
  readonly problems: ManifestFileVerification['problems'];
}

/** Options of `llmcp verify`. */
export interface VerifyOptions {
  readonly json?: boolean;
  /** `--trust-key`: the public key every manifest must be signed by. */
  readonly trustKey?: string;
}

/** How a verification runs: `--json`, and the trusted key read from `--trust-key` (null: none). */
interface VerifyHow {
  readonly json?: boolean;
  readonly trusted: TrustedKey | null;
}

function manifestJson(v: ManifestFileVerification): ManifestJson {
  return { file: v.file, ok: v.ok, digest: v.manifest?.digest ?? null, signature: v.signature, signer: v.manifest?.hint ?? null, files: v.files, lineage: v.manifest?.lineage ?? null, problems: v.problems };
}

/** Checks an export against its manifest (`F.sig` beside `F`, `model.sig` in a directory, or the manifest file itself): exit 0 when it holds. */
async function verifyManifestTarget(ctx: CliContext, at: { readonly target: string; readonly manifest: string }, options: VerifyHow): Promise<number> {
  const { verifyManifestFile } = await import('@llmcp/trainer');
  const v = await verifyManifestFile(resolvePath(ctx, at.manifest), { trustKey: options.trusted });
  const shown = { ...v, file: at.manifest };
  if (options.json === true) {
    const doc: VerifyManifestJson = { schema: VERIFY_SCHEMA_ID, kind: 'manifest', path: at.target, ok: v.ok, manifest: manifestJson(shown) };
    ctx.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  } else ctx.stdout.write(`${manifestFileLines(shown, colorsFor(ctx.stdout, ctx.env)).join('\n')}\n`);
  return v.ok ? EXIT_CODES.OK : EXIT_CODES.FAILED;
}

function describe(c: DecodedCheckpoint): string {
  const values = c.parameters.reduce((n, p) => n + p.data.length, 0);
  const tok = c.tokenizer.kind === 'literal' ? `literal tokenizer (${c.tokenizer.pieces.length} pieces)` : `BPE tokenizer (${c.tokenizer.pairs.length} merges)`;
  return `step ${c.selectedStep}, ${plural(c.parameters.length, 'parameter tensor')} (${plural(values, 'value')}), ${tok}, ${plural(c.optimizer.moments.length, 'moment pair')}`;
}

function verifyForeign(ctx: CliContext, input: { readonly file: string; readonly foreign: ForeignInput; readonly manifest: ManifestFileVerification | null }, options: VerifyHow): number {
  const { file, foreign, manifest } = input;
  const { header, error } = foreign;
  const ok = header !== null && manifest?.ok !== false;
  if (options.json === true) {
    const doc: VerifyForeignJson = {
      schema: VERIFY_SCHEMA_ID,
      kind: foreign.kind,
      path: file,
      ok,
      file: header === null ? null : foreignFileJson(header),
      error: foreignErrorJson(error),
      ...(manifest === null ? {} : { manifest: manifestJson(manifest) }),
    };
    ctx.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  } else {
    const c = colorsFor(ctx.stdout, ctx.env);
    if (header !== null) ctx.stdout.write(`${c.green('ok')}  ${file}  ${describeForeignFile(header)}: header and tensor table verify (not an LLMCP35 checkpoint)\n`);
    else if (error !== null) {
      ctx.stdout.write(`${c.red('FAILED')}  ${file}  ${foreignKindName(foreign.kind)} whose header does not parse: ${foreignErrorText(error)}\n`);
    }
    if (manifest !== null) ctx.stdout.write(`${manifestFileLines(manifest, c).join('\n')}\n`);
  }
  return ok ? EXIT_CODES.OK : EXIT_CODES.FAILED;
}

/** Checks a file's format (LLMCP35, safetensors, GGUF) and, when it has one beside it, its provenance manifest. */
function verifyFile(ctx: CliContext, input: { readonly file: string; readonly manifest: ManifestFileVerification | null }, options: VerifyHow): number {
  const { file, manifest } = input;
  const foreign = readForeignInput(ctx, file, 'checkpoint');
  if (foreign !== null) return verifyForeign(ctx, { file, foreign, manifest }, options);
  const bytes = readInputFile(ctx, file, 'checkpoint');
  let checkpoint: DecodedCheckpoint | null = null;
  let error: InspectionError | null = null;
  try {
    checkpoint = decodeCheckpoint(bytes);
  } catch (e) {
    if (!isFormatError(e)) throw e;
    error = formatErrorData(e);
  }
  const c = colorsFor(ctx.stdout, ctx.env);
  const ok = checkpoint !== null && manifest?.ok !== false;
  if (options.json === true) {
    const doc: VerifyFileJson = {
      schema: VERIFY_SCHEMA_ID,
      kind: 'checkpoint',
      path: file,
      ok,
      checksum: checkpoint?.layout.checksumLabel ?? null,
      step: checkpoint === null ? null : checkpoint.selectedStep.toString(),
      error,
      ...(manifest === null ? {} : { manifest: manifestJson(manifest) }),
    };
    ctx.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  } else if (checkpoint !== null) {
    ctx.stdout.write(`${c.green('ok')}  ${file}  ${checkpoint.layout.checksumLabel}  ${describe(checkpoint)}\n`);
  } else if (error !== null) {
    const at = error.offset === undefined ? '' : ` at offset ${error.offset}`;
    ctx.stdout.write(`${c.red('FAILED')}  ${file}  ${error.code}${at}: ${error.message}\n`);
    ctx.stdout.write(c.dim(`hint: run 'llmcp inspect ${file}' to see how far it parses\n`));
  }
  if (manifest !== null && options.json !== true) ctx.stdout.write(`${manifestFileLines(manifest, c).join('\n')}\n`);
  return ok ? EXIT_CODES.OK : EXIT_CODES.FAILED;
}

/** `dir` is the run directory as given, `absolute` the path it resolves to. */
async function verifyRunDir(ctx: CliContext, runDir: { readonly dir: string; readonly absolute: string }, options: VerifyHow): Promise<number> {
  const { dir, absolute } = runDir;
  const trustKey = options.trusted;
  const { verifyRun, isRunDirectory, MANIFEST_FILE } = await loadTrainer();
  if (!isRunDirectory(absolute)) {
    // An exported directory (an hf export) is checked against its manifest.
    if (existsSync(path.join(absolute, MANIFEST_FILE))) return verifyManifestTarget(ctx, { target: dir, manifest: path.join(dir, MANIFEST_FILE) }, options);
    throw new CliError('CLI_WRONG_FILE_KIND', `${dir} is a directory but not a run directory (no run.json, run.lock or checkpoints/)`, {
      path: absolute,
      hint: existsSync(path.join(absolute, 'state.llmcp')) ? `verify the checkpoint file: llmcp verify ${path.join(dir, 'state.llmcp')}` : 'give a checkpoint file or a run directory',
    });
  }
  const run = await verifyRun(absolute, { trustKey });
  if (options.json === true) {
    const doc: VerifyRunJson = { schema: VERIFY_SCHEMA_ID, kind: 'run', path: dir, ok: run.ok, run };
    ctx.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    return runExit(run);
  }
  const c = colorsFor(ctx.stdout, ctx.env);
  const verdict = run.ok ? c.green('ok') : run.settled ? c.red('FAILED') : c.yellow('UNSETTLED');
  const out: string[] = [`run ${dir}: ${verdict}`];
  if (run.inUse !== null) {
    out.push(
      `  in use by process ${run.inUse.pid} on ${run.inUse.host} (training since ${run.inUse.since}): ${
        run.settled ? 'verified at a moment when no slot was changing' : 'its slots kept changing while they were read, so this verdict may be stale; verify again when it has stopped'
      }`,
    );
  }
  const rows = [[c.dim('slot'), c.dim('step'), c.dim('verdict')]];
  for (const s of run.slots) rows.push([s.slot, s.step === null ? '?' : String(s.step), s.ok ? c.green('ok') : c.red(`${s.code ?? 'FAILED'}: ${s.message ?? ''}`)]);
  out.push(...alignTable(rows, ['left', 'right', 'left']));
  out.push(`  resume would use: ${run.resumeSlot ?? c.red('nothing (no slot verifies)')}${run.resumeSlot !== null && run.resumeSlot !== 'latest' ? c.yellow(' (not latest)') : ''}`);
  // The best checkpoint by the rule `llmcp status` uses too (the resume slot's recorded best, and the slot holding it).
  if (run.best !== null) out.push(`  best: step ${run.best.step} in ${run.best.slot ?? c.yellow('no slot (a resume republishes best/)')}, validation loss ${run.best.validationLoss.toFixed(6)}`);
  const l = run.lossLog;
  out.push(
    `  loss.jsonl: ${l.ok ? c.green('ok') : c.red('FAILED')}, ${plural(l.records, 'step record')}${l.evaluations > 0 ? ` + ${plural(l.evaluations, 'evaluation record')}` : ''}${l.orphaned > 0 ? `, ${l.orphaned} beyond the checkpoint (a resume cuts them)` : ''}${l.prefixMatches === null ? '' : `, prefix hash ${l.prefixMatches ? 'matches' : c.red('differs')}`}${l.problem === null ? '' : ` — ${l.problem}`}`,
  );
  out.push(`  run.json: ${run.manifest.ok ? c.green('ok') : c.red('FAILED')}, ${plural(run.manifest.events, 'event')}${run.manifest.problem === null ? '' : ` — ${run.manifest.problem}`}`);
  out.push(...provenanceLines(run.provenance, c));
  if (!run.entries.ok) out.push(`  layout: ${c.red('FAILED')} — ${run.entries.problem ?? ''}`);
  ctx.stdout.write(`${out.join('\n')}\n`);
  return runExit(run);
}

/**
 * The exit code of a run's verdict, which the verdict printed says in words:
 * ok → 0; FAILED (a failure seen while nothing changed, or in a run nobody
 * trains) → 1; UNSETTLED (a run being trained whose slots changed during every
 * attempt, so no failure was established) → 4, not "verification failed".
 */
function runExit(run: RunVerification): number {
  return run.ok ? EXIT_CODES.OK : run.settled ? EXIT_CODES.FAILED : EXIT_CODES.RUNTIME;
}

/** `llmcp verify --json` for one slot of a run (`run:slot` or a slot directory). */
export interface VerifySlotJson {
  readonly schema: typeof VERIFY_SCHEMA_ID;
  readonly kind: 'slot';
  readonly path: string;
  readonly run: string;
  readonly slot: string;
  readonly ok: boolean;
  readonly step: number | null;
  /** The state file's LLMCP35 checksum label, when the slot verifies. */
  readonly checksum: string | null;
  /** The slot's provenance manifest (checked against its files; its signature against --trust-key), or null when it has none. */
  readonly manifest: { readonly digest: string; readonly signature: SignatureStatus | 'signed'; readonly signer: string | null; readonly lineage: unknown } | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** Verifies one slot in full (job digest and schema, state file, pairing, manifest; its signature with --trust-key): exit 0 when it verifies, 1 when not. */
async function verifySlotAddress(ctx: CliContext, at: { readonly target: string; readonly run: string; readonly runDir: string; readonly slot: string }, options: VerifyHow): Promise<number> {
  const { target, run, runDir, slot } = at;
  const trustKey = options.trusted;
  await runSlots(run, runDir, slot);
  const t = await import('@llmcp/trainer');
  let doc: VerifySlotJson;
  const base = { schema: VERIFY_SCHEMA_ID, kind: 'slot', path: target, run, slot } as const;
  try {
    const v = await t.verifySlot(runDir, slot);
    const m = v.manifest?.parsed ?? null;
    const signature: SignatureStatus | 'signed' | null = m === null ? null : trustKey === null ? (m.hint === null ? 'unsigned' : 'signed') : await t.verifyManifestSignature(m, trustKey);
    const manifest = m === null || signature === null ? null : { digest: m.digest, signature, signer: m.hint, lineage: m.lineage };
    const unsigned = trustKey !== null && signature !== 'verified';
    const error = unsigned
      ? { code: 'TRAINER_SIGNATURE_INVALID', message: m === null ? `${slot} has no provenance manifest to check against the trusted key` : `${slot}/${t.MANIFEST_FILE}: ${signature === 'other-key' ? `signed by another key (hint ${m.hint ?? '?'})` : signature === 'unsigned' ? 'not signed' : 'its signature does not verify'}, not by the trusted key (hint ${trustKey.hint})` }
      : null;
    doc = { ...base, ok: error === null, step: v.job.step, checksum: v.job.state.checksum, manifest, error };
  } catch (e) {
    if (!t.isTrainerError(e)) throw e;
    doc = { ...base, ok: false, step: null, checksum: null, manifest: null, error: { code: e.code, message: e.message } };
  }
  if (options.json === true) ctx.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
  else {
    const c = colorsFor(ctx.stdout, ctx.env);
    const m = doc.manifest;
    const manifestText =
      m === null ? ', no manifest' : `, manifest ${m.signature === 'verified' ? 'signed by the trusted key' : m.signature === 'signed' ? 'signed (not checked: give --trust-key)' : m.signature}`;
    ctx.stdout.write(
      doc.ok
        ? `${c.green('ok')}  ${run}:${slot}  ${doc.checksum ?? ''}  step ${doc.step ?? '?'}: job digest, state file and pairing verify${manifestText}\n`
        : `${c.red('FAILED')}  ${run}:${slot}  ${doc.error?.code ?? ''}: ${doc.error?.message ?? ''}\n`,
    );
  }
  return doc.ok ? EXIT_CODES.OK : EXIT_CODES.FAILED;
}

/**
 * Runs `llmcp verify`.
 *
 * @param ctx - the command context.
 * @param target - a checkpoint file, a run directory, a slot, an export or a manifest.
 * @param flags - `--json`, `--trust-key`.
 * @returns 0 when everything verifies, 1 otherwise.
 * @throws CliError for a missing path or a directory that is not a run.
 */
export async function runVerify(ctx: CliContext, target: string, flags: VerifyOptions): Promise<number> {
  const trustKey = await readTrustedKey(ctx, flags.trustKey);
  const options: VerifyHow = { ...(flags.json === undefined ? {} : { json: flags.json }), trusted: trustKey };
  // One slot of a run: run:slot (not itself a path), or a slot directory <run>/checkpoints/<slot>.
  const whole = resolvePath(ctx, target);
  const slotDir = existsSync(whole) && path.basename(path.dirname(whole)) === 'checkpoints' && (await loadTrainer()).isRunDirectory(path.dirname(path.dirname(whole)));
  if ((!existsSync(whole) && target.lastIndexOf(':') > 0) || slotDir) {
    const address = await parseCheckpointAddress(ctx, target, { what: 'checkpoint or run directory' });
    if (address.kind === 'run' && address.slot !== null) return verifySlotAddress(ctx, { target, run: address.run, runDir: address.runDir, slot: address.slot }, options);
  }
  const { absolute, isDirectory, size } = requirePath(ctx, target, 'file-or-directory', 'checkpoint or run directory');
  if (isDirectory) return verifyRunDir(ctx, { dir: target, absolute }, options);
  const { MANIFEST_SUFFIX } = await import('@llmcp/trainer');
  // A manifest itself, or an exported file with its manifest beside it.
  if (target.endsWith(MANIFEST_SUFFIX)) return verifyManifestTarget(ctx, { target, manifest: target }, options);
  const beside = `${target}${MANIFEST_SUFFIX}`;
  if (existsSync(resolvePath(ctx, beside))) {
    // A file that is neither LLMCP35, safetensors nor GGUF (an ANDREA .bin, an import config) is checked against its manifest alone.
    if (detectFileKind(readFilePrefix(absolute, FILE_KIND_PREFIX_BYTES), size) === 'unknown') return verifyManifestTarget(ctx, { target, manifest: beside }, options);
    const { verifyManifestFile } = await import('@llmcp/trainer');
    const manifest = { ...(await verifyManifestFile(resolvePath(ctx, beside), { trustKey })), file: beside };
    return verifyFile(ctx, { file: target, manifest }, options);
  }
  if (trustKey !== null) {
    throw new CliError('CLI_INVALID_INPUT', `${target} has no provenance manifest (${beside}) to check against --trust-key`, { path: absolute, hint: 'export it with llmcp export (which writes F.sig), or verify without --trust-key' });
  }
  return verifyFile(ctx, { file: target, manifest: null }, options);
}

/**
 * @param ctx - the command context.
 * @param setExit - receives the exit code.
 * @returns the `verify` command.
 */
export function verifyCommand(ctx: CliContext, setExit: SetExit): Command {
  return new Command('verify')
    .summary('check a checkpoint file or a whole run directory')
    .description(
      'Verify a checkpoint file (every LLMCP35 v1 rule) or a run directory (every checkpoint slot: job digest and schema, ' +
        'state file, job/state pairing; loss.jsonl continuity and prefix hash; run.json).\n\n' +
        'A run that is being trained (run.lock names a live process) is verified at a moment when none of its slots changes ' +
        '(each attempt re-reads only the slots that changed); a failure counts only when it was seen while nothing changed. ' +
        'The report says which process uses it, and UNSETTLED if its slots kept changing during every attempt.\n\n' +
        'A safetensors or GGUF file is recognised and its header and tensor table are checked (data ranges inside the file, ' +
        'no overlaps; safetensors: no holes): ok says what it is, never a bad LLMCP35 magic.\n\n' +
        'Exit status: 0 everything verifies, 1 something does not, 3 path missing or not a checkpoint/run, 4 UNSETTLED (no verdict: the slots of a run being trained changed during every attempt).',
    )
    .argument('<path>', 'checkpoint file (.llmcp), run directory, or one slot of a run: run:slot (runs/a:step_000600) or a slot directory')
    .option('--json', `print a JSON document (schema "${VERIFY_SCHEMA_ID}"; a failure: "${ERROR_SCHEMA_ID}" on stdout)`)
    .option('--trust-key <public.pem>', 'check that every provenance manifest is signed by this public key (llmcp keygen writes it as <name>.pub.pem); a manifest signed by another key, unsigned, or whose signature fails, fails')
    .addHelpText(
      'after',
      `
Examples:
  $ llmcp verify state.llmcp
  $ llmcp verify runs/a                    # every slot, loss log, manifest
  $ llmcp verify runs/a:best               # one slot: job digest, state file, pairing
  $ llmcp verify runs/a --json > report.json || echo "run does not verify"
`,
    )
    .action(async (target: string, options: VerifyOptions) => {
      setExit(await runVerify(ctx, target, options));
    });
}
