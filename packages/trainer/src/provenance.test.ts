import { createPublicKey, generateKeyPairSync, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isTrainerError } from './errors.ts';
import {
  base64Decode,
  base64Encode,
  DSSE_PAYLOAD_TYPE,
  ecdsaDerToP1363,
  encodeBundleJson,
  encodeStatement,
  importTrustedKey,
  LINEAGE_FORMAT,
  pae,
  parseManifest,
  publicKeyHint,
  rootDigest,
  shardRanges,
  SHARD_SIZE,
  verifyManifestSignature,
  type Lineage,
  type ParsedManifest,
} from './provenance.ts';
import { generateSigningKeyPair, signingKeyFromPem, signPayload } from './signing-key.ts';
import { sha256Hex } from './internal/canonical-json.ts';

const LINEAGE: Lineage = {
  format: LINEAGE_FORMAT,
  kind: 'checkpoint',
  run: 'run-1',
  step: 8,
  via: 'train',
  parent: { run: 'run-1', step: 4, job: `sha256:${'1'.repeat(64)}`, manifest: `sha256:${'2'.repeat(64)}`, state: 'fnv1a64:0123456789abcdef' },
  config: `sha256:${'3'.repeat(64)}`,
  inputs: { corpus: `sha256:${'4'.repeat(64)}`, split: `sha256:${'5'.repeat(64)}`, tokenizer: 'sha256:tok' },
  implementation: 'llmcp-trainer/1+m+LLMCP35/1',
  engine: { kind: 'llmcp', worldSize: 1 },
  tool: { name: '@llmcp/trainer', version: '0.0.0' },
};

const hexOf = (s: string): string => sha256Hex(new TextEncoder().encode(s));

/** A manifest of two files (one of three shards, listed out of order on purpose), signed or not. */
function manifestBytes(key: ReturnType<typeof signingKeyFromPem> | null): Uint8Array {
  const resources = [
    { path: 'state.llmcp', start: 2 * SHARD_SIZE, end: 2 * SHARD_SIZE + 10, digest: hexOf('c') },
    { path: 'state.llmcp', start: 0, end: SHARD_SIZE, digest: hexOf('a') },
    { path: 'job.json', start: 0, end: 100, digest: hexOf('j') },
    { path: 'state.llmcp', start: SHARD_SIZE, end: 2 * SHARD_SIZE, digest: hexOf('b') },
  ];
  const { payload } = encodeStatement({ name: 'run-1:step_000008', resources, ignorePaths: ['model.sig'], lineage: LINEAGE });
  return encodeBundleJson({ payload, signature: key === null ? null : { sig: signPayload(key, payload) }, hint: key?.hint ?? null });
}

function invalidCode(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isTrainerError(e)) return e.code;
    throw e;
  }
  return 'no error';
}

describe('pae', () => {
  it('is the DSSE v1 pre-authentication encoding (the protocol document\'s example)', () => {
    expect(new TextDecoder().decode(pae('http://example.com/HelloWorld', new TextEncoder().encode('hello world')))).toBe('DSSEv1 29 http://example.com/HelloWorld 11 hello world');
    // Lengths count bytes, not characters.
    expect(new TextDecoder().decode(pae('t', new TextEncoder().encode('é')))).toBe('DSSEv1 1 t 2 é');
  });
});

describe('base64Decode', () => {
  it('decodes what base64Encode writes, and refuses every other spelling of the same bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const text = base64Encode(bytes);
        expect(base64Decode(text)).toEqual(bytes);
        expect(text).toBe(Buffer.from(bytes).toString('base64'));
        // Unused low bits of the last character before padding set: atob would accept it, the decoder must not.
        if (text.endsWith('=')) {
          const at = text.indexOf('=') - 1;
          const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
          const sibling = alphabet[alphabet.indexOf(text[at] as string) ^ 1] as string;
          expect(base64Decode(`${text.slice(0, at)}${sibling}${text.slice(at + 1)}`)).toBeNull();
        }
        // Without its padding, only a text that needed none still decodes.
        if (bytes.length % 3 === 0) expect(base64Decode(text.replace(/=+$/, ''))).toEqual(bytes);
        else expect(base64Decode(text.replace(/=+$/, ''))).toBeNull();
      }),
    );
  });
});

