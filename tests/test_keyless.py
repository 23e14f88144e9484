"""Keyless (Sigstore) signatures of plugins in a real OCI registry, checked
offline against a trusted root. The Sigstore here is the test's own: a
Fulcio-like certificate authority (a root and an intermediate), a
Rekor-like log key, a `trusted_root.json` naming them, and signatures
written the two ways cosign attaches them: in its signature tag (the
certificate and the log entry in annotations) and as a Sigstore bundle (a
DSSE envelope holding an in-toto statement, with an inclusion proof and a
signed checkpoint) attached as an OCI referrer. The host never met any of
it before the test. The trusted root and the bundles are written through
Sigstore's own models of those formats (`sigstore-models`, strict: unknown
or mistyped fields are refused), so what the host reads is what Sigstore's
clients write, not only what this test and the host agree on."""

import base64
import datetime
import hashlib
import json

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier
from sigstore_models.bundle.v1 import Bundle
from sigstore_models.trustroot.v1 import TrustedRoot

from conftest import PLUGINS
from test_oci import registry, wasm_mcp  # noqa: F401 (a fixture)
from test_signatures import (MANIFEST, SIGNATURE, api, cosign_payload, key_pair, push, put_blob,
                             put_signature_tag)

GITHUB = "https://token.actions.githubusercontent.com"
WORKFLOW = "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v1.2.0"
BUNDLE = "application/vnd.dev.sigstore.bundle.v0.3+json"
INDEX = "application/vnd.oci.image.index.v1+json"
EMPTY = "application/vnd.oci.empty.v1+json"
ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
SOURCE_REPOSITORY = ObjectIdentifier("1.3.6.1.4.1.57264.1.12")
SIGN_PREDICATE = "https://sigstore.dev/cosign/sign/v1"
NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def b64(data):
    return base64.b64encode(data).decode()


def der_utf8(text):
    data = text.encode()
    assert len(data) < 128
    return bytes([0x0C, len(data)]) + data


def spki(key):
    return key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def leaf_hash(data):
    return hashlib.sha256(b"\x00" + data).digest()


def tree(hashes):
    """RFC 9162's Merkle tree hash of leaf hashes."""
    if len(hashes) == 1:
        return hashes[0]
    k = 1 << ((len(hashes) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + tree(hashes[:k]) + tree(hashes[k:])).digest()


def audit_path(m, hashes):
    """RFC 9162's audit path of leaf m."""
    if len(hashes) == 1:
        return []
    k = 1 << ((len(hashes) - 1).bit_length() - 1)
    if m < k:
        return audit_path(m, hashes[:k]) + [tree(hashes[k:])]
    return audit_path(m - k, hashes[k:]) + [tree(hashes[:k])]


class Authority:
    """A Fulcio-like certificate authority: a P-384 root and intermediate."""

    def __init__(self, name):
        self.root_key = ec.generate_private_key(ec.SECP384R1())
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, name),
                             x509.NameAttribute(NameOID.COMMON_NAME, f"{name} root")])
        self.root = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                     .public_key(self.root_key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(NOW - datetime.timedelta(days=30))
                     .not_valid_after(NOW + datetime.timedelta(days=3650))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
                     .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                                    critical=True)
                     .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.root_key.public_key()),
                                    critical=False)
                     .sign(self.root_key, hashes.SHA384()))
        self.key = ec.generate_private_key(ec.SECP384R1())
        inter = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, name),
                           x509.NameAttribute(NameOID.COMMON_NAME, f"{name} intermediate")])
        self.intermediate = (x509.CertificateBuilder().subject_name(inter).issuer_name(subject)
                             .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                             .not_valid_before(NOW - datetime.timedelta(days=30))
                             .not_valid_after(NOW + datetime.timedelta(days=3650))
                             .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                             .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                                          False), critical=True)
                             .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]),
                                            critical=False)
                             .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()),
                                            critical=False)
                             .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                                 self.root_key.public_key()), critical=False)
                             .sign(self.root_key, hashes.SHA384()))

    def chain(self):
        return [self.intermediate, self.root]

    def issue(self, subject=WORKFLOW, issuer=GITHUB, not_before=None, not_after=None, code_signing=True,
              source_repository="https://github.com/acme/tools"):
        """A short-lived signing certificate and its key, as Fulcio issues one."""
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(x509.Name([]))
                   .issuer_name(self.intermediate.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(not_before or NOW - datetime.timedelta(minutes=1))
                   .not_valid_after(not_after or NOW + datetime.timedelta(minutes=10))
                   .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False),
                                  critical=True)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING if code_signing
                                                         else ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                   .add_extension(x509.SubjectAlternativeName([x509.UniformResourceIdentifier(subject)]),
                                  critical=True)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                                  critical=False)
                   .add_extension(x509.UnrecognizedExtension(ISSUER_V2, der_utf8(issuer)), critical=False))
        if source_repository:
            builder = builder.add_extension(
                x509.UnrecognizedExtension(SOURCE_REPOSITORY, der_utf8(source_repository)), critical=False)
        return key, builder.sign(self.key, hashes.SHA384())


