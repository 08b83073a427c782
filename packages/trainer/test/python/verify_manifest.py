"""An independent check of an llmcp provenance manifest, written without llmcp's code.

Reads a manifest as the OpenSSF model-signing format defines it (a Sigstore
bundle holding a DSSE envelope whose payload is an in-toto Statement v1 with the
https://model_signing/signature/v1.0 predicate), and checks, using only the
Python standard library and the `cryptography` package:

- the DSSE signature over the pre-authentication encoding (PAE) of the
  payload, with the given public key (ECDSA P-256/SHA-256, P-384/SHA-384, or
  Ed25519), and the bundle's public key hint (SHA-256 of the key's PEM);
- the subject digest: SHA-256 of the concatenated resource digests;
- every resource: the SHA-256 of each shard (or whole file) read from disk,
  and that each file's shards cover it exactly;
- for a directory manifest (model.sig), that no other file is in the directory.

Usage: verify_manifest.py <manifest> [--key <public.pem>]
Prints one JSON object and exits 0 when everything holds, 1 otherwise.
"""
import base64
import hashlib
import json
import os
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519


def pae(payload_type, payload):
    t = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def check(manifest_path, key_path):
    problems = []
    with open(manifest_path, "rb") as f:
        bundle = json.load(f)
    envelope = bundle["dsseEnvelope"]
    payload = base64.b64decode(envelope["payload"], validate=True)
    signatures = envelope["signatures"]
    signature = "unsigned"
    if key_path is not None:
        with open(key_path, "rb") as f:
            key = serialization.load_pem_public_key(f.read())
        pem = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        hint = bundle["verificationMaterial"].get("publicKey", {}).get("hint")
        if not signatures:
            problems.append("the manifest is not signed")
        elif hint != hashlib.sha256(pem).hexdigest():
            problems.append("the public key hint names another key")
            signature = "other-key"
        else:
            sig = base64.b64decode(signatures[0]["sig"], validate=True)
            data = pae(envelope["payloadType"], payload)
            try:
                if isinstance(key, ed25519.Ed25519PublicKey):
                    key.verify(sig, data)
                elif isinstance(key, ec.EllipticCurvePublicKey):
                    digest = hashes.SHA256() if key.curve.key_size == 256 else hashes.SHA384()
                    key.verify(sig, data, ec.ECDSA(digest))
                else:
                    raise InvalidSignature()
                signature = "verified"
            except InvalidSignature:
                signature = "invalid"
                problems.append("the signature does not verify over the PAE of the payload")
    elif signatures:
        signature = "not-checked"

    statement = json.loads(payload)
    if statement.get("_type") != "https://in-toto.io/Statement/v1":
        problems.append("not an in-toto Statement v1")
    if statement.get("predicateType") != "https://model_signing/signature/v1.0":
        problems.append("not the model-signing v1.0 predicate")
    predicate = statement["predicate"]
    resources = predicate["resources"]
    root = hashlib.sha256(b"".join(bytes.fromhex(r["digest"]) for r in resources)).hexdigest()
    if root != statement["subject"][0]["digest"]["sha256"]:
        problems.append("the subject digest is not the digest of the resources")

    base = os.path.dirname(os.path.abspath(manifest_path))
    serialization_args = predicate["serialization"]
    method = serialization_args["method"]
    covered = {}
    shards = 0
    for r in resources:
        if method == "shards":
            name, start, end = r["name"].rsplit(":", 2)
            start, end = int(start), int(end)
            expected_algorithm = "sha256-sharded-%d" % serialization_args["shard_size"]
        else:
            name, start, end = r["name"], 0, None
            expected_algorithm = "sha256"
        if r["algorithm"] != expected_algorithm:
            problems.append("%s: algorithm %s" % (r["name"], r["algorithm"]))
        path = os.path.join(base, *name.split("/"))
        try:
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read() if end is None else f.read(end - start)
                size = os.fstat(f.fileno()).st_size
        except OSError as e:
            problems.append("%s: %s" % (name, e.strerror))
            continue
        if end is not None and len(data) != end - start:
            problems.append("%s: shard %d:%d is past the end of the file" % (name, start, end))
        if hashlib.sha256(data).hexdigest() != r["digest"]:
            problems.append("%s: bytes %d..%s differ from the manifest" % (name, start, end))
        covered.setdefault(name, [size, 0])
        covered[name][1] = end if end is not None else size
        shards += 1
    for name, (size, end) in covered.items():
        if end != size:
            problems.append("%s: the manifest covers %d of its %d bytes" % (name, end, size))
    if os.path.basename(manifest_path) == "model.sig":
        ignored = set(serialization_args.get("ignore_paths", []))
        for entry in sorted(os.listdir(base)):
            if entry not in covered and entry not in ignored:
                problems.append("%s is in the directory but not in the manifest" % entry)

    lineage = predicate.get("llmcp")
    return {
        "ok": not problems,
        "signature": signature,
        "files": sorted(covered),
        "shards": shards,
        "subject": statement["subject"][0]["digest"]["sha256"],
        "step": None if lineage is None else lineage.get("step"),
        "parent": None if lineage is None or lineage.get("parent") is None else lineage["parent"].get("manifest"),
        "problems": problems,
    }


def main(argv):
    manifest = argv[1]
    key = argv[argv.index("--key") + 1] if "--key" in argv else None
    result = check(manifest, key)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