describe('ecdsaDerToP1363', () => {
  it.each([
    ['P-256', 32, 'sha256'],
    ['P-384', 48, 'sha384'],
  ] as const)('turns %s DER signatures into the r||s form that verifies, for any message', (curve, size, hash) => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: curve });
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (message) => {
        const der = nodeSign(hash, message, privateKey);
        const p1363 = ecdsaDerToP1363(der, size);
        expect(p1363?.length).toBe(2 * size);
        expect(nodeVerify(hash, message, { key: publicKey, dsaEncoding: 'ieee-p1363' }, p1363 as Uint8Array)).toBe(true);
      }),
      { numRuns: 30 },
    );
  });

  it('answers null for anything that is not one DER SEQUENCE of two minimal positive INTEGERs, never throws', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
      const r = ecdsaDerToP1363(bytes, 32);
      if (r !== null) expect(r.length).toBe(64);
    }));
    expect(ecdsaDerToP1363(Uint8Array.of(0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00), 32)).toBeNull(); // trailing byte
    expect(ecdsaDerToP1363(Uint8Array.of(0x30, 0x06, 0x02, 0x01, 0x81, 0x02, 0x01, 0x01), 32)).toBeNull(); // negative r
    expect(ecdsaDerToP1363(Uint8Array.of(0x30, 0x07, 0x02, 0x02, 0x00, 0x01, 0x02, 0x01, 0x01), 32)).toBeNull(); // non-minimal r
    expect(ecdsaDerToP1363(Uint8Array.of(0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01), 32)).toEqual(Uint8Array.from([...new Array(31).fill(0), 1, ...new Array(31).fill(0), 1]));
  });
});

describe('shardRanges', () => {
  it('cuts a file into shards of the given size from 0, the last one short, none for an empty file', () => {
    expect(shardRanges(0, 4)).toEqual([]);
    expect(shardRanges(9, 4)).toEqual([
      [0, 4],
      [4, 8],
      [8, 9],
    ]);
    expect(shardRanges(8, 4)).toEqual([
      [0, 4],
      [4, 8],
    ]);
  });
});

