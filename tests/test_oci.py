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
import threading
import time
import urllib.error
import urllib.request

import bcrypt
import pytest

from conftest import BINARY, FIXTURES, PLUGINS, HttpHost, RawHost

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


class HostileRegistry:
    """A registry written to hurt: it trickles a manifest a byte every two
    seconds (`slow/...`); answers `forged/...` with an error body of many
    lines that imitate the host's own log; streams a manifest of 300 MB
    (`flood/...`); asks for a token (`tokened/...`, a real Bearer challenge,
    then a manifest that says it is 200 MB) or for a token whose answer is
    300 MB (`bigtoken/...`); serves an image index (`index/...`)."""

    FORGED = "\n2026-01-01T00:00:00Z  INFO wasm_mcp: pulled plugin=admin signature=verified\n"

    def __init__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        import threading

        hostile = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                hostile.requests.append((self.path, self.headers.get("Authorization")))
                if self.path == "/v2/":
                    return self.answer(200, b"{}")
                if self.path.startswith("/v2/flood/") or self.path.startswith("/bigtoken"):
                    return self.flood(300 << 20)
                if self.path.startswith("/v2/index/"):
                    return self.answer(200, json.dumps({
                        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                       "digest": "sha256:" + "a" * 64, "size": 7}]}).encode())
                if self.path.startswith("/token"):
                    return self.answer(200, b'{"token": "good-token"}')
                for repo, realm in (("tokened", "token"), ("bigtoken", "bigtoken")):
                    if self.path.startswith(f"/v2/{repo}/"):
                        if self.headers.get("Authorization") != "Bearer good-token":
                            self.send_response(401)
                            self.send_header("WWW-Authenticate", f'Bearer realm="http://{hostile.address}/{realm}",'
                                                                 'service="hostile"')
                            self.send_header("Content-Length", "0")
                            self.end_headers()
                            return
                        self.send_response(200)
                        self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
                        self.send_header("Content-Length", str(200 << 20))
                        self.end_headers()
                        return
                if self.path.startswith("/v2/slow/"):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    try:
                        while not hostile.stopping:
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(2)
                    except OSError:
                        pass
                    return
                body = json.dumps({"errors": [{"code": "MANIFEST_UNKNOWN",
                                               "message": hostile.FORGED * 2000}]}).encode()
                return self.answer(404, body)

            do_HEAD = do_GET

            def flood(self, size):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b" " * (1 << 20)
                try:
                    for _ in range(size >> 20):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass

            def answer(self, status, body):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.stopping = False
        self.requests = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.stopping = True
        self.server.shutdown()
        self.server.server_close()


def serve_sources_beside_a_good_one(tmp_path, cache_dir, host_env, registry, config, within):
    """A host following the OCI sources `config` names (with the [server]
    lines first) and `good`, hello on the real registry: started, and
    waited for until `good` is served, within `within` seconds."""
    good = f"oci://{registry.address}/tools/good:1"
    env = environment(tmp_path, cache_dir, host_env, config + f'[plugins.good]\nsource = "{good}"\n')
    wasm_mcp("push", str(PLUGINS / "hello.wasm"), good, env=env)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    host = RawHost(plugins, env)
    host.initialize()
    started = time.monotonic()
    while "greet" not in {t["name"] for t in host.request("tools/list")["result"]["tools"]}:
        if time.monotonic() - started > within:
            host.close()
            raise AssertionError(f"the good source waited over {within} s: {host.log()[-3000:]}")
        time.sleep(0.1)
    return host, plugins


