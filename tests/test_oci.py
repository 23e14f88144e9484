"""Plugins through a real OCI registry (Debian's docker-registry, the CNCF
distribution server, started here on loopback): `wasm-mcp push` publishes
a component with its manifest, `wasm-mcp pull` fetches it by tag or by
digest into a plugin folder, where a serving host loads it."""

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request

import bcrypt
import pytest

from conftest import BINARY, FIXTURES, PLUGINS, RawHost

TOOLS_CHANGED = "notifications/tools/list_changed"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Registry:
    """docker-registry serving on a free loopback port, optionally behind
    htpasswd Basic authentication."""

    def __init__(self, base, users=None):
        self.address = f"127.0.0.1:{free_port()}"
        config = base / "registry.yml"
        text = (
            "version: 0.1\n"
            f"storage:\n  filesystem:\n    rootdirectory: {base / 'registry-data'}\n"
            f"http:\n  addr: {self.address}\n"
        )
        headers = {}
        if users:
            lines = [f"{u}:{bcrypt.hashpw(p.encode(), bcrypt.gensalt(rounds=4)).decode()}" for u, p in users.items()]
            (base / "htpasswd").write_text("\n".join(lines) + "\n")
            text += f"auth:\n  htpasswd:\n    realm: test\n    path: {base / 'htpasswd'}\n"
            user, password = next(iter(users.items()))
            headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        config.write_text(text)
        self.log = open(base / "registry.log", "wb")
        self.proc = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while True:
            try:
                request = urllib.request.Request(f"http://{self.address}/v2/", headers=headers)
                with urllib.request.urlopen(request, timeout=5):
                    break
            except (urllib.error.URLError, ConnectionError):
                assert self.proc.poll() is None, (base / "registry.log").read_text()
                assert time.monotonic() < deadline, "the registry did not start"
                time.sleep(0.1)

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture
def registry(tmp_path):
    r = Registry(tmp_path)
    yield r
    r.close()


def wasm_mcp(*args, env, check=True):
    done = subprocess.run([str(BINARY), *args], capture_output=True, text=True, env=env, timeout=300)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def environment(tmp_path, cache_dir, host_env, extra=""):
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n{extra}')
    return dict(host_env, WASM_MCP_CONFIG=str(config), RUST_BACKTRACE="0")


def test_a_pushed_plugin_is_pulled_by_tag_or_digest_into_a_serving_hosts_folder(
        tmp_path, cache_dir, host_env, registry):
    env = environment(tmp_path, cache_dir, host_env)
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(FIXTURES / "evil.wasm", source / "evil.wasm")
    (source / "evil.toml").write_text('env = ["EVIL_GRANTED"]\nhosts = ["127.0.0.1"]\n')
    ref = f"oci://{registry.address}/tools/evil:1.0"
    pushed = wasm_mcp("push", str(source / "evil.wasm"), ref, env=env).stdout
    digest = pushed.split("(")[-1].rstrip(")\n")
    assert digest.startswith("sha256:") and len(digest) == 71, pushed

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins)
    host = RawHost(plugins, env)
    try:
        host.initialize()
        names = {t["name"] for t in host.request("tools/list")["result"]["tools"]}
        assert "residue" not in names
        pulled = wasm_mcp("pull", ref, "--plugins", str(plugins), env=env).stdout
        assert digest in pulled and str(plugins / "evil.wasm") in pulled, pulled
        # The folder's watcher loads it like any new file, and says so.
        deadline = time.monotonic() + 120
        while not any(m.get("method") == TOOLS_CHANGED for m in host.pending):
            assert time.monotonic() < deadline, host.log()[-3000:]
            host.request("ping")
            time.sleep(0.1)
        names = {t["name"] for t in host.request("tools/list")["result"]["tools"]}
        assert {"greet", "residue"} <= names
    finally:
        host.close()
    assert (plugins / "evil.wasm").read_bytes() == (source / "evil.wasm").read_bytes()
    # The manifest travelled with it.
    assert 'env = ["EVIL_GRANTED"]' in (plugins / "evil.toml").read_text()
    assert 'hosts = ["127.0.0.1"]' in (plugins / "evil.toml").read_text()
    # It is kept by digest, and the same digest pulls the same bytes.
    assert len(list((cache_dir / "oci").glob("sha256-*.wasm"))) >= 1
    by_digest = f"oci://{registry.address}/tools/evil@{digest}"
    wasm_mcp("pull", by_digest, "--plugins", str(plugins), "--name", "pinned", env=env)
    assert (plugins / "pinned.wasm").read_bytes() == (source / "evil.wasm").read_bytes()