describe('encodeStatement and parseManifest', () => {
  const key = signingKeyFromPem(generateSigningKeyPair('ecdsa-p256').privatePem, 'test key');

  it('lists the resources sorted by path then offset (numerically), with the subject digest over them', () => {
    const m = parseManifest(manifestBytes(null), 'm');
    expect(m.resources.map((r) => r.name)).toEqual(['job.json:0:100', `state.llmcp:0:${SHARD_SIZE}`, `state.llmcp:${SHARD_SIZE}:${2 * SHARD_SIZE}`, `state.llmcp:${2 * SHARD_SIZE}:${2 * SHARD_SIZE + 10}`]);
    expect(m.resources.every((r) => r.algorithm === `sha256-sharded-${SHARD_SIZE}`)).toBe(true);
    expect(m.digest).toBe(`sha256:${rootDigest(m.resources)}`);
    expect(m.serialization).toEqual({ method: 'shards', shardSize: SHARD_SIZE, ignorePaths: ['model.sig'] });
    expect(m.lineage).toEqual(LINEAGE);
    expect(m.hint).toBeNull();
    expect(m.signatures).toEqual([]);
  });

  it('writes the model_signing layout: a v0.3 bundle, a DSSE in-toto envelope, the v1.0 predicate', () => {
    const bundle = JSON.parse(new TextDecoder().decode(manifestBytes(key))) as Record<string, unknown>;
    expect(bundle).toMatchObject({
      mediaType: 'application/vnd.dev.sigstore.bundle.v0.3+json',
      verificationMaterial: { publicKey: { hint: key.hint }, tlogEntries: [] },
      dsseEnvelope: { payloadType: DSSE_PAYLOAD_TYPE, signatures: [{ keyid: '', sig: expect.any(String) }] },
    });
    const statement = JSON.parse(Buffer.from((bundle.dsseEnvelope as { payload: string }).payload, 'base64').toString('utf8')) as Record<string, unknown>;
    expect(statement).toMatchObject({ _type: 'https://in-toto.io/Statement/v1', predicateType: 'https://model_signing/signature/v1.0', subject: [{ name: 'run-1:step_000008' }] });
    expect((statement.predicate as Record<string, unknown>).serialization).toEqual({ method: 'shards', hash_type: 'sha256', shard_size: SHARD_SIZE, allow_symlinks: false, ignore_paths: ['model.sig'] });
  });

  it('verifies its signature with the signer\'s key and tells another key, no signature and a bad signature apart', async () => {
    const pair = generateSigningKeyPair('ed25519');
    const ed = signingKeyFromPem(pair.privatePem, 'ed');
    const trusted = await importTrustedKey(pair.publicPem, 'pub');
    const signed = parseManifest(manifestBytes(ed), 'm');
    expect(await verifyManifestSignature(signed, trusted)).toBe('verified');
    expect(await verifyManifestSignature(parseManifest(manifestBytes(null), 'm'), trusted)).toBe('unsigned');
    expect(await verifyManifestSignature(parseManifest(manifestBytes(key), 'm'), trusted)).toBe('other-key');
    const forged: ParsedManifest = { ...signed, payload: new TextEncoder().encode('{}') };
    expect(await verifyManifestSignature(forged, trusted)).toBe('invalid');
  });

  it('a change of any one byte of a signed manifest is refused by the reader or by the signature', async () => {
    const pair = generateSigningKeyPair('ecdsa-p256');
    const signer = signingKeyFromPem(pair.privatePem, 'k');
    const trusted = await importTrustedKey(pair.publicPem, 'pub');
    const bytes = manifestBytes(signer);
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }), async (at, x) => {
        const changed = bytes.slice();
        changed[at] = (changed[at] as number) ^ x;
        let parsed: ParsedManifest;
        try {
          parsed = parseManifest(changed, 'm');
        } catch (e) {
          expect(isTrainerError(e) && e.code === 'TRAINER_MANIFEST_INVALID').toBe(true);
          return;
        }
        expect(await verifyManifestSignature(parsed, trusted)).not.toBe('verified');
      }),
      { numRuns: 300 },
    );
  });

  it('refuses hostile manifests with a typed error: not JSON, other layouts, unsorted or overlapping shards, paths leaving the directory', () => {
    const good = JSON.parse(new TextDecoder().decode(manifestBytes(null))) as { dsseEnvelope: { payload: string } };
    const withStatement = (edit: (s: Record<string, unknown>) => void): Uint8Array => {
      const statement = JSON.parse(Buffer.from(good.dsseEnvelope.payload, 'base64').toString('utf8')) as Record<string, unknown>;
      edit(statement);
      return new TextEncoder().encode(JSON.stringify({ ...good, dsseEnvelope: { ...good.dsseEnvelope, payload: Buffer.from(JSON.stringify(statement)).toString('base64') } }));
    };
    const resources = (s: Record<string, unknown>): { name: string; digest: string }[] => (s.predicate as { resources: { name: string; digest: string }[] }).resources;
    const resubject = (s: Record<string, unknown>): void => {
      (s.subject as { digest: { sha256: string } }[])[0]!.digest.sha256 = rootDigest(resources(s));
    };
    for (const bytes of [
      new TextEncoder().encode('not json'),
      new TextEncoder().encode('{}'),
      new Uint8Array([0xff, 0xfe]),
      withStatement((s) => (s.predicateType = 'https://example.com/other')),
      withStatement((s) => resources(s).reverse()),
      withStatement((s) => {
        resources(s)[0]!.name = '../job.json:0:100';
        resubject(s);
      }),
      withStatement((s) => {
        resources(s)[0]!.name = '/etc/passwd:0:100';
        resubject(s);
      }),
      withStatement((s) => {
        resources(s).splice(2, 1);
        resubject(s);
      }),
      withStatement((s) => {
        resources(s)[0]!.digest = '0'.repeat(64);
      }),
      withStatement((s) => ((s.predicate as { llmcp: { step: number } }).llmcp.step = -1)),
      withStatement((s) => ((s.predicate as { llmcp: { via: string } }).llmcp.via = 'init')),
    ]) {
      expect(invalidCode(() => parseManifest(bytes, 'm'))).toBe('TRAINER_MANIFEST_INVALID');
    }
    // A model_signing manifest (no llmcp lineage) is read as it is written, any key order and spacing.
    const foreign = withStatement((s) => delete (s.predicate as Record<string, unknown>).llmcp);
    expect(parseManifest(foreign, 'm').lineage).toBeNull();
  });

  it('refuses random bytes and random JSON with a typed error, never anything else', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.json().map((j) => new TextEncoder().encode(j))), (bytes) => {
        expect(invalidCode(() => parseManifest(bytes, 'm'))).toBe('TRAINER_MANIFEST_INVALID');
      }),
    );
  });
});

describe('importTrustedKey and publicKeyHint', () => {
  it('reads P-256, P-384 and Ed25519 public keys, with the hint model_signing computes (SHA-256 of the SPKI PEM)', async () => {
    for (const algorithm of ['ecdsa-p256', 'ecdsa-p384', 'ed25519'] as const) {
      const pair = generateSigningKeyPair(algorithm);
      const key = await importTrustedKey(pair.publicPem, 'pub');
      expect(key.algorithm).toBe(algorithm);
      expect(key.hint).toBe(sha256Hex(new TextEncoder().encode(createPublicKey(pair.publicPem).export({ type: 'spki', format: 'pem' }).toString())));
      expect(key.hint).toBe(pair.hint);
      const spki = new Uint8Array(createPublicKey(pair.publicPem).export({ type: 'spki', format: 'der' }));
      expect(publicKeyHint(spki)).toBe(pair.hint);
    }
  });

  it('refuses an RSA key, a private key and text without a key, with TRAINER_KEY_INVALID', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    for (const pem of [rsa, 'hello', '-----BEGIN PUBLIC KEY-----\n!!!\n-----END PUBLIC KEY-----\n']) {
      await expect(importTrustedKey(pem, 'k')).rejects.toMatchObject({ code: 'TRAINER_KEY_INVALID' });
    }
  });
});
