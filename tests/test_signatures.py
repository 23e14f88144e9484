"""Signatures of plugins in a real OCI registry (Debian's docker-registry on
loopback), in cosign's key-based format: `wasm-mcp sign` writes them, and
a pull under `[signatures] policy` checks them before anything is
installed. Signatures are also made and checked here independently (with
the `cryptography` package, following cosign's format) to show the two
sides agree on the format, not only with each other."""

import base64
import hashlib
import json
import shutil
import time
import urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import FIXTURES, PLUGINS, RawHost
from test_oci import TOOLS_CHANGED, registry, wasm_mcp  # noqa: F401 (a fixture)

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
PAYLOAD = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGNATURE = "dev.cosignproject.cosign/signature"


def key_pair(folder, name):
    """A P-256 key pair as cosign and openssl keep them: PKCS#8 and SPKI PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = folder / f"{name}.key"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public = folder / f"{name}.pub"
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return key, private, public


def environment(tmp_path, cache_dir, host_env, policy, keys, extra=""):
    config = tmp_path / "config.toml"
    keys = ", ".join(f'"{k}"' for k in keys)
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n{extra}\n'
                      f'[signatures]\npolicy = "{policy}"\nkeys = [{keys}]\n')
    return dict(host_env, WASM_MCP_CONFIG=str(config), RUST_BACKTRACE="0")


def push(tmp_path, registry, repo, component, env):
    source = tmp_path / ("source-" + repo.replace("/", "-"))
    source.mkdir(exist_ok=True)
    shutil.copy(component, source / component.name)
    ref = f"oci://{registry.address}/{repo}:1"
    pushed = wasm_mcp("push", str(source / component.name), ref, env=env).stdout
    return ref, pushed.split("(")[-1].rstrip(")\n")


def api(registry, method, path, body=None, headers=None):
    request = urllib.request.Request(f"http://{registry.address}/v2/{path}", data=body, method=method,
                                     headers=headers or {})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.status, dict(answer.headers), answer.read()


def put_blob(registry, repo, data):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    _, headers, _ = api(registry, "POST", f"{repo}/blobs/uploads/")
    location = headers["Location"]
    location = location.split(f"{registry.address}/v2/", 1)[-1]
    separator = "&" if "?" in location else "?"
    api(registry, "PUT", f"{location}{separator}digest={digest}", data,
        {"Content-Type": "application/octet-stream"})
    return digest


def signature_tag(digest):
    return digest.replace(":", "-") + ".sig"


def get_manifest(registry, repo, tag):
    return json.loads(api(registry, "GET", f"{repo}/manifests/{tag}", headers={"Accept": MANIFEST})[2])


def put_manifest(registry, repo, tag, manifest):
    api(registry, "PUT", f"{repo}/manifests/{tag}", json.dumps(manifest).encode(), {"Content-Type": MANIFEST})


def cosign_payload(registry, repo, digest, identity=None):
    """The simple-signing payload cosign signs for `digest`, naming
    `identity` (by default `repo`'s REGISTRY/REPO)."""
    return json.dumps({
        "critical": {"identity": {"docker-reference": identity or f"{registry.address}/{repo}"},
                     "image": {"docker-manifest-digest": digest},
                     "type": "cosign container image signature"},
        "optional": None}).encode()


def put_signature_tag(registry, repo, digest, payload, annotations):
    """Writes cosign's signature tag of `digest`: one layer, `payload`,
    with `annotations` (its signature, and what else it carries)."""
    payload_digest = put_blob(registry, repo, payload)
    config = json.dumps({"architecture": "", "os": "", "config": {},
                         "rootfs": {"type": "layers", "diff_ids": [payload_digest]}}).encode()
    config_digest = put_blob(registry, repo, config)
    put_manifest(registry, repo, signature_tag(digest), {
        "schemaVersion": 2, "mediaType": MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                   "size": len(config)},
        "layers": [{"mediaType": PAYLOAD, "digest": payload_digest, "size": len(payload),
                    "annotations": annotations}]})


def cosign_sign(registry, repo, digest, key, identity=None):
    """A signature of `digest` written the way cosign writes one, for
    `identity` (by default `repo`'s REGISTRY/REPO)."""
    payload = cosign_payload(registry, repo, digest, identity)
    signature = base64.b64encode(key.sign(payload, ec.ECDSA(hashes.SHA256()))).decode()
    put_signature_tag(registry, repo, digest, payload, {SIGNATURE: signature})