def test_a_pull_that_cannot_be_served_changes_nothing_and_says_why(tmp_path, cache_dir, host_env, registry):
    env = environment(tmp_path, cache_dir, host_env)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    # No such tag.
    missing = wasm_mcp("pull", f"oci://{registry.address}/tools/none:1", "--plugins", str(plugins), env=env, check=False)
    assert missing.returncode != 0 and "manifest unknown" in missing.stderr, missing.stderr
    # A component over [server] max_plugin_mb (the 19 MB Python plugin).
    ref = f"oci://{registry.address}/tools/wordcount:1"
    wasm_mcp("push", str(PLUGINS / "wordcount.wasm"), ref, env=env)
    small = environment(tmp_path, cache_dir, host_env, "max_plugin_mb = 1\n")
    big = wasm_mcp("pull", ref, "--plugins", str(plugins), env=small, check=False)
    assert big.returncode != 0 and "over the limit" in big.stderr, big.stderr
    # Not an OCI reference at all.
    bad = wasm_mcp("pull", f"{registry.address}/tools/x:1", "--plugins", str(plugins), env=env, check=False)
    assert bad.returncode != 0 and "oci://" in bad.stderr
    assert list(plugins.iterdir()) == []


def test_registry_credentials_come_from_the_environment_and_are_never_shown(tmp_path, cache_dir, host_env):
    password = f"pw-{os.urandom(8).hex()}"
    registry = Registry(tmp_path, {"ops": password})
    try:
        env = environment(tmp_path, cache_dir, host_env)
        env["HOME"] = str(tmp_path)  # no docker config.json of the machine's
        ref = f"oci://{registry.address}/tools/hello:1"
        refused = wasm_mcp("push", str(PLUGINS / "hello.wasm"), ref, env=env, check=False)
        assert refused.returncode != 0
        creds = dict(env, WASM_MCP_OCI_USERNAME="ops", WASM_MCP_OCI_PASSWORD=password, RUST_LOG="debug")
        pushed = wasm_mcp("push", str(PLUGINS / "hello.wasm"), ref, env=creds)
        plugins = tmp_path / "plugins"
        plugins.mkdir()
        pulled = wasm_mcp("pull", ref, "--plugins", str(plugins), env=creds)
        assert (plugins / "hello.wasm").read_bytes() == (PLUGINS / "hello.wasm").read_bytes()
        header = base64.b64encode(f"ops:{password}".encode()).decode()
        for done in (refused, pushed, pulled):
            assert password not in done.stdout + done.stderr and header not in done.stdout + done.stderr
        # From docker's config.json too.
        (tmp_path / ".docker").mkdir()
        auth = base64.b64encode(f"ops:{password}".encode()).decode()
        (tmp_path / ".docker" / "config.json").write_text(f'{{"auths": {{"{registry.address}": {{"auth": "{auth}"}}}}}}')
        again = wasm_mcp("pull", ref, "--plugins", str(plugins), "--name", "again", env=env)
        assert password not in again.stdout + again.stderr
        assert (plugins / "again.wasm").exists()
        # From docker's credential helper (credsStore), asked with `get` and
        # the registry on stdin, before the auths entry.
        helpers = tmp_path / "bin"
        helpers.mkdir()
        answer = json.dumps({"ServerURL": registry.address, "Username": "ops", "Secret": password})
        helper = helpers / "docker-credential-wasmtest"
        helper.write_text(
            "#!/bin/sh\nread server\n"
            f'if [ "$1" = get ] && [ "$server" = "{registry.address}" ]; then echo \'{answer}\'; '
            "else echo 'credentials not found in native keychain'; exit 1; fi\n")
        helper.chmod(0o755)
        stuck = helpers / "docker-credential-stuck"
        stuck.write_text("#!/bin/sh\nexec sleep 600\n")
        stuck.chmod(0o755)
        (tmp_path / ".docker" / "config.json").write_text(json.dumps(
            {"credsStore": "wasmtest", "auths": {registry.address: {"auth": base64.b64encode(b"ops:wrong").decode()}}}))
        helped = dict(env, PATH=f"{helpers}:{env['PATH']}")
        stored = wasm_mcp("pull", ref, "--plugins", str(plugins), "--name", "stored", env=helped)
        assert (plugins / "stored.wasm").exists()
        # A helper that never answers is given up after a bounded wait, and
        # the auths entry (here a wrong one) is used instead.
        (tmp_path / ".docker" / "config.json").write_text(json.dumps(
            {"credHelpers": {registry.address: "stuck"}, "credsStore": "wasmtest"}))
        started = time.monotonic()
        gave_up = wasm_mcp("pull", ref, "--plugins", str(plugins), "--name", "never", env=helped, check=False)
        assert gave_up.returncode != 0 and time.monotonic() - started < 60
        assert "docker-credential-stuck did not answer" in gave_up.stderr, gave_up.stderr
        for done in (stored, gave_up):
            assert password not in done.stdout + done.stderr
    finally:
        registry.close()


