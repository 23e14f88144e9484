"""Start and stop: the host answers while its plugins still compile, serves
each plugin once it is ready (announcing the late ones), and ends promptly
whatever it is compiling."""

import json
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import BINARY, FIXTURES, MODERN, PLUGINS, HttpHost, RawHost, modern_meta

TOOLS_CHANGED = "notifications/tools/list_changed"


def cold_host_env(tmp_path, host_env, wait_ms):
    """An environment with an empty compile cache of its own, and requests
    waiting at most `wait_ms` for the first load."""
    cache = tmp_path / "cache"
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache}"\n')
    return dict(host_env, WASM_MCP_CONFIG=str(config), WASM_MCP_STARTUP_WAIT_MS=str(wait_ms))


def folder(tmp_path, *names):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for name in names:
        shutil.copy(PLUGINS / f"{name}.wasm", plugins / f"{name}.wasm")
    return plugins


def tool_names(host):
    return {t["name"] for t in host.request("tools/list")["result"]["tools"]}


def test_a_plugin_that_loads_after_the_first_answers_is_served_and_announced(tmp_path, host_env):
    # The Python plugin (19 MB) compiles from an empty cache; requests do not
    # wait for it at all.
    env = cold_host_env(tmp_path, host_env, 0)
    host = RawHost(folder(tmp_path, "hello", "wordcount"), env)
    try:
        host.initialize(timeout=10)
        first = tool_names(host)
        deadline = time.monotonic() + 300
        names = first
        while "word_count" not in names:
            assert time.monotonic() < deadline, f"wordcount never served: {host.log()[-3000:]}"
            time.sleep(0.2)
            names = tool_names(host)
        assert {"greet", "word_count"} <= names
        if "word_count" not in first:
            # It came after this client listed: the client was told.
            announced = [m.get("method") for m in host.pending]
            assert TOOLS_CHANGED in announced, announced
        result = host.request("tools/call", {"name": "word_count", "arguments": {"text": "a b c"}}, timeout=120)
        assert "3" in json.dumps(result["result"]), result
    finally:
        host.close()


def test_requests_at_startup_wait_for_the_plugins_that_load_in_time(tmp_path, host_env):
    # A generous wait: every plugin is there at the first answer, and the
    # first load announces nothing.
    env = cold_host_env(tmp_path, host_env, 600_000)
    host = RawHost(folder(tmp_path, "hello", "notes", "wordcount"), env)
    try:
        host.initialize(timeout=600)
        assert {"greet", "word_count"} <= tool_names(host)
        uris = [r["uri"] for r in host.request("resources/list")["result"]["resources"]]
        assert "notes://index" in uris
        host.request("ping")
        assert not [m for m in host.pending if "method" in m], host.pending
    finally:
        host.close()


def test_with_the_default_wait_a_first_list_is_complete_and_the_handshake_is_not_held(tmp_path, host_env):
    # The default wait (no setting): a cold compile of a Python plugin is
    # waited for by lists and calls, not by initialize or ping; a client
    # that never listens for list_changed sees the tool at once.
    env = cold_host_env(tmp_path, host_env, 0)
    del env["WASM_MCP_STARTUP_WAIT_MS"]
    host = RawHost(folder(tmp_path, "hello", "wordcount"), env)
    try:
        host.initialize(timeout=10)
        host.request("ping", timeout=10)
        assert {"greet", "word_count"} <= tool_names(host)
        result = host.request("tools/call", {"name": "word_count", "arguments": {"text": "a b c"}})
        assert "3" in json.dumps(result["result"]), result
        assert not [m for m in host.pending if "list_changed" in m.get("method", "")], host.pending
        assert "no longer wait" not in host.log()
    finally:
        host.close()


