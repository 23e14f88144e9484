"""The sandbox under attack: a hostile plugin tries every way out of its
grants, and a misbehaving one tries to exhaust the host. Every attempt must
fail, and every failure must stay inside the one call."""

import http.server
import json
import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from conftest import BINARY, FIXTURES, PLUGINS, RawHost

SECRET = "the host's secret"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory, cache_dir):
    base = tmp_path_factory.mktemp("sandbox")
    root = base / "root"
    root.mkdir()
    (root / "inside.txt").write_text("inside the root")
    (base / "secret.txt").write_text(SECRET)
    (base / "root-evil").mkdir()
    (base / "root-evil" / "secret.txt").write_text(SECRET)
    os.symlink(base / "secret.txt", root / "link-file")
    os.symlink(base, root / "link-dir")
    os.symlink("../secret.txt", root / "relative-link")
    scratch = base / "scratch"
    scratch.mkdir()
    plugins = base / "plugins"
    plugins.mkdir()
    shutil.copy(FIXTURES / "evil.wasm", plugins / "evil.wasm")
    shutil.copy(FIXTURES / "crashy.wasm", plugins / "crashy.wasm")
    (plugins / "evil.toml").write_text(
        'env = ["EVIL_GRANTED", "EVIL_SECRET", "HOME"]\n'
        'hosts = ["127.0.0.1", "example.com"]\n'
        "[roots]\n"
        'data = "read-write"\n'  # asks for more than the root allows
        'scratch = "read-write"\n'
        'elsewhere = "read-only"\n'
    )
    config = base / "config.toml"
    config.write_text(
        f'[server]\ncache_dir = "{cache_dir}"\n\n'
        f'[roots.data]\npath = "{root}"\n\n'
        f'[roots.scratch]\npath = "{scratch}"\nmode = "read-write"\n\n'
        '[plugins.evil]\nroots = ["data", "scratch"]\nenv = ["EVIL_GRANTED"]\nhosts = ["127.0.0.1"]\n\n'
        "[plugins.evil.limits]\nmemory_mb = 128\nmax_result_mb = 8\nmax_concurrent_calls = 1\n\n"
        "[plugins.crashy.limits]\ncall_timeout_ms = 500\n"
    )
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="info", EVIL_GRANTED="yes", EVIL_SECRET=SECRET)
    return {"base": base, "root": root, "scratch": scratch, "plugins": plugins, "config": config, "env": env}


@pytest.fixture(scope="module")
def host(sandbox):
    host = RawHost(sandbox["plugins"], sandbox["env"])
    host.initialize()
    yield host
    host.close()


def call(host, tool, **arguments):
    response = host.request("tools/call", {"name": tool, "arguments": arguments}, timeout=120)
    assert "result" in response, response
    result = response["result"]
    text = "".join(c.get("text", "") for c in result["content"])
    return bool(result.get("isError")), text


def assert_denied(host, tool, **arguments):
    failed, text = call(host, tool, **arguments)
    assert failed, f"{tool}({arguments}) succeeded: {text[:200]}"
    assert SECRET not in text
    return text


def test_the_load_reports_what_was_asked_granted_and_denied(host, sandbox):
    log = host.wait_for_log("granted:")
    assert "root data (read-only) at /data" in log
    assert "root scratch (read-write) at /scratch" in log
    assert "root data: write access (the root is read-only)" in log
    assert "root elsewhere: no such root" in log
    assert "env EVIL_SECRET: not allowed" in log and "env HOME: not allowed" in log
    assert "host 127.0.0.1" in log and "host example.com: not allowed" in log
    shown = subprocess.run(
        [str(BINARY), "inspect", str(sandbox["plugins"] / "evil.wasm"), "--config", str(sandbox["config"])],
        capture_output=True, text=True, env=sandbox["env"], timeout=300,
    )
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "root  data (read-write)" in out  # asked
    assert "root data (read-only) at /data" in out  # granted
    assert "env EVIL_SECRET: not allowed to plugin evil" in out  # denied


def test_granted_files_are_readable(host):
    assert call(host, "read", path="/data/inside.txt") == (False, "inside the root")
    failed, names = call(host, "list", path="/data")
    assert not failed and "inside.txt" in names.split("\n")


