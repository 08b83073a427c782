import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeBundleJson, encodeStatement, importTrustedKey, LINEAGE_FORMAT, parseManifest, verifyManifestSignature } from './provenance.ts';
import { generateSigningKeyPair, loadSigningKey, loadTrustedKey, signingKeyFromPem, signPayload } from './signing-key.ts';

const OPENSSL = spawnSync('openssl', ['version']).status === 0;

const dir = mkdtempSync(path.join(tmpdir(), 'llmcp-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Signs a one-shard statement with `pem` and verifies it with the public key `publicPem`. */
async function signsAndVerifies(pem: string, publicPem: string): Promise<string> {
  const key = signingKeyFromPem(pem, 'key');
  const { payload } = encodeStatement({
    name: 'n',
    resources: [{ path: 'f', start: 0, end: 1, digest: 'a'.repeat(64) }],
    ignorePaths: [],
    lineage: { format: LINEAGE_FORMAT, kind: 'export', run: null, step: 0, via: 'export', parent: { run: null, step: 0, job: null, manifest: null, state: 'fnv1a64:0000000000000000' }, config: null, inputs: null, implementation: null, engine: null, tool: { name: 't', version: '0' } },
  });
  const manifest = parseManifest(encodeBundleJson({ payload, signature: { sig: signPayload(key, payload) }, hint: key.hint }), 'm');
  return verifyManifestSignature(manifest, await importTrustedKey(publicPem, 'pub'));
}

describe('signingKeyFromPem', () => {
  it('signs with the keys generateSigningKeyPair makes, verifiably with their public keys', async () => {
    for (const algorithm of ['ecdsa-p256', 'ecdsa-p384', 'ed25519'] as const) {
      const pair = generateSigningKeyPair(algorithm);
      expect(signingKeyFromPem(pair.privatePem, 'k')).toMatchObject({ algorithm, hint: pair.hint });
      expect(await signsAndVerifies(pair.privatePem, pair.publicPem)).toBe('verified');
    }
  });

  it.skipIf(!OPENSSL)(`signs with keys made by openssl (PKCS #8 and SEC 1 EC keys, Ed25519), verifiably with openssl's public keys${OPENSSL ? '' : ' (skipped: openssl is not installed)'}`, async () => {
    const made: [string, string[]][] = [
      ['ed25519.pem', ['genpkey', '-algorithm', 'ed25519']],
      ['p256.pem', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']],
      ['sec1.pem', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout']],
      ['p384.pem', ['ecparam', '-name', 'secp384r1', '-genkey', '-noout']],
    ];
    for (const [name, args] of made) {
      const file = path.join(dir, name);
      execFileSync('openssl', [...args, '-out', file], { stdio: 'ignore' });
      const publicPem = execFileSync('openssl', ['pkey', '-in', file, '-pubout'], { encoding: 'utf8' });
      expect(await signsAndVerifies(readFileSync(file, 'utf8'), publicPem)).toBe('verified');
      expect(loadSigningKey(file).hint).toBe((await importTrustedKey(publicPem, 'pub')).hint);
    }
  });

  it('refuses encrypted, public, RSA, P-521 and unreadable keys with TRAINER_KEY_INVALID, saying what to do', async () => {
    const { generateKeyPairSync } = await import('node:crypto');
    const encrypted = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'x' }).toString();
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const p521 = generateKeyPairSync('ec', { namedCurve: 'P-521' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const pair = generateSigningKeyPair('ed25519');
    const cases: [string, RegExp][] = [
      [encrypted, /encrypted private key; decrypt/],
      [pair.publicPem, /a public key; --sign-key takes the private key/],
      [rsa, /a rsa key; llmcp signs with ECDSA P-256, ECDSA P-384 or Ed25519/],
      [p521, /curve secp521r1/],
      ['garbage', /not a PEM private key/],
    ];
    for (const [pem, message] of cases) {
      expect(() => signingKeyFromPem(pem, 'key.pem')).toThrow(expect.objectContaining({ code: 'TRAINER_KEY_INVALID', message: expect.stringMatching(message) }));
    }
    expect(() => loadSigningKey(path.join(dir, 'missing.pem'))).toThrow(expect.objectContaining({ code: 'TRAINER_KEY_INVALID' }));
    const priv = path.join(dir, 'priv.pem');
    writeFileSync(priv, pair.privatePem);
    await expect(loadTrustedKey(priv)).rejects.toMatchObject({ code: 'TRAINER_KEY_INVALID', message: expect.stringMatching(/--trust-key takes the public key/) });
  });
});