class Log:
    """A Rekor-like transparency log: a P-256 key, entries in a Merkle tree."""

    def __init__(self):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.id = hashlib.sha256(spki(self.key)).digest()
        self.leaves = [leaf_hash(f"earlier entry {i}".encode()) for i in range(5)]

    def add(self, body, integrated_time):
        """Logs `body`: its entry as a bundle carries it (v0.3 JSON)."""
        index = len(self.leaves)
        self.leaves.append(leaf_hash(body))
        size = len(self.leaves)
        root = tree(self.leaves)
        promised = json.dumps({"body": b64(body), "integratedTime": integrated_time,
                               "logID": self.id.hex(), "logIndex": index},
                              sort_keys=True, separators=(",", ":")).encode()
        note = f"rekor.test - 1\n{size}\n{b64(root)}\n"
        signature = self.key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
        checkpoint = note + "\n" + f"\u2014 rekor.test {b64(self.id[:4] + signature)}\n"
        return {
            "logIndex": str(index), "logId": {"keyId": b64(self.id)},
            "kindVersion": {"kind": json.loads(body)["kind"], "version": "0.0.1"},
            "integratedTime": str(integrated_time),
            "inclusionPromise": {"signedEntryTimestamp": b64(self.key.sign(promised, ec.ECDSA(hashes.SHA256())))},
            "inclusionProof": {"logIndex": str(index), "rootHash": b64(root), "treeSize": str(size),
                               "hashes": [b64(h) for h in audit_path(index, self.leaves)],
                               "checkpoint": {"envelope": checkpoint}},
            "canonicalizedBody": b64(body),
        }