@pytest.mark.parametrize(
    "path",
    ["/data/../secret.txt", "/data/../../../../etc/passwd", "/etc/passwd", "/secret.txt", "../secret.txt",
     "secret.txt", "/data/./../root-evil/secret.txt", "/data-evil/secret.txt", "/root-evil/secret.txt"],
)
def test_traversal_and_absolute_paths_fail(host, path):
    assert_denied(host, "read", path=path)


@pytest.mark.parametrize("path", ["/data/link-file", "/data/relative-link", "/data/link-dir/secret.txt"])
def test_symlinks_out_of_the_root_fail(host, path):
    assert_denied(host, "read", path=path)


def test_a_symlinked_folder_out_of_the_root_cannot_be_listed(host):
    assert_denied(host, "list", path="/data/link-dir")


def test_a_read_only_root_refuses_every_change(host, sandbox):
    assert_denied(host, "write", path="/data/new.txt", content="x")
    assert_denied(host, "write", path="/data/inside.txt", content="overwritten")
    assert_denied(host, "rename", **{"from": "/data/inside.txt", "to": "/data/moved.txt"})
    assert_denied(host, "delete", path="/data/inside.txt")
    assert_denied(host, "mkdir", path="/data/sub")
    assert_denied(host, "symlink", **{"from": "inside.txt", "to": "/data/alias"})
    assert sorted(p.name for p in sandbox["root"].iterdir()) == ["inside.txt", "link-dir", "link-file", "relative-link"]
    assert (sandbox["root"] / "inside.txt").read_text() == "inside the root"


def test_a_read_write_root_allows_changes_inside_only(host, sandbox):
    assert call(host, "write", path="/scratch/a.txt", content="hello") == (False, "wrote /scratch/a.txt")
    assert call(host, "rename", **{"from": "/scratch/a.txt", "to": "/scratch/b.txt"})[0] is False
    assert (sandbox["scratch"] / "b.txt").read_text() == "hello"
    assert_denied(host, "rename", **{"from": "/scratch/b.txt", "to": "/scratch/../stolen.txt"})
    assert_denied(host, "write", path="/scratch/../planted.txt", content="x")
    # A link the plugin makes cannot lead out either.
    call(host, "symlink", **{"from": "/etc", "to": "/scratch/etc"})
    call(host, "symlink", **{"from": "../secret.txt", "to": "/scratch/up"})
    assert_denied(host, "read", path="/scratch/etc/passwd")
    assert_denied(host, "read", path="/scratch/up")
    assert call(host, "delete", path="/scratch/b.txt")[0] is False
    assert not (sandbox["base"] / "stolen.txt").exists() and not (sandbox["base"] / "planted.txt").exists()


def test_only_granted_environment_variables_are_visible(host):
    assert call(host, "env", name="EVIL_GRANTED") == (False, "yes")
    assert_denied(host, "env", name="EVIL_SECRET")
    assert_denied(host, "env", name="HOME")
    assert_denied(host, "env", name="PATH")
    assert call(host, "env_all") == (False, "EVIL_GRANTED")


def test_raw_sockets_and_name_lookups_are_denied(host):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        assert_denied(host, "tcp", address=f"127.0.0.1:{port}")
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(0.5)
    try:
        assert_denied(host, "udp", address=f"127.0.0.1:{receiver.getsockname()[1]}")
        with pytest.raises(socket.timeout):
            receiver.recv(16)
    finally:
        receiver.close()
    assert_denied(host, "resolve", name="localhost")


@pytest.fixture
def web_server():
    """A local HTTP server that records the paths it was asked for."""
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            body = b"hello from the test server"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], seen
    server.shutdown()


def test_http_reaches_granted_hosts_only(host, web_server):
    port, seen = web_server
    assert call(host, "http_get", url=f"http://127.0.0.1:{port}/granted") == (False, "200 hello from the test server")
    assert seen == ["/granted"]
    text = assert_denied(host, "http_get", url=f"http://localhost:{port}/by-another-name")
    assert "HttpRequestDenied" in text
    assert_denied(host, "http_get", url="http://example.com/")  # asked for, not allowed by the config
    assert_denied(host, "http_get", url=f"http://[::1]:{port}/v6")
    assert seen == ["/granted"]