def test_a_plugin_still_loading_when_the_wait_ends_is_named(tmp_path, host_env):
    env = cold_host_env(tmp_path, host_env, 0)
    host = RawHost(folder(tmp_path, "hello", "wordcount"), env)
    try:
        host.initialize(timeout=10)
        # A 19 MB component cannot have compiled yet.
        assert "word_count" not in tool_names(host)
        missing = host.request("tools/call", {"name": "word_count", "arguments": {"text": "a"}})["error"]
        assert missing["code"] == -32602, missing
        assert "Unknown tool: word_count" in missing["message"], missing
        assert "still loading" in missing["message"] and "wordcount" in missing["message"], missing
        # Stateless discover tells it too, in its instructions.
        discover = host.request("server/discover", {"_meta": modern_meta()})
        assert "still loading" in discover["result"]["instructions"], discover
        assert "wordcount" in discover["result"]["instructions"], discover
        # The log comes on stderr, apart from the answers: wait for it.
        assert "wordcount" in host.wait_for_log("no longer wait", timeout=30)
    finally:
        host.close()


def test_the_http_port_answers_before_a_slow_plugin_is_compiled(tmp_path, host_env):
    env = cold_host_env(tmp_path, host_env, 0)
    host = HttpHost(folder(tmp_path, "hello", "wordcount", "shout"), env)
    try:
        message = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}
        request = urllib.request.Request(host.url, data=json.dumps(message).encode(), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"})
        # A generous liveness bound (the goal is 1 s): the port used to be
        # bound once every plugin was compiled, which takes far longer here.
        with urllib.request.urlopen(request, timeout=10) as answer:
            text = answer.read().decode()
        data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
        body = json.loads(data[-1] if data else text)
        assert body["result"]["serverInfo"]["name"] == "wasm-mcp", body
    finally:
        host.close()


def probe(url):
    """GET `url`: its status and its JSON body."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_host_is_alive_at_once_and_ready_once_its_plugins_first_load_ends(tmp_path, host_env, cache_dir):
    plugins = folder(tmp_path, "hello")
    # Its listing never ends: the first load lasts its whole load time.
    shutil.copy(FIXTURES / "stuck.wasm", plugins / "stuck.wasm")
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[plugins.stuck.limits]\nload_timeout_ms = 15000\n')
    host = HttpHost(plugins, dict(host_env, WASM_MCP_CONFIG=str(config)))
    base = host.url.rsplit("/", 1)[0]
    try:
        status, body = probe(f"{base}/readyz")
        assert (status, body["status"], body["reasons"]) == (503, "not ready", ["the plugins are still loading"])
        assert body["store"] == "reachable" and "replica" not in body
        assert probe(f"{base}/healthz") == (200, {"status": "alive"})
        # Once stuck's load time is over the first load ends without it, and
        # the host is ready with what did load.
        deadline = time.monotonic() + 120
        while probe(f"{base}/readyz")[0] != 200:
            assert time.monotonic() < deadline, host.log()[-3000:]
            time.sleep(0.2)
        status, body = probe(f"{base}/readyz")
        assert (status, body["status"]) == (200, "ready") and "reasons" not in body
        # The plugin set served: what did load (stuck did not).
        assert body["plugins"].startswith("sha256:")
        assert "stuck" in host.log()
    finally:
        host.close()


def test_the_end_of_stdin_ends_the_host_while_it_compiles(tmp_path, host_env):
    env = cold_host_env(tmp_path, host_env, 0)
    host = RawHost(folder(tmp_path, "wordcount", "shout"), env)
    host.initialize(timeout=10)
    host.proc.stdin.close()
    # A generous liveness bound: the compiles in progress are abandoned.
    host.proc.wait(timeout=10)
    assert host.proc.returncode == 0, host.log()[-3000:]


def test_warm_fills_the_compile_cache_and_names_a_plugin_that_does_not_compile(tmp_path, host_env):
    env = cold_host_env(tmp_path, host_env, 600_000)
    plugins = folder(tmp_path, "hello", "notes")
    warm = subprocess.run([str(BINARY), "warm", "--plugins", str(plugins)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert warm.returncode == 0, warm.stderr
    assert len(list((tmp_path / "cache").glob("*.cwasm"))) == 2
    # Served from the cache: nothing left for the baseline compiler.
    host = RawHost(plugins, dict(env, RUST_LOG="wasm_mcp=debug"))
    try:
        host.initialize(timeout=60)
        assert {"greet"} <= tool_names(host)
        assert "baseline compiler" not in host.log()
    finally:
        host.close()
    (plugins / "broken.wasm").write_bytes(b"\0asm\x0d\0\x01\0 cut short")
    warm = subprocess.run([str(BINARY), "warm", "--plugins", str(plugins)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert warm.returncode != 0
    assert "broken.wasm did not compile" in warm.stderr, warm.stderr


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def test_memory_that_loading_freed_goes_back_to_the_os_soon(tmp_path, host_env):
    """Loading a CPython or JavaScript component reads and copies tens of
    MiB on blocking threads, freed once it is loaded; they stay in those
    threads' allocator heaps until the threads exit. That is within a
    second or two of idleness (with tokio's default it was 10 s: ~550 MiB
    resident for that long with these three plugins, ~180 MiB after)."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for component in (PLUGINS / "wordcount.wasm", PLUGINS / "shout.wasm", FIXTURES / "ask.wasm"):
        shutil.copy(component, plugins)
    # Compiled beforehand: the host loads them from the cache.
    subprocess.run([str(BINARY), "warm", "--plugins", str(plugins)], env=host_env, check=True,
                   capture_output=True, timeout=900)
    host = RawHost(plugins, host_env)
    try:
        host.initialize()
        assert {"word_count", "shout"} <= tool_names(host)
        loaded = time.monotonic()
        while (rss := rss_mib(host.proc.pid)) > 350:
            waited = time.monotonic() - loaded
            assert waited < 8, f"{rss:.0f} MiB resident {waited:.1f} s after loading"
            time.sleep(0.25)
    finally:
        host.close()


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_host_at_rest_with_one_plugin_keeps_under_15_mib_and_serving_does_not_double_it(tmp_path, host_env,
                                                                                          transport):
    """Once its first load has ended, the host gives back what only start-up
    used: the pages of its code and constants it touched (they stay in the
    page cache; a page needed again comes back with a minor fault) and the
    loading threads' heaps. The code that serves requests, over HTTP and
    over stdio, is linked in one place (host/hot-functions.txt), so serving
    brings back little of it. About 9 MiB at rest here and 12-13 after a
    hundred calls, against ~30 when nothing was given back."""
    plugins = folder(tmp_path, "hello")
    subprocess.run([str(BINARY), "warm", "--plugins", str(plugins)], env=host_env, check=True,
                   capture_output=True, timeout=600)
    env = dict(host_env, RUST_LOG="info,wasm_mcp::trim=debug")
    host = HttpHost(plugins, env) if transport == "http" else RawHost(plugins, env)
    try:
        if transport == "stdio":
            host.initialize()
        host.wait_for_log("released the pages only start-up used", timeout=30)
        idle = rss_mib(host.proc.pid)
        assert idle <= 15, f"{idle:.1f} MiB resident at rest"
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "greet"}
        for i in range(100):
            if transport == "stdio":
                answer = host.request("tools/call", {"name": "greet", "arguments": {"name": f"n{i}"}}, timeout=10)
                assert answer["result"]["content"][0]["text"] == f"Hello, n{i}!", answer
                continue
            message = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                       "params": {"name": "greet", "arguments": {"name": f"n{i}"}, "_meta": modern_meta()}}
            request = urllib.request.Request(host.url, data=json.dumps(message).encode(), headers=headers)
            with urllib.request.urlopen(request, timeout=10) as answer:
                assert f"Hello, n{i}!" in answer.read().decode()
        served = rss_mib(host.proc.pid)
        assert served < 2 * idle, f"{idle:.1f} MiB at rest, {served:.1f} MiB after 100 calls"
    finally:
        host.close()


def test_a_plugin_folder_that_cannot_be_read_is_reported(tmp_path, host_env):
    not_a_folder = tmp_path / "file.wasm"
    not_a_folder.write_bytes(b"")
    for folder, reason in [(tmp_path / "missing", "No such file or directory"),
                           (not_a_folder, "Not a directory")]:
        done = subprocess.run([str(BINARY), "serve", "--plugins", str(folder)], input=b"",
                              capture_output=True, env=dict(host_env, RUST_BACKTRACE="0"), timeout=30)
        said = done.stderr.decode()
        assert done.returncode != 0, said
        assert f"the plugin folder {folder} cannot be read" in said and reason in said, said