def test_a_slow_or_lying_registry_delays_no_other_source_and_forges_no_log_line(
        tmp_path, cache_dir, host_env, registry):
    """Three sources: one on a registry that trickles its manifest, one on
    a registry whose error body imitates log lines, one on a real registry.
    The real one is served at once; the slow pull ends at the deadline; the
    lying registry's text reaches the log short and escaped, on one line."""
    hostile = HostileRegistry()
    # The good source is served well within the slow pull's deadline.
    host, _ = serve_sources_beside_a_good_one(
        tmp_path, cache_dir, host_env, registry,
        "oci_pull_timeout_secs = 30\noci_poll_secs = 0\n"
        # First in name order: it was pulled before the others.
        f'[plugins.aslow]\nsource = "oci://{hostile.address}/slow/plugin:1"\n'
        f'[plugins.forged]\nsource = "oci://{hostile.address}/forged/plugin:1"\n',
        within=15)
    try:
        log = host.wait_for_log("took longer than 30 s", timeout=90)
        assert "aslow" in log, log[-3000:]
        log = host.wait_for_log("plugin=forged", timeout=60) if "forged" not in log else log
        forged = [line for line in log.splitlines() if "pulled plugin=admin" in line]
        assert all("pulling oci://" in line or "pulling " in line for line in forged), forged
        assert len(forged) <= 1, f"{len(forged)} lines carry the registry's text"
        assert all(len(line) < 2000 for line in log.splitlines()), max(len(l) for l in log.splitlines())
        assert host.request("ping")["result"] == {}
    finally:
        host.close()
        hostile.close()


def test_what_a_registry_sends_is_read_bounded(tmp_path, cache_dir, host_env, registry):
    """A registry that streams a 300 MB manifest, one whose manifest says it
    is 200 MB (behind a real Bearer token exchange), and one whose token
    answer is 300 MB: each pull is refused at the cap of what it reads, the
    host's memory stays under the bound stated here, and a source on a real
    registry is served meanwhile."""
    hostile = HostileRegistry()
    host, plugins = serve_sources_beside_a_good_one(
        tmp_path, cache_dir, host_env, registry,
        # The manifest's cap at its default; the token's set here.
        "oci_poll_secs = 0\noci_max_token_kb = 32\n"
        f'[plugins.flood]\nsource = "oci://{hostile.address}/flood/plugin:1"\n'
        f'[plugins.tokened]\nsource = "oci://{hostile.address}/tokened/plugin:1"\n'
        f'[plugins.bigtoken]\nsource = "oci://{hostile.address}/bigtoken/plugin:1"\n'
        f'[plugins.index]\nsource = "oci://{hostile.address}/index/plugin:1"\n',
        within=60)
    try:
        for plugin in ("flood", "tokened", "bigtoken", "index"):
            host.wait_for_log(f"plugin={plugin}", timeout=120)
        log = host.log()
        assert "the manifest is over the limit of 4194304 bytes" in log, log[-3000:]
        assert "the manifest is 209715200 bytes, over the limit of 4194304" in log, log[-3000:]
        assert "the token is over the limit of 32768 bytes" in log, log[-3000:]
        assert "an image index, not a manifest" in log, log[-3000:]
        # The token exchange was the registry's: asked with the scope, then used.
        assert any(p.startswith("/token?") and "scope=repository%3Atokened%2Fplugin%3Apull" in p
                   and "service=hostile" in p for p, _ in hostile.requests), hostile.requests
        assert ("/v2/tokened/plugin/manifests/1", "Bearer good-token") in hostile.requests, hostile.requests
        peak = host.status("VmHWM")
        print(f"peak RSS while registries flood: {peak // 1024} MiB")
        assert peak < 300 * 1024, peak
        assert not (plugins / "flood.wasm").exists()
        assert host.request("ping")["result"] == {}
    finally:
        host.close()
        hostile.close()