def test_an_infinite_loop_is_stopped_at_the_deadline(host):
    # After a second with no plugin code running the epoch ticker rests;
    # the loop's call must wake it, or nothing would stop the loop.
    time.sleep(1.5)
    started = time.monotonic()
    failed, text = call(host, "spin")
    stopped_after = time.monotonic() - started
    assert failed and "ran longer than" in text
    print(f"spin stopped {stopped_after * 1000 - 500:.1f} ms after its 500 ms deadline")
    assert call(host, "read", path="/data/inside.txt") == (False, "inside the root")


def test_calls_over_the_concurrency_limit_wait_their_turn(host):
    # evil may run one call at a time. Each `hold` fails if it finds the lock
    # file of another call still running, so all succeed only if none overlap.
    ids = [f"hold-{i}" for i in range(4)]
    for id_ in ids:
        host.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                   "params": {"name": "hold", "arguments": {"path": "/scratch/lock", "ms": 100}}})
    for id_ in ids:
        result = host.response(id_, timeout=120)["result"]
        assert result["content"][0]["text"] == "held alone", result


def test_no_call_finds_what_an_earlier_call_left_in_memory(tmp_path, sandbox):
    """Each call gets a fresh instance. The host resets a finished call's
    memory in place (the pages it wrote, up to a bound, back to the image)
    or gives it back to the OS; either way the next call in that memory
    finds the data segment, the zeroed statics, the stack and the grown heap
    as they were, however scattered the pages written. Checked with the
    baseline build (memory on demand) and the optimised one (pooled memory
    reused in place), from an empty cache."""
    config = tmp_path / "config.toml"
    config.write_text(
        sandbox["config"].read_text().replace('cache_dir = "', f'cache_dir = "{tmp_path}/cache" # ', 1)
    )
    env = dict(sandbox["env"], WASM_MCP_CONFIG=str(config), RUST_LOG="info,wasm_mcp::registry=debug")
    host = RawHost(sandbox["plugins"], env)
    try:
        host.initialize()
        # (MiB, scattered pages). 0 MiB: only the image and the first pages;
        # 3 MiB: within the part reset in place (4 MiB); 6 MiB: past it.
        # Scattered pages: written runs past the reset's scan (1 024 runs).
        sizes = [(0, 0), (3, 0), (0, 0), (1, 300), (6, 0), (0, 0), (0, 1500), (0, 0)]

        def residue_left(megabytes, scattered):
            return call(host, "residue", megabytes=megabytes, scattered=scattered)

        for size in sizes:
            assert residue_left(*size) == (False, "found 0"), size
        deadline = time.monotonic() + 300
        while not any("optimised build in place" in line and "evil" in line for line in host.log().splitlines()):
            assert time.monotonic() < deadline, host.log()[-3000:]
            time.sleep(0.1)
        for _ in range(3):
            for size in sizes:
                assert residue_left(*size) == (False, "found 0"), size
    finally:
        host.close()


def test_a_call_past_the_hosts_instances_fails_clearly_and_the_host_goes_on(tmp_path, cache_dir):
    """[server] max_instances caps the instances alive at once: a call that
    finds them all in use fails with a tool error that says so."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins)
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\nmax_instances = 1\n')
    host = RawHost(plugins, dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="info"))
    try:
        host.initialize()
        host.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                   "params": {"name": "countdown", "arguments": {"steps": 3, "delay_ms": 1000},
                              "_meta": {"progressToken": "slow"}}})
        # Its first progress comes from inside the instance, which it then
        # holds for 3 s: a call sent after that finds no instance free.
        while True:
            message = host.read()
            assert message.get("id") != "slow", message
            if message.get("method") == "notifications/progress":
                break
            host.pending.append(message)
        failed, text = call(host, "greet", name="x")
        assert failed and "[server] max_instances" in text, text
        slow = host.response("slow", timeout=60)["result"]
        assert slow["content"][0]["text"] == "counted down from 3", slow
        assert call(host, "greet", name="x") == (False, "Hello, x!")
        # A finished call's instance is torn down after its answer is sent;
        # a client that calls again at once still finds it free.
        for i in range(300):
            assert call(host, "greet", name=str(i)) == (False, f"Hello, {i}!")
    finally:
        host.close()


@pytest.mark.parametrize("load_timeout_ms", [None, 1000])
def test_a_plugin_added_while_every_instance_is_in_use_loads_once_one_is_free(
        tmp_path, cache_dir, load_timeout_ms):
    """A load asks the new plugin for its lists in an instance too; with
    every instance slot in use it waits for one (a call would fail), even
    past its load timeout (the 4 s call outlasts 1000 ms)."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins)
    config = tmp_path / "config.toml"
    limits = "" if load_timeout_ms is None else f"[limits]\nload_timeout_ms = {load_timeout_ms}\n"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\nmax_instances = 1\n{limits}')
    host = RawHost(plugins, dict(os.environ, WASM_MCP_CONFIG=str(config),
                                 RUST_LOG="info,wasm_mcp::reload=trace"))
    try:
        host.initialize()
        host.send({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                   "params": {"name": "countdown", "arguments": {"steps": 4, "delay_ms": 1000},
                              "_meta": {"progressToken": "slow"}}})
        while host.read().get("method") != "notifications/progress":
            pass
        shutil.copy(PLUGINS / "stats.wasm", tmp_path / "stats.wasm")
        os.rename(tmp_path / "stats.wasm", plugins / "stats.wasm")
        host.wait_for_log("stats.wasm")  # seen while the call holds the instance
        slow = host.response("slow", timeout=60)["result"]
        assert slow["content"][0]["text"] == "counted down from 4", slow
        changed = "notifications/tools/list_changed"
        if not any(m.get("method") == changed for m in host.pending):
            while host.read().get("method") != changed:
                pass
        assert call(host, "stats", numbers=[1, 3]) == (False, "count 2, mean 2, min 1, max 3")
        log = host.log()
        assert "plugin not loaded" not in log and "not reloaded" not in log
        if load_timeout_ms is not None:
            assert "the plugin waits on to load" in log
    finally:
        host.close()