def pull(ref, plugins, env, check=True):
    return wasm_mcp("pull", ref, "--plugins", str(plugins), "--name", "hello", env=env, check=check)


def test_under_required_only_a_plugin_signed_with_a_configured_key_is_installed(
        tmp_path, cache_dir, host_env, registry):
    _, private, public = key_pair(tmp_path, "ours")
    _, stranger, _ = key_pair(tmp_path, "theirs")
    env = environment(tmp_path, cache_dir, host_env, "required", [public])
    ref, digest = push(tmp_path, registry, "tools/hello", PLUGINS / "hello.wasm", env)
    plugins = tmp_path / "plugins"
    plugins.mkdir()

    refused = pull(ref, plugins, env, check=False)
    assert refused.returncode != 0 and "no signature" in refused.stderr and digest in refused.stderr, refused.stderr
    assert not list(plugins.iterdir())
    inspected = wasm_mcp("inspect", ref, env=env, check=False)
    assert inspected.returncode != 0 and "no signature" in inspected.stderr, inspected.stderr

    # Signed, but with a key the host does not trust.
    wasm_mcp("sign", ref, "--key", str(stranger), env=env)
    refused = pull(ref, plugins, env, check=False)
    assert refused.returncode != 0 and "verifies with none of the keys" in refused.stderr, refused.stderr
    assert not list(plugins.iterdir())

    # Signed with ours too (the stranger's signature stays beside it).
    signed = wasm_mcp("sign", ref, "--key", str(private), env=env).stdout
    assert digest in signed, signed
    pulled = pull(ref, plugins, env).stdout
    assert f"signature: verified with {public}" in pulled, pulled
    assert (plugins / "hello.wasm").read_bytes() == (PLUGINS / "hello.wasm").read_bytes()
    inspected = wasm_mcp("inspect", ref, env=env).stdout
    assert f"signature: verified with {public}" in inspected and "greet" in inspected, inspected
    layers = get_manifest(registry, "tools/hello", signature_tag(digest))["layers"]
    assert len(layers) == 2, layers


def test_a_signature_of_another_artifact_does_not_vouch_for_this_one(tmp_path, cache_dir, host_env, registry):
    """The signature of a harmless artifact, copied onto an evil one's
    signature tag, verifies as a signature but names the other digest."""
    key, _, public = key_pair(tmp_path, "ours")
    env = environment(tmp_path, cache_dir, host_env, "if-present", [public])
    good, good_digest = push(tmp_path, registry, "tools/hello", PLUGINS / "hello.wasm", env)
    evil = f"oci://{registry.address}/tools/hello:evil"
    source = tmp_path / "source-evil"
    source.mkdir()
    shutil.copy(FIXTURES / "evil.wasm", source / "evil.wasm")
    evil_digest = wasm_mcp("push", str(source / "evil.wasm"), evil, env=env).stdout.split("(")[-1].rstrip(")\n")
    cosign_sign(registry, "tools/hello", good_digest, key)
    put_manifest(registry, "tools/hello", signature_tag(evil_digest),
                 get_manifest(registry, "tools/hello", signature_tag(good_digest)))
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    refused = pull(evil, plugins, env, check=False)
    assert refused.returncode != 0, refused.stdout
    assert f"of another artifact ({good_digest})" in refused.stderr, refused.stderr
    assert not list(plugins.iterdir())
    # The good one's own signature (made outside wasm-mcp) verifies.
    assert "signature: verified" in pull(good, plugins, env).stdout


def test_if_present_installs_an_unsigned_plugin_and_says_so(tmp_path, cache_dir, host_env, registry):
    _, _, public = key_pair(tmp_path, "ours")
    env = environment(tmp_path, cache_dir, host_env, "if-present", [public])
    ref, _ = push(tmp_path, registry, "tools/hello", PLUGINS / "hello.wasm", env)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    assert "signature: none" in pull(ref, plugins, env).stdout
    assert (plugins / "hello.wasm").exists()