def trusted_root(authorities, logs):
    return {
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [{"baseUrl": "https://rekor.test", "hashAlgorithm": "SHA2_256",
                   "publicKey": {"rawBytes": b64(spki(log.key)), "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                                 "validFor": {"start": "2021-01-12T11:53:27.000Z"}},
                   "logId": {"keyId": b64(log.id)}} for log in logs],
        "certificateAuthorities": [{
            "subject": {"organization": "test", "commonName": "test"}, "uri": "https://fulcio.test",
            "certChain": {"certificates": [{"rawBytes": b64(c.public_bytes(serialization.Encoding.DER))}
                                           for c in ca.chain()]},
            "validFor": {"start": "2021-03-07T03:20:29.000Z"}} for ca in authorities],
        "ctlogs": [], "timestampAuthorities": [],
    }


def pem(certificate):
    return certificate.public_bytes(serialization.Encoding.PEM)


class Sigstore:
    """The test's Sigstore: one authority, one log, and a trusted root on disk."""

    def __init__(self, folder):
        self.authority = Authority("fulcio.test")
        self.log = Log()
        self.root_file = folder / "trusted_root.json"
        document = trusted_root([self.authority], [self.log])
        self.root_file.write_text(TrustedRoot.from_json(json.dumps(document)).to_json())

    def cosign_tag(self, registry, repo, digest, named=None, authority=None, log=None, tamper=None, **issue):
        """A keyless signature of `digest` in cosign's signature tag: the
        simple-signing payload, its signature, and the certificate and log
        entry in the layer's annotations."""
        key, certificate = (authority or self.authority).issue(**issue)
        payload = cosign_payload(registry, repo, digest, named)
        signature = key.sign(payload, ec.ECDSA(hashes.SHA256()))
        body = json.dumps({"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": hashlib.sha256(payload).hexdigest()}},
            "signature": {"content": b64(signature), "publicKey": {"content": b64(pem(certificate))}}}},
            separators=(",", ":")).encode()
        entry = (log or self.log).add(body, int(NOW.timestamp()))
        logged = {"SignedEntryTimestamp": entry["inclusionPromise"]["signedEntryTimestamp"],
                  "Payload": {"body": entry["canonicalizedBody"], "integratedTime": int(entry["integratedTime"]),
                              "logIndex": int(entry["logIndex"]), "logID": (log or self.log).id.hex()}}
        if tamper == "entry":
            logged["Payload"]["integratedTime"] += 1
        put_signature_tag(registry, repo, digest, payload, {
            SIGNATURE: b64(signature),
            "dev.sigstore.cosign/certificate": pem(certificate).decode(),
            "dev.sigstore.cosign/chain": b"".join(pem(c) for c in self.authority.chain()).decode(),
            "dev.sigstore.cosign/bundle": json.dumps(logged)})
        return entry

    def bundle(self, digest, repository=None, tamper=None, predicate=SIGN_PREDICATE, **issue):
        """A Sigstore bundle (v0.3): a DSSE envelope holding an in-toto
        statement about `digest`, with its log entry. Without `repository`
        its subject names none, as `cosign sign` writes it in its bundle
        format."""
        key, certificate = self.authority.issue(**issue)
        subject = {"digest": {"sha256": digest.split(":")[1]}}
        if repository:
            subject["name"] = repository
        statement = json.dumps({
            "_type": "https://in-toto.io/Statement/v1", "subject": [subject],
            "predicateType": predicate, "predicate": {}}).encode()
        kind = "application/vnd.in-toto+json"
        pae = b"DSSEv1 %d %s %d %s" % (len(kind), kind.encode(), len(statement), statement)
        signature = key.sign(pae, ec.ECDSA(hashes.SHA256()))
        body = json.dumps({"apiVersion": "0.0.1", "kind": "dsse", "spec": {
            "envelopeHash": {"algorithm": "sha256", "value": hashlib.sha256(b"envelope").hexdigest()},
            "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(statement).hexdigest()},
            "signatures": [{"signature": b64(signature), "verifier": b64(pem(certificate))}]}},
            separators=(",", ":")).encode()
        entry = self.log.add(body, int(NOW.timestamp()))
        if tamper == "proof":
            hashes_ = entry["inclusionProof"]["hashes"]
            hashes_[0] = b64(bytes(32))
        if tamper == "checkpoint":
            entry["inclusionProof"]["checkpoint"]["envelope"] = entry["inclusionProof"]["checkpoint"][
                "envelope"].replace("rekor.test - 1", "rekor.test - 2")
        return {"mediaType": BUNDLE,
                "verificationMaterial": {"certificate": {"rawBytes": b64(certificate.public_bytes(
                    serialization.Encoding.DER))}, "tlogEntries": [entry]},
                "dsseEnvelope": {"payload": b64(statement), "payloadType": kind,
                                 "signatures": [{"sig": b64(signature), "keyid": ""}]}}