def test_a_memory_bomb_is_contained(host):
    failed, _ = call(host, "memory_bomb")
    assert failed
    assert call(host, "read", path="/data/inside.txt") == (False, "inside the root")


def test_unbounded_recursion_is_contained(host):
    # On the wasm call stack: the engine's stack limit.
    failed, text = call(host, "recurse")
    assert failed and "call stack exhausted" in text, text
    # On the shadow stack in linear memory: it runs off the bottom of memory.
    failed, text = call(host, "recurse_frames")
    assert failed and "out of bounds memory access" in text, text
    assert call(host, "read", path="/data/inside.txt") == (False, "inside the root")


def test_a_result_over_the_limit_is_rejected(host):
    failed, text = call(host, "huge", megabytes=100)
    assert failed and "over this plugin's limit" in text
    assert call(host, "huge", megabytes=1) == (False, "x" * (1 << 20))


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_ten_thousand_traps_leave_the_host_memory_flat(host):
    def traps(count: int) -> None:
        batch = 200
        for start in range(0, count, batch):
            ids = []
            for i in range(start, start + batch):
                ids.append(f"trap-{i}")
                host.send({"jsonrpc": "2.0", "id": ids[-1], "method": "tools/call",
                           "params": {"name": "trap", "arguments": {}}})
            for id_ in ids:
                response = host.response(id_, timeout=120)
                assert response["result"]["isError"] is True

    traps(1000)  # warm up: pools, caches, allocator arenas
    before = rss_kib(host.proc.pid)
    traps(10_000)
    after = rss_kib(host.proc.pid)
    print(f"host RSS before {before / 1024:.1f} MiB, after 10 000 traps {after / 1024:.1f} MiB")
    assert after - before < 32 * 1024, (before, after)
    assert call(host, "read", path="/data/inside.txt") == (False, "inside the root")


def test_a_component_importing_what_the_host_does_not_provide_fails_at_load(tmp_path, host_env):
    shutil.copy(FIXTURES / "alien.wasm", tmp_path / "alien.wasm")
    shutil.copy(FIXTURES / "crashy.wasm", tmp_path / "crashy.wasm")
    host = RawHost(tmp_path, host_env)
    try:
        host.initialize()
        names = [t["name"] for t in host.request("tools/list")["result"]["tools"]]
        assert "trap" in names  # the other plugin loads
        log = host.wait_for_log("plugin not loaded")
        assert "alien.wasm" in log and "fixture:alien/thing" in log
    finally:
        host.close()
    shown = subprocess.run([str(BINARY), "inspect", str(FIXTURES / "alien.wasm")], capture_output=True, text=True, timeout=120)
    assert "fixture:alien/thing" in shown.stdout and "not servable" in shown.stdout