def test_registry_credentials_come_from_the_config_with_the_password_from_a_secret_source(
        tmp_path, cache_dir, host_env):
    password = f"pw-{os.urandom(8).hex()}"
    registry = Registry(tmp_path, {"ops": password})
    try:
        secret = tmp_path / "registry-password"
        secret.write_text(password + "\n")
        login = f'[registries."{registry.address}"]\nusername = "ops"\npassword = {{ file = "{secret}" }}\n'
        env = environment(tmp_path, cache_dir, host_env, login)
        env["HOME"] = str(tmp_path)  # no docker config.json of the machine's
        env["RUST_LOG"] = "debug"
        ref = f"oci://{registry.address}/tools/hello:1"
        plugins = tmp_path / "plugins"
        plugins.mkdir()
        key = tmp_path / "signing.key"
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-out", str(key)], check=True, capture_output=True)
        runs = [wasm_mcp("push", str(PLUGINS / "hello.wasm"), ref, env=env),
                wasm_mcp("sign", ref, "--key", str(key), env=env),
                wasm_mcp("pull", ref, "--plugins", str(plugins), env=env)]
        assert (plugins / "hello.wasm").read_bytes() == (PLUGINS / "hello.wasm").read_bytes()
        # The config's login comes before the environment's.
        wrong_env = dict(env, WASM_MCP_OCI_USERNAME="ops", WASM_MCP_OCI_PASSWORD="wrong")
        runs.append(wasm_mcp("pull", ref, "--plugins", str(plugins), "--name", "again", env=wrong_env))
        assert (plugins / "again.wasm").exists()
        # A wrong password is refused by the registry; a missing secret says which.
        secret.write_text("wrong\n")
        runs.append(wasm_mcp("pull", ref, "--plugins", str(plugins), "--name", "third", env=env, check=False))
        assert runs[-1].returncode != 0 and not (plugins / "third.wasm").exists()
        secret.unlink()
        runs.append(wasm_mcp("pull", ref, "--plugins", str(plugins), "--name", "third", env=env, check=False))
        assert runs[-1].returncode != 0
        assert f'registries."{registry.address}".password: secret file' in runs[-1].stderr, runs[-1].stderr
        header = base64.b64encode(f"ops:{password}".encode()).decode()
        for done in runs:
            shown = done.stdout + done.stderr
            assert password not in shown and header not in shown
    finally:
        registry.close()


def test_a_plugin_sourced_from_a_tag_follows_it_and_survives_the_registry_going_away(tmp_path, cache_dir, host_env):
    registry = Registry(tmp_path)
    ref = f"oci://{registry.address}/tools/moving:stable"
    env = environment(tmp_path, cache_dir, host_env,
                      f'oci_poll_secs = 1\n[plugins.moving]\nsource = "{ref}"\n')
    wasm_mcp("push", str(PLUGINS / "hello.wasm"), ref, env=env)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    host = RawHost(plugins, env)

    def names():
        return {t["name"] for t in host.request("tools/list")["result"]["tools"]}

    def until(predicate, what):
        deadline = time.monotonic() + 120
        while not predicate():
            assert time.monotonic() < deadline, f"{what}: {host.log()[-3000:]}"
            time.sleep(0.2)

    try:
        host.initialize()
        until(lambda: "greet" in names(), "the tag's plugin was never served")
        # The tag moves to another component: the plugin is reloaded, and
        # clients are told.
        host.pending.clear()
        wasm_mcp("push", str(FIXTURES / "evil.wasm"), ref, env=env)
        until(lambda: "residue" in names(), "the moved tag was never followed")
        assert "greet" not in names()
        assert any(m.get("method") == TOOLS_CHANGED for m in host.pending)
        # The registry goes away: the plugin keeps serving what it had.
        registry.close()
        host.wait_for_log("pulling " + ref.removeprefix("oci://"))
        assert "residue" in names()
        response = host.request("tools/call", {"name": "residue", "arguments": {"megabytes": 0}})
        assert response["result"]["content"][0]["text"] == "found 0", response
    finally:
        host.close()
        if registry.proc.poll() is None:
            registry.close()