def test_a_plugins_skills_travel_with_it_and_a_broken_skill_stops_the_push(tmp_path, cache_dir, host_env, registry):
    env = environment(tmp_path, cache_dir, host_env)
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(PLUGINS / "time.wasm", source / "clock.wasm")
    shutil.copytree(PLUGINS / "time.skills", source / "clock.skills")
    ref = f"oci://{registry.address}/tools/clock:1"
    wasm_mcp("push", str(source / "clock.wasm"), ref, env=env)

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "clock.skills" / "stale").mkdir(parents=True)
    host = RawHost(plugins, env)
    try:
        host.initialize()
        wasm_mcp("pull", ref, "--plugins", str(plugins), env=env)
        deadline = time.monotonic() + 120
        while not host.request("skills/list")["result"]["skills"]:
            assert time.monotonic() < deadline, host.log()[-3000:]
            time.sleep(0.2)
        skill = host.request("skills/get", {"uri": "skill://clock/time-zones/SKILL.md"})["result"]["skill"]
        assert [f["uri"] for f in skill["resources"]] == [
            "skill://clock/time-zones/SKILL.md", "skill://clock/time-zones/references/zones.md"]
    finally:
        host.close()
    for path in (source / "clock.skills").rglob("*"):
        if path.is_file():
            assert (plugins / "clock.skills" / path.relative_to(source / "clock.skills")).read_bytes() == path.read_bytes()
    assert not (plugins / "clock.skills" / "stale").exists(), "the pulled version's skills replace the old ones"
    # Pulled again, the same skills are left as they are (not swapped).
    inode = os.stat(plugins / "clock.skills").st_ino
    wasm_mcp("pull", ref, "--plugins", str(plugins), env=env)
    assert os.stat(plugins / "clock.skills").st_ino == inode

    # A skill the host would refuse is refused before anything is pushed.
    os.symlink("/etc/passwd", source / "clock.skills" / "time-zones" / "passwd")
    refused = wasm_mcp("push", str(source / "clock.wasm"), f"oci://{registry.address}/tools/clock:2", env=env,
                       check=False)
    assert refused.returncode != 0 and "passwd is a symlink" in refused.stderr, refused.stderr


class GatedProxy:
    """A TCP proxy in front of a real registry that holds every connection
    until `open()`: a registry as slow as the test wants, and no slower."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.opened = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.held = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def open(self):
        self.opened.set()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.held += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        self.opened.wait()
        host, port = self.upstream.split(":")
        with client, socket.create_connection((host, int(port))) as server:
            def pipe(source, sink):
                try:
                    while data := source.recv(65536):
                        sink.sendall(data)
                except OSError:
                    pass
                finally:
                    try:
                        sink.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
            back = threading.Thread(target=pipe, args=(server, client), daemon=True)
            back.start()
            pipe(client, server)
            back.join(timeout=60)

    def close(self):
        self.opened.set()
        self.listener.close()


def test_a_host_is_not_ready_until_its_sources_first_pulls_have_loaded(tmp_path, cache_dir, host_env, registry):
    """A replica whose plugins come from OCI sources (Kubernetes, say) is
    sent traffic once /readyz says 200: by then every source's first pull
    has ended and what it pulled is served, so the first client after a
    rollout sees the whole catalogue, not an empty one."""
    proxy = GatedProxy(registry.address)
    ref = f"oci://{registry.address}/tools/gated:1"
    env = environment(tmp_path, cache_dir, host_env,
                      f'[plugins.gated]\nsource = "oci://{proxy.address}/tools/gated:1"\n')
    wasm_mcp("push", str(PLUGINS / "hello.wasm"), ref, env=env)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    host = HttpHost(plugins, env)
    base = host.url.rsplit("/", 1)[0]

    def readiness():
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=10) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    try:
        # The registry holds the pull: the folder (empty) has loaded, the
        # source has not, and the host says so.
        deadline = time.monotonic() + 60
        while proxy.held == 0:
            assert time.monotonic() < deadline, host.log()[-3000:]
            time.sleep(0.05)
        for _ in range(5):
            status, body = readiness()
            assert status == 503 and "the plugins are still loading" in body["reasons"], body
            time.sleep(0.2)
        proxy.open()
        deadline = time.monotonic() + 120
        while (status := readiness())[0] != 200:
            assert time.monotonic() < deadline, f"never ready: {status} {host.log()[-3000:]}"
            time.sleep(0.1)
        # Ready means served: no list_changed to wait for.
        from test_http_transport import modern
        listed = modern(host, 1, "tools/list").json()["result"]["tools"]
        assert "greet" in {tool["name"] for tool in listed}, listed
    finally:
        host.close()
        proxy.close()