def test_editing_a_manifest_regrants_without_a_restart(tmp_path, sandbox):
    shutil.copy(FIXTURES / "evil.wasm", tmp_path / "evil.wasm")
    host = RawHost(tmp_path, sandbox["env"])
    try:
        host.initialize()
        assert_denied(host, "env", name="EVIL_GRANTED")
        (tmp_path / "evil.toml").write_text('env = ["EVIL_GRANTED"]\n')
        host.wait_for_log("plugin reloaded")
        assert call(host, "env", name="EVIL_GRANTED") == (False, "yes")
        assert_quiet_lists(host)
    finally:
        host.close()


def assert_quiet_lists(host):
    """The tool list did not change, so no list_changed was sent."""
    assert host.request("ping")["result"] == {}
    assert [m for m in host.pending if "list_changed" in m.get("method", "")] == []


def test_a_plugin_sees_only_granted_roots_inside_the_clients_roots(sandbox):
    """The Python client declares MCP roots; the plugin's folders follow them."""
    import anyio
    from mcp import Client, StdioServerParameters, types

    base = sandbox["base"]
    client_roots = [base.as_uri()]

    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=uri, name="root") for uri in client_roots])

    async def visible(c, path):
        result = await c.call_tool("list", {"path": path})
        return not result.is_error

    async def until(condition):
        with anyio.fail_after(60):
            while not await condition():
                await anyio.sleep(0.05)

    async def scenario():
        params = StdioServerParameters(command=str(BINARY), args=["serve", "--plugins", str(sandbox["plugins"])],
                                       env=sandbox["env"])
        async with Client(params, mode="legacy", read_timeout_seconds=120, list_roots_callback=list_roots) as c:
            # The client's root holds both granted folders.
            await until(lambda: visible(c, "/data"))
            assert await visible(c, "/scratch")
            # Now it names only the scratch folder.
            client_roots[:] = [sandbox["scratch"].as_uri()]
            await c.send_roots_list_changed()

            async def data_hidden():
                return not await visible(c, "/data")

            await until(data_hidden)
            assert await visible(c, "/scratch")
            # A root outside every granted folder shows nothing.
            client_roots[:] = [(base / "root-evil").as_uri()]
            await c.send_roots_list_changed()

            async def scratch_hidden():
                return not await visible(c, "/scratch")

            await until(scratch_hidden)
            assert not await visible(c, "/data")

    anyio.run(scenario)


def test_secrets_reach_the_plugin_from_a_file_or_a_host_variable_and_show_nowhere_else(tmp_path, cache_dir):
    token, password = f"tok-{os.urandom(8).hex()}", f"pw-{os.urandom(8).hex()}"
    (tmp_path / "token.txt").write_text(token + "\n")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(FIXTURES / "evil.wasm", plugins / "evil.wasm")
    (plugins / "evil.toml").write_text('env = ["API_TOKEN", "DB_PASSWORD", "MISSING", "HOST_DB_PASSWORD"]\n')
    config = tmp_path / "config.toml"
    config.write_text(
        f'[server]\ncache_dir = "{cache_dir}"\n'
        "[plugins.evil.secrets]\n"
        'API_TOKEN = { file = "token.txt" }\n'  # relative to the config
        'DB_PASSWORD = { env = "HOST_DB_PASSWORD" }\n'
        'MISSING = { file = "nowhere.txt" }\n'
    )
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="wasm_mcp=trace", HOST_DB_PASSWORD=password)
    host = RawHost(plugins, env)
    try:
        host.initialize()
        assert call(host, "env", name="API_TOKEN") == (False, token)
        assert call(host, "env", name="DB_PASSWORD") == (False, password)
        # The source variable itself is not granted, nor a secret without a value.
        assert call(host, "env", name="HOST_DB_PASSWORD")[0]
        assert call(host, "env", name="MISSING")[0]
        log = host.wait_for_log("env MISSING: secret file")
        assert "env HOST_DB_PASSWORD: not allowed to plugin evil" in log
    finally:
        log = host.close()
    assert token not in log and password not in log
    shown = subprocess.run(
        [str(BINARY), "inspect", str(plugins / "evil.wasm"), "--config", str(config)],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert shown.returncode == 0, shown.stderr
    assert "env API_TOKEN" in shown.stdout and "env DB_PASSWORD" in shown.stdout
    assert token not in shown.stdout + shown.stderr and password not in shown.stdout + shown.stderr


def plugins_with_a_stub_of_a_changed_contract(tmp_path, old, new, world):
    """tmp_path/plugins with hello.wasm and stub.wasm: a component made with
    wasm-tools against the contract with `old` replaced by `new`, whose
    core functions are stubs that trap."""
    from conftest import ROOT

    wasm_tools = ROOT / ".cache" / "venv" / "bin" / "wasm-tools"
    wit = tmp_path / "wit"
    shutil.copytree(ROOT / "wit", wit)
    contract = (wit / "plugin.wit").read_text()
    assert contract.count(old) == 1
    (wit / "plugin.wit").write_text(contract.replace(old, new))
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins)
    core = tmp_path / "core.wasm"
    subprocess.run([wasm_tools, "component", "embed", "--dummy", "--world", world, wit, "-o", core], check=True)
    subprocess.run([wasm_tools, "component", "new", core, "-o", plugins / "stub.wasm"], check=True)
    return plugins