def test_a_wasm_mcp_signature_verifies_as_cosign_checks_it(tmp_path, cache_dir, host_env, registry):
    key, private, public = key_pair(tmp_path, "ours")
    env = environment(tmp_path, cache_dir, host_env, "off", [])
    ref, digest = push(tmp_path, registry, "tools/hello", PLUGINS / "hello.wasm", env)
    wasm_mcp("sign", ref, "--key", str(private), env=env)
    manifest = get_manifest(registry, "tools/hello", signature_tag(digest))
    [layer] = manifest["layers"]
    assert layer["mediaType"] == PAYLOAD
    payload = api(registry, "GET", f"tools/hello/blobs/{layer['digest']}")[2]
    claims = json.loads(payload)
    assert claims["critical"]["type"] == "cosign container image signature"
    assert claims["critical"]["image"]["docker-manifest-digest"] == digest
    assert claims["critical"]["identity"]["docker-reference"] == f"{registry.address}/tools/hello"
    signature = base64.b64decode(layer["annotations"][SIGNATURE])
    key.public_key().verify(signature, payload, ec.ECDSA(hashes.SHA256()))
    try:
        key.public_key().verify(signature, payload + b" ", ec.ECDSA(hashes.SHA256()))
        raise AssertionError("a changed payload verified")
    except InvalidSignature:
        pass


def test_a_source_plugin_loads_only_once_it_is_signed(tmp_path, cache_dir, host_env, registry):
    _, private, public = key_pair(tmp_path, "ours")
    push_env = environment(tmp_path, cache_dir, host_env, "off", [])
    ref, _ = push(tmp_path, registry, "tools/hello", PLUGINS / "hello.wasm", push_env)
    env = environment(tmp_path, cache_dir, host_env, "off", [public],
                      extra=f'oci_poll_secs = 1\n[plugins.signed]\nsource = "{ref}"\nsignatures = "required"\n')
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(FIXTURES / "evil.wasm", plugins / "other.wasm")
    host = RawHost(plugins, dict(env, RUST_LOG="info"))
    try:
        host.initialize()
        deadline = time.monotonic() + 60
        while "it has no signature" not in host.log():
            assert time.monotonic() < deadline, host.log()[-3000:]
            time.sleep(0.1)
        names = {t["name"] for t in host.request("tools/list")["result"]["tools"]}
        assert "greet" not in names and "residue" in names, names
        assert not (plugins / "signed.wasm").exists()
        wasm_mcp("sign", ref, "--key", str(private), env=push_env)
        deadline = time.monotonic() + 120
        while not any(m.get("method") == TOOLS_CHANGED for m in host.pending):
            assert time.monotonic() < deadline, host.log()[-3000:]
            host.request("ping")
            time.sleep(0.1)
        names = {t["name"] for t in host.request("tools/list")["result"]["tools"]}
        assert "greet" in names, names
    finally:
        host.close()


def test_a_policy_that_checks_signatures_needs_a_key(tmp_path, cache_dir, host_env):
    env = environment(tmp_path, cache_dir, host_env, "required", [])
    done = wasm_mcp("pull", "oci://127.0.0.1:1/x/y:1", "--plugins", str(tmp_path), env=env, check=False)
    assert done.returncode != 0 and "names no public key" in done.stderr, done.stderr


def test_a_signature_vouches_only_for_the_repository_it_names(tmp_path, cache_dir, host_env, registry):
    """The same component signed for another repository (as a mirror of it
    would carry) is refused under `required`, naming both repositories,
    unless `[signatures] repositories` accepts that one; what verified, and
    for which repository, is said by pull and inspect."""
    key, _, public = key_pair(tmp_path, "ours")
    env = environment(tmp_path, cache_dir, host_env, "required", [public])
    ref, digest = push(tmp_path, registry, "tools/hello", PLUGINS / "hello.wasm", env)
    other = f"{registry.address}/tools/original"
    cosign_sign(registry, "tools/hello", digest, key, identity=other)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    refused = pull(ref, plugins, env, check=False)
    assert refused.returncode != 0, refused.stdout
    assert f"for another repository ({other}, not {registry.address}/tools/hello" in refused.stderr, refused.stderr
    assert not list(plugins.iterdir())
    # A tag or digest in the signed reference does not change the repository.
    cosign_sign(registry, "tools/hello", digest, key, identity=f"{other}:1.0")
    assert pull(ref, plugins, env, check=False).returncode != 0

    config = tmp_path / "config.toml"
    config.write_text(config.read_text().replace("keys = [", f'repositories = ["{other}"]\nkeys = ['))
    pulled = pull(ref, plugins, env).stdout
    assert f"signature: verified with {public}, signed for {other}" in pulled, pulled
    inspected = wasm_mcp("inspect", ref, env=env).stdout
    assert f"signed for {other}" in inspected, inspected