def attach(registry, repo, digest, bundle):
    """Attaches `bundle` to `digest` as cosign does where the registry has
    no referrers API: a manifest whose subject is the artifact, listed in
    the index at the referrers tag."""
    data = bundle if isinstance(bundle, bytes) else Bundle.from_json(json.dumps(bundle)).to_json().encode()
    bundle_digest = put_blob(registry, repo, data)
    empty = put_blob(registry, repo, b"{}")
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": MANIFEST, "artifactType": BUNDLE,
        "config": {"mediaType": EMPTY, "digest": empty, "size": 2},
        "layers": [{"mediaType": BUNDLE, "digest": bundle_digest, "size": len(data)}],
        "subject": {"mediaType": MANIFEST, "digest": digest, "size": 1}}).encode()
    manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
    api(registry, "PUT", f"{repo}/manifests/{manifest_digest}", manifest, {"Content-Type": MANIFEST})
    index = {"schemaVersion": 2, "mediaType": INDEX, "manifests": [
        {"mediaType": MANIFEST, "digest": manifest_digest, "size": len(manifest), "artifactType": BUNDLE}]}
    api(registry, "PUT", f"{repo}/manifests/{digest.replace(':', '-')}", json.dumps(index).encode(),
        {"Content-Type": INDEX})


def environment(tmp_path, cache_dir, host_env, root, identities, keys=()):
    config = tmp_path / "config.toml"
    identities = ", ".join("{ " + ", ".join(f'{k} = "{v}"' for k, v in i.items()) + " }" for i in identities)
    keys = ", ".join(f'"{k}"' for k in keys)
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n'
                      f'[signatures]\npolicy = "required"\ntrusted_root = "{root}"\nkeys = [{keys}]\n'
                      f'identities = [{identities}]\n')
    return dict(host_env, WASM_MCP_CONFIG=str(config), RUST_BACKTRACE="0")


def pull(ref, plugins, env, check=True):
    return wasm_mcp("pull", ref, "--plugins", str(plugins), "--name", "hello", env=env, check=check)


def test_a_keyless_signature_by_an_accepted_identity_installs_in_either_format(
        tmp_path, cache_dir, host_env, registry):
    sigstore = Sigstore(tmp_path)
    identity = {"issuer": GITHUB, "subject": "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/*"}
    env = environment(tmp_path, cache_dir, host_env, sigstore.root_file, [identity])
    plugins = tmp_path / "plugins"
    plugins.mkdir()

    # cosign's signature tag.
    ref, digest = push(tmp_path, registry, "acme/hello", PLUGINS / "hello.wasm", env)
    refused = pull(ref, plugins, env, check=False)
    assert refused.returncode != 0 and "no signature" in refused.stderr, refused.stderr
    entry = sigstore.cosign_tag(registry, "acme/hello", digest)
    pulled = pull(ref, plugins, env).stdout
    assert (f"signature: verified with {WORKFLOW} (issuer {GITHUB}, transparency log entry "
            f"{entry['logIndex']}), signed for {registry.address}/acme/hello") in pulled, pulled
    assert (plugins / "hello.signer").read_text() == f"identity {GITHUB} {WORKFLOW}\n"
    inspected = wasm_mcp("inspect", ref, env=env).stdout
    assert f"verified with {WORKFLOW}" in inspected and "greet" in inspected, inspected

    # A Sigstore bundle attached as a referrer (another repository, so no
    # signature tag is there).
    other = tmp_path / "other"
    other.mkdir()
    ref, digest = push(tmp_path, registry, "acme/bundled", PLUGINS / "hello.wasm", env)
    assert pull(ref, other, env, check=False).returncode != 0
    attach(registry, "acme/bundled", digest, sigstore.bundle(digest, f"{registry.address}/acme/bundled"))
    pulled = pull(ref, other, env).stdout
    assert f"signature: verified with {WORKFLOW} (issuer {GITHUB}" in pulled, pulled
    assert (other / "hello.wasm").read_bytes() == (PLUGINS / "hello.wasm").read_bytes()

    # `cosign sign`'s own bundle names the digest only: it counts through an
    # identity bound to repositories, and only there.
    third = tmp_path / "third"
    third.mkdir()
    ref, digest = push(tmp_path, registry, "acme/nameless", PLUGINS / "hello.wasm", env)
    attach(registry, "acme/nameless", digest, sigstore.bundle(digest))
    refused = pull(ref, third, env, check=False)
    assert refused.returncode != 0 and "names no repository" in refused.stderr, refused.stderr
    assert f'add repository = "{registry.address}/acme/nameless"' in refused.stderr, refused.stderr
    bound = environment(tmp_path, cache_dir, host_env, sigstore.root_file,
                        [dict(identity, repository=f"{registry.address}/acme/*")])
    pulled = pull(ref, third, bound).stdout
    assert f"signed for {registry.address}/acme/nameless" in pulled, pulled

    # A key-made signature still counts where a key is configured, and the
    # signer line follows what verified.
    key, private, public = key_pair(tmp_path, "ours")
    env = environment(tmp_path, cache_dir, host_env, sigstore.root_file, [identity], keys=[public])
    ref, digest = push(tmp_path, registry, "acme/keyed", PLUGINS / "hello.wasm", env)
    wasm_mcp("sign", ref, "--key", str(private), env=env)
    assert f"verified with {public}" in pull(ref, plugins, env).stdout
    fingerprint = hashlib.sha256(spki(key)).hexdigest()
    assert (plugins / "hello.signer").read_text() == f"key sha256:{fingerprint}\n"