# (world, the contract's signature, a wrongly typed one): each the only
# change to the contract a component is then made against.
WRONG_TYPES = [
    ("tools-plugin", "list-tools: func() -> list<tool>;", "list-tools: func() -> u32;"),
    ("tools-plugin", "call-tool: func(name: string, arguments: json) -> result<call-result, error>;",
     "call-tool: func(name: string, arguments: json) -> string;"),
    ("resources-plugin", "read-resource: func(uri: string) -> result<list<resource-contents>, error>;",
     "read-resource: func(uri: u64) -> result<list<resource-contents>, error>;"),
    ("tools-prompts-plugin",
     "get-prompt: func(name: string, arguments: list<tuple<string, string>>) -> result<prompt-result, error>;",
     "get-prompt: func(name: string) -> result<prompt-result, error>;"),
    ("plugin", "complete: func(request: completion-request) -> result<completion, error>;",
     "complete: func(request: completion-request) -> result<list<string>, error>;"),
]


@pytest.mark.parametrize("world,right,wrong", WRONG_TYPES, ids=[w[2].split(":")[0] for w in WRONG_TYPES])
def test_a_contract_export_of_the_wrong_type_is_refused_at_load(tmp_path, host_env, world, right, wrong):
    """A component made against a contract with one function's type changed
    (its core functions are stubs that trap) is refused when it loads, with
    the export named; before any of its functions runs, so the calls it
    would make do not fail one by one. The other plugins are served."""
    plugins = plugins_with_a_stub_of_a_changed_contract(tmp_path, right, wrong, world)
    function = wrong.split(":")[0]
    host = RawHost(plugins, host_env)
    try:
        host.initialize()
        names = [t["name"] for t in host.request("tools/list")["result"]["tools"]]
        assert "greet" in names
        log = host.wait_for_log("plugin not loaded")
        assert f"its export `{function}` of wasm-mcp:plugin/" in log, log
        assert "does not have the contract's type" in log, log
        assert "unreachable" not in log, "no stub ran"
    finally:
        host.close()


# (what changes in the contract, what the host says of the component made against it)
UNSERVABLE = [
    (("    call-tool: func(name: string, arguments: json) -> result<call-result, error>;\n", ""),
     "its export `wasm-mcp:plugin/tools@0.1.0` lacks the contract's function `call-tool`"),
    (("package wasm-mcp:plugin@0.1.0;", "package wasm-mcp:plugin@0.2.0;"),
     "it exports `wasm-mcp:plugin/tools@0.2.0`, which is not an interface of the contract"),
]


@pytest.mark.parametrize("change,said", UNSERVABLE, ids=["lacking", "other-version"])
def test_a_contract_interface_it_cannot_serve_is_refused_not_served_as_plain_tools(tmp_path, host_env, change,
                                                                                   said):
    """An interface of the contract's package with a function missing, or
    of another contract version, is refused with the reason; it is not
    taken for a plain component's functions (`tools.list-tools` a tool)."""
    plugins = plugins_with_a_stub_of_a_changed_contract(tmp_path, *change, "tools-plugin")
    host = RawHost(plugins, host_env)
    try:
        host.initialize()
        names = [t["name"] for t in host.request("tools/list")["result"]["tools"]]
        assert "greet" in names and not any(n.startswith("tools.") for n in names), names
        log = host.wait_for_log("plugin not loaded")
        assert said in log, log
    finally:
        host.close()
