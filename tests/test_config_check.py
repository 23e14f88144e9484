"""`config check` and `serve` agree on every config: what the check
accepts, `serve` starts on and answers; what `serve` refuses, the check
refuses first, with the line; no config makes `serve` panic. With
`--plugins`, the check names what the config names that matches nothing
loaded (typos), and `serve` logs the same after its first load and after
a reload."""

import http.client
import shutil
import subprocess
import time

import pytest

from conftest import BINARY, PLUGINS, HostLog

# Exit code of a Rust panic.
PANIC = 101


def cache_line(host_env) -> str:
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    return f'[server]\ncache_dir = "{cache}"\n'


def check(tmp_path, text: str, *args: str) -> subprocess.CompletedProcess:
    config = tmp_path / "checked.toml"
    config.write_text(text)
    return subprocess.run([str(BINARY), "config", "check", *args, str(config)],
                          capture_output=True, text=True, timeout=300)


class Served(HostLog):
    """`serve` on a config: it exits, or says its URL on stdout."""

    def __init__(self, plugins, config, env, listen: bool):
        args = [str(BINARY), "serve", "--plugins", str(plugins), "--config", str(config)]
        if not listen:
            args += ["--http", "127.0.0.1:0"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self._start_log()
        self.url = self.proc.stdout.readline().decode().strip()

    def started(self) -> bool:
        return self.url.startswith(("http://", "https://"))

    def health(self) -> int:
        authority = self.url.split("/")[2].replace("0.0.0.0", "127.0.0.1")
        host, port = authority.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("GET", "/healthz")
        return conn.getresponse().status

    def close(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.log_reader.join(timeout=20)
        return self.log()


@pytest.fixture
def one_plugin(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    return folder


def agree(tmp_path, host_env, plugins, body: str, env_extra: dict | None = None) -> tuple[bool, str]:
    """Checks `body` (with the shared compile cache) and serves it; asserts
    the two agree and `serve` does not panic. Returns whether it was
    accepted, and what the check printed."""
    text = cache_line(host_env) + body
    checked = check(tmp_path, text, "--no-files")
    assert checked.returncode in (0, 1), checked
    config = tmp_path / "served.toml"
    config.write_text(text)
    env = dict(host_env, **(env_extra or {}))
    served = Served(plugins, config, env, listen="listen =" in body)
    try:
        if served.started():
            assert served.health() == 200, served.log()[-2000:]
        else:
            code = served.proc.wait(timeout=60)
            assert code != PANIC, f"serve panicked on:\n{text}\n{served.log()[-3000:]}"
            assert code == 1, served.log()[-2000:]
    finally:
        log = served.close()
    assert (checked.returncode == 0) == served.started(), (
        f"config check said {checked.stdout!r}\nserve {'started' if served.started() else 'refused'}:"
        f"\n{log[-2000:]}\non:\n{text}")
    return checked.returncode == 0, checked.stdout


# Each config `serve` refused late (or panicked on), with what the check
# must now say; and variations of each.
REFUSED = [
    ('[profiles.p]\npath = "/metrics"\n', "profiles.p.path"),
    ('[profiles.p]\npath = "/healthz"\n', "profiles.p.path"),
    ('[profiles.p]\npath = "/readyz"\n', "profiles.p.path"),
    ('[profiles.p]\npath = "/sse"\n', "profiles.p.path"),
    ('[profiles.p]\npath = "/messages"\n', "profiles.p.path"),
    ('[profiles.p]\npath = "/.well-known/oauth-protected-resource"\n', "profiles.p.path"),
    ('[profiles.p]\npath = "/mcp"\n', "profiles.p.path"),
    ('[profiles.a]\npath = "/x"\n[profiles.b]\npath = "/x"\n', "profile a's path too"),
    ('[http]\npath = "/"\n[profiles.metrics]\ninclude = ["hello.*"]\n', "profiles.metrics"),
    ('[http]\npath = "/.well-known"\n[profiles.oauth-protected-resource]\n', "profiles.oauth-protected-resource"),
    ('[http]\npath = "/a b"\n', "http.path"),
    ('[http]\npublic_url = "mcp.example.com/mcp"\n[http.auth]\ntokens = ["t"]\n', "http.public_url"),
    ('[http]\npublic_url = "ftp://mcp.example.com/mcp"\n[http.auth]\ntokens = ["t"]\n', "http.public_url"),
    ('[http.auth.jwt]\nissuer = "https://idp.example.com"\naudience = "a"\n'
     'jwks_url = "http://idp.example.com/jwks.json"\n', "http.auth.jwt.jwks_url"),
    ('[http.auth.jwt]\nissuer = "http://idp.example.com"\naudience = "a"\ndiscovery = true\n',
     "http.auth.jwt.issuer"),
    ('[http.auth.jwt]\nissuer = "i"\naudience = "a"\njwks_url = "idp.example.com/jwks"\n',
     "http.auth.jwt.jwks_url"),
    ('[http.auth]\nauthorization_servers = ["https://idp.example.com"]\n', "http.auth"),
    ('[http]\nlisten = "0.0.0.0:0"\n[http.auth]\ntokens = ["t"]\n', "http.public_url"),
    ('[http]\nlisten = "nowhere"\n', "http.listen"),
    ('[metrics]\nlisten = "127.0.0.1"\n', "metrics.listen"),
]


@pytest.mark.parametrize("body,key", REFUSED)
def test_what_serve_refuses_the_check_refuses_with_its_line(tmp_path, host_env, one_plugin, body, key):
    accepted, said = agree(tmp_path, host_env, one_plugin, body)
    assert not accepted
    assert key in said and "line " in said, said


ACCEPTED = [
    '[profiles.p]\ninclude = ["hello.*"]\n',
    '[profiles.p]\npath = "/tools"\n[profiles.q]\npath = "/mcp/q"\n',
    '[http]\npath = "/"\n[profiles.p]\n',
    '[http]\npublic_url = "https://mcp.example.com/mcp"\n[http.auth]\ntokens = ["t"]\n',
    '[http.auth.jwt]\nissuer = "https://idp.example.com"\naudience = "a"\n'
    'jwks_url = "http://127.0.0.1:9/jwks.json"\n',
    '[http.auth]\ntokens_env = "WASM_MCP_TEST_TOKENS"\n',
    '[http]\nlisten = "127.0.0.1:0"\n[metrics]\nlisten = "localhost:0"\n',
]


@pytest.mark.parametrize("body", ACCEPTED)
def test_what_the_check_accepts_serve_starts_on(tmp_path, host_env, one_plugin, body):
    accepted, said = agree(tmp_path, host_env, one_plugin, body, {"WASM_MCP_TEST_TOKENS": "a,b"})
    assert accepted, said


def test_a_source_needs_the_compile_cache(tmp_path):
    checked = check(tmp_path, '[server]\ncache_dir = ""\n[plugins.x]\nsource = "oci://r.example/x:1"\n',
                    "--no-files")
    assert checked.returncode == 1
    assert "line 4: plugins.x.source: needs the compile cache" in checked.stdout, checked.stdout


TYPOS = """
[plugins.helo]
scopes = ["x"]

[plugins.hello.tools.gret]
scopes = ["y"]

[plugins.hello.prompts.nothing]
scopes = ["y"]

[profiles.p]
include = ["hello.gr*", "helo.*"]
exclude = ["*.no-such-thing"]
"""


@pytest.fixture
def two_plugins(tmp_path):
    folder = tmp_path / "two"
    folder.mkdir()
    for name in ("hello", "notes"):
        shutil.copy(PLUGINS / f"{name}.wasm", folder / f"{name}.wasm")
    return folder


def test_the_check_names_what_matches_nothing(tmp_path, host_env, two_plugins):
    checked = check(tmp_path, cache_line(host_env) + TYPOS, "--no-files", "--plugins", str(two_plugins))
    said = checked.stdout
    assert checked.returncode == 1, said
    for expected in [
        'line 4: plugins.helo: no plugin of that name is loaded (loaded: hello, notes) (did you mean "hello"?)',
        'line 7: plugins.hello.tools."gret": plugin hello offers no such tool (did you mean "greet"?)',
        'line 10: plugins.hello.prompts."nothing": plugin hello offers no such prompt',
        'line 14: profiles.p.include: "helo.*" matches no item',
        'line 15: profiles.p.exclude: "*.no-such-thing" matches no item',
        "plugin notes is loaded but no section plugins.notes names it",
        "6 problem(s)",
    ]:
        assert expected in said, said
    # What matches something is not named.
    assert '"hello.gr*"' not in said

    # Without --plugins the same config is fine; with every name right, too.
    assert check(tmp_path, cache_line(host_env) + TYPOS, "--no-files").returncode == 0
    right = ('[plugins.hello.tools.greet]\nscopes = ["y"]\n[plugins.notes]\n'
             '[profiles.p]\ninclude = ["hello.gr*", "notes.*"]\n')
    checked = check(tmp_path, cache_line(host_env) + right, "--no-files", "--plugins", str(two_plugins))
    assert checked.returncode == 0, checked.stdout


def test_a_typo_in_a_section_name_is_named(tmp_path, host_env):
    folder = tmp_path / "fs"
    folder.mkdir()
    shutil.copy(PLUGINS / "filesystem.wasm", folder / "filesystem.wasm")
    text = cache_line(host_env) + '[plugins.filesytem]\nscopes = ["files"]\n'
    checked = check(tmp_path, text, "--no-files", "--plugins", str(folder))
    assert checked.returncode == 1
    assert 'plugins.filesytem: no plugin of that name is loaded (loaded: filesystem) (did you mean "filesystem"?)' \
        in checked.stdout, checked.stdout
    assert "plugin filesystem is loaded but no section plugins.filesystem names it" in checked.stdout


def test_serve_logs_what_matches_nothing_after_loads(tmp_path, host_env, two_plugins):
    config = tmp_path / "typos.toml"
    config.write_text(cache_line(host_env) + TYPOS)
    served = Served(two_plugins, config, host_env, listen=False)
    try:
        assert served.started(), served.log()[-2000:]
        for expected in [
            "plugins.helo: no plugin of that name is loaded",
            'plugins.hello.tools."gret": plugin hello offers no such tool',
            "plugin notes is loaded but no section plugins.notes names it",
            'profiles.p.exclude: "*.no-such-thing" matches no item',
        ]:
            served.wait_for_log(expected)
        # A plugin added while serving is looked at once it has loaded.
        shutil.copy(PLUGINS / "time.wasm", two_plugins / "time.wasm")
        served.wait_for_log("plugin time is loaded but no section plugins.time names it")
    finally:
        served.close()