OTHER_WORKFLOW = "https://github.com/mallory/tools/.github/workflows/release.yml@refs/tags/v1"

# Each case: how the signature is made, and what the refusal must say.
REFUSALS = {
    "another subject": (dict(subject=OTHER_WORKFLOW), f"subject is {OTHER_WORKFLOW}"),
    "another issuer": (dict(issuer="https://accounts.example.com"),
                       "issuer is https://accounts.example.com, not the one"),
    "an expired certificate": (dict(not_before=NOW - datetime.timedelta(hours=2),
                                    not_after=NOW - datetime.timedelta(hours=1)),
                               "certificate was not valid when the transparency log recorded"),
    "a certificate not for code signing": (dict(code_signing=False), "not for code signing"),
    "an untrusted authority": (dict(authority="stranger"), "not issued by a certificate authority of the trusted"),
    "a log the root does not name": (dict(log="stranger"), "is not one of the trusted root's"),
    "a tampered log entry": (dict(tamper="entry"), "signed entry timestamp does not verify"),
    "a run from another repository": (dict(source_repository="https://github.com/mallory/tools"),
                                      "run from source repository https://github.com/mallory/tools"),
    "another repository": (dict(named="elsewhere.example/acme/hello"),
                           "for another repository (elsewhere.example/acme/hello"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_a_keyless_signature_is_refused_saying_why(case, tmp_path, cache_dir, host_env, registry):
    sigstore = Sigstore(tmp_path)
    identity = {"issuer": GITHUB, "subject": "https://github.com/acme/*@refs/tags/*",
                "source_repository": "https://github.com/acme/*"}
    env = environment(tmp_path, cache_dir, host_env, sigstore.root_file, [identity])
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    how, why = REFUSALS[case]
    how = dict(how)
    if how.get("authority") == "stranger":
        how["authority"] = Authority("stranger")
    if how.get("log") == "stranger":
        how["log"] = Log()
    ref, digest = push(tmp_path, registry, "acme/hello", PLUGINS / "hello.wasm", env)
    sigstore.cosign_tag(registry, "acme/hello", digest, **how)
    refused = pull(ref, plugins, env, check=False)
    assert refused.returncode != 0, refused.stdout
    assert "does not verify" in refused.stderr and why in refused.stderr, refused.stderr
    assert not list(plugins.iterdir())


def test_a_bundle_is_refused_for_another_digest_or_a_broken_proof_and_read_bounded(
        tmp_path, cache_dir, host_env, registry):
    sigstore = Sigstore(tmp_path)
    identity = {"issuer": GITHUB, "subject": WORKFLOW, "repository": f"{registry.address}/acme/*"}
    env = environment(tmp_path, cache_dir, host_env, sigstore.root_file, [identity])
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    here = f"{registry.address}/acme/hello"
    ref, digest = push(tmp_path, registry, "acme/hello", PLUGINS / "hello.wasm", env)
    other_digest = "sha256:" + "ab" * 32
    for bundle, why in [
        (sigstore.bundle(other_digest, here), f"of another artifact ({other_digest})"),
        (sigstore.bundle(digest, here, predicate="https://slsa.dev/provenance/v1"),
         "a bundle is an attestation (https://slsa.dev/provenance/v1), not a signature"),
        (sigstore.bundle(digest, here, tamper="proof"), "its inclusion proof: it leads to another root"),
        (sigstore.bundle(digest, here, tamper="checkpoint"), "its checkpoint is not signed by the log"),
        (b"{" + b" " * (70 << 10) + b"}", "a bundle is over 65536 bytes"),
        (b"not json", "a bundle is not a Sigstore bundle"),
    ]:
        attach(registry, "acme/hello", digest, bundle)
        refused = pull(ref, plugins, env, check=False)
        assert refused.returncode != 0, refused.stdout
        assert why in refused.stderr, refused.stderr
        assert not list(plugins.iterdir())
    # An identity bound to other repositories does not vouch here.
    env = environment(tmp_path, cache_dir, host_env, sigstore.root_file,
                      [dict(identity, repository="ghcr.io/acme/*")])
    attach(registry, "acme/hello", digest, sigstore.bundle(digest, here))
    refused = pull(ref, plugins, env, check=False)
    assert refused.returncode != 0 and "only for other repositories" in refused.stderr, refused.stderr


def test_keyless_settings_that_cannot_work_stop_the_host_saying_why(tmp_path, cache_dir, host_env):
    config = tmp_path / "config.toml"
    config.write_text('[signatures]\npolicy = "required"\n'
                      f'identities = [{{ issuer = "{GITHUB}", subject = "{WORKFLOW}" }}]\n')
    done = wasm_mcp("config", "check", str(config), env=host_env, check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "trusted_root names no trusted root" in said, said

    config.write_text(f'[signatures]\npolicy = "required"\ntrusted_root = "missing.json"\n'
                      f'identities = [{{ issuer = "{GITHUB}", subject = "{WORKFLOW}" }}]\n')
    done = wasm_mcp("config", "check", str(config), env=host_env, check=False)
    said = done.stdout + done.stderr
    assert done.returncode != 0 and "signatures.trusted_root" in said and "missing.json" in said, said

    # A root that is not one, or whose chains are too long, says so on use.
    root = tmp_path / "trusted_root.json"
    ca = Authority("long")
    document = trusted_root([ca], [Log()])
    chain = document["certificateAuthorities"][0]["certChain"]["certificates"]
    document["certificateAuthorities"][0]["certChain"]["certificates"] = chain * 3
    root.write_text(json.dumps(document))
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[signatures]\npolicy = "required"\n'
                      f'trusted_root = "{root}"\n'
                      f'identities = [{{ issuer = "{GITHUB}", subject = "{WORKFLOW}" }}]\n')
    env = dict(host_env, WASM_MCP_CONFIG=str(config), RUST_BACKTRACE="0")
    done = wasm_mcp("pull", "oci://127.0.0.1:9/acme/hello:1", "--plugins", str(tmp_path), env=env, check=False)
    assert done.returncode != 0 and "more than 4 certificates" in done.stderr, done.stderr
    root.write_text("[]")
    done = wasm_mcp("pull", "oci://127.0.0.1:9/acme/hello:1", "--plugins", str(tmp_path), env=env, check=False)
    assert done.returncode != 0 and "not a Sigstore trusted root" in done.stderr, done.stderr
