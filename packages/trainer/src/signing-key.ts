/**
 * Signing keys for provenance manifests (Node): loading a private key from
 * PEM, making a key pair (`llmcp keygen`), signing a manifest's payload, and
 * reading a trusted public key. node:crypto throughout; a key is never written
 * into a run directory or a config — it is read from the file the user names,
 * kept in memory, and handed to the save thread as a `KeyObject`.
 *
 * Any PEM private key of the supported kinds works, whoever made it:
 * `llmcp keygen`, `openssl genpkey -algorithm ed25519`,
 * `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`, or
 * `openssl ecparam -name prime256v1 -genkey -noout` (SEC 1). Encrypted keys
 * are refused (decrypt with `openssl pkey -in key.pem -out plain.pem`).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { TrainerError } from './errors.ts';
import { DSSE_PAYLOAD_TYPE, importTrustedKey, pae, publicKeyHint, type KeyAlgorithm, type TrustedKey } from './provenance.ts';

/** A private key ready to sign manifests. */
export interface SigningKey {
  readonly algorithm: KeyAlgorithm;
  /** The private key (structured-cloned to the save thread: never serialised to text). */
  readonly privateKey: KeyObject;
  /** SHA-256 hex of the public key's canonical PEM: the bundle's `publicKey.hint`. */
  readonly hint: string;
}

/** Where a key file came from, for messages. */
function keyError(where: string, what: string, cause?: unknown): TrainerError {
  return new TrainerError('TRAINER_KEY_INVALID', `${where}: ${what}`, { path: where, ...(cause === undefined ? {} : { cause }) });
}

function algorithmOf(key: KeyObject, where: string): KeyAlgorithm {
  if (key.asymmetricKeyType === 'ed25519') return 'ed25519';
  if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ecdsa-p256';
    if (curve === 'secp384r1') return 'ecdsa-p384';
    throw keyError(where, `an EC key on curve ${curve ?? '?'}; llmcp signs with P-256 (prime256v1), P-384 (secp384r1) or Ed25519`);
  }
  throw keyError(where, `a ${key.asymmetricKeyType ?? 'symmetric'} key; llmcp signs with ECDSA P-256, ECDSA P-384 or Ed25519`);
}

/**
 * Reads a signing key from PEM text.
 *
 * @param pem - the private key (PKCS #8 `PRIVATE KEY`, or SEC 1 `EC PRIVATE KEY`).
 * @param where - its name for messages.
 * @returns the key.
 * @throws TrainerError `TRAINER_KEY_INVALID` for an encrypted, public, unreadable or unsupported key.
 */
export function signingKeyFromPem(pem: string, where: string): SigningKey {
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(pem)) {
    throw keyError(where, 'an encrypted private key; decrypt a copy for signing (openssl pkey -in key.pem -out plain.pem) and keep it out of the run directory');
  }
  if (/-----BEGIN PUBLIC KEY-----/.test(pem) && !/PRIVATE KEY-----/.test(pem)) throw keyError(where, 'a public key; --sign-key takes the private key (--trust-key the public one)');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: 'pem' });
  } catch (cause) {
    throw keyError(where, `not a PEM private key (${(cause as Error).message})`, cause);
  }
  const algorithm = algorithmOf(privateKey, where);
  const spki = new Uint8Array(createPublicKey(privateKey).export({ type: 'spki', format: 'der' }));
  return { algorithm, privateKey, hint: publicKeyHint(spki) };
}

/**
 * Reads a signing key from a PEM file.
 *
 * @param file - the private key file.
 * @returns the key.
 * @throws TrainerError `TRAINER_KEY_INVALID` (also for a file that cannot be read).
 */
export function loadSigningKey(file: string): SigningKey {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (cause) {
    throw keyError(file, `cannot read the signing key (${(cause as Error).message})`, cause);
  }
  return signingKeyFromPem(pem, file);
}

/**
 * Reads a trusted public key from a PEM file (`-----BEGIN PUBLIC KEY-----`).
 *
 * @param file - the public key file.
 * @returns the key.
 * @throws TrainerError `TRAINER_KEY_INVALID`.
 */
export async function loadTrustedKey(file: string): Promise<TrustedKey> {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (cause) {
    throw keyError(file, `cannot read the trusted key (${(cause as Error).message})`, cause);
  }
  if (/PRIVATE KEY-----/.test(pem)) throw keyError(file, 'a private key; --trust-key takes the public key (the .pub.pem beside it, or: openssl pkey -in key.pem -pubout)');
  return importTrustedKey(pem, file);
}

/**
 * Signs a manifest payload: DSSE's PAE of it, with SHA-256 (P-256) or
 * SHA-384 (P-384) ECDSA in DER, or Ed25519.
 *
 * @param key - the signing key.
 * @param payload - the statement bytes.
 * @returns the signature.
 */
export function signPayload(key: SigningKey, payload: Uint8Array): Uint8Array {
  const data = pae(DSSE_PAYLOAD_TYPE, payload);
  const hash = key.algorithm === 'ed25519' ? null : key.algorithm === 'ecdsa-p256' ? 'sha256' : 'sha384';
  return new Uint8Array(sign(hash, data, key.privateKey));
}

/** A new key pair, as PEM texts. */
export interface GeneratedKeyPair {
  readonly algorithm: KeyAlgorithm;
  /** PKCS #8 PEM. */
  readonly privatePem: string;
  /** SubjectPublicKeyInfo PEM. */
  readonly publicPem: string;
  readonly hint: string;
}

/**
 * Makes a key pair for signing manifests.
 *
 * @param algorithm - `ecdsa-p256` (the default of `llmcp keygen`), `ecdsa-p384` or `ed25519`.
 * @returns the private and public key as PEM, and the key's hint.
 */
export function generateSigningKeyPair(algorithm: KeyAlgorithm): GeneratedKeyPair {
  const pair = algorithm === 'ed25519' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: algorithm === 'ecdsa-p256' ? 'P-256' : 'P-384' });
  const privatePem = pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const spki = new Uint8Array(pair.publicKey.export({ type: 'spki', format: 'der' }));
  return { algorithm, privatePem, publicPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(), hint: publicKeyHint(spki) };
}
