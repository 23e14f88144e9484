"""A plugin can harm nothing but its own calls. Each test attacks one
invariant with a hostile fixture plugin (plugins/evil-rust, plugins/stuck-rust)
while it checks that the host's memory stays under a stated bound, that ping
and another plugin's call are answered, and that a later reload still works.
Time appears only as generous liveness bounds."""

import os
import shutil
import subprocess
import threading
import time

import pytest

from conftest import BINARY, FIXTURES, PLUGINS, RawHost, tool_error_text

SECRET = "outside every root"
MIB = 1024


def make_world(base, cache_dir, evil_limits="", extra_config="", server=""):
    """A root `data` (read-write) with a file inside, a secret outside it,
    and a plugin folder with evil (granted `data`) and hello."""
    data = base / "data"
    data.mkdir()
    (data / "inside.txt").write_text("inside the root")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    plugins = base / "plugins"
    plugins.mkdir()
    shutil.copy(FIXTURES / "evil.wasm", plugins / "evil.wasm")
    shutil.copy(PLUGINS / "hello.wasm", plugins / "hello.wasm")
    (plugins / "evil.toml").write_text('[roots]\ndata = "read-write"\n')
    config = base / "config.toml"
    config.write_text(
        f'[server]\ncache_dir = "{cache_dir}"\n{server}\n'
        f'[roots.data]\npath = "{data}"\nmode = "read-write"\n\n'
        '[plugins.evil]\nroots = ["data"]\n\n'
        f"[plugins.evil.limits]\n{evil_limits}\n{extra_config}"
    )
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="info",
               XDG_STATE_HOME=str(base / "state"))
    return {"base": base, "data": data, "outside": outside, "plugins": plugins, "config": config, "env": env}


def start(world):
    host = RawHost(world["plugins"], world["env"])
    host.initialize(timeout=120)
    return host


def call(host, tool, timeout=60.0, **arguments):
    response = host.request("tools/call", {"name": tool, "arguments": arguments}, timeout=timeout)
    assert "result" in response, response
    result = response["result"]
    return bool(result.get("isError")), "".join(c.get("text", "") for c in result["content"])


class Peak:
    """The host's largest RSS, sampled on a thread while an attack runs."""

    def __init__(self, host):
        self.host, self.peak, self.running = host, host.rss_kib(), True
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while self.running and self.host.proc.poll() is None:
            try:
                self.peak = max(self.peak, self.host.rss_kib())
            except (OSError, AssertionError):
                return
            time.sleep(0.02)

    def stop(self) -> int:
        self.running = False
        self.thread.join(timeout=10)
        return self.peak


reloads = iter(range(1000))


def drain(host, seconds=1.0):
    """Keeps every message that arrives within `seconds` of quiet."""
    while True:
        try:
            host.pending.append(host.read(timeout=seconds))
        except AssertionError:
            return


def assert_healthy(host, world, rss_bound_kib):
    """Ping and another plugin's call answered within 10 s, a new plugin
    file loads, and RSS is under the bound."""
    started = time.monotonic()
    assert host.request("ping", timeout=10) == {"jsonrpc": "2.0", "id": host.next_id, "result": {}}
    assert time.monotonic() - started < 10
    assert call(host, "greet", timeout=10, name="you") == (False, "Hello, you!")
    name = f"zz{next(reloads)}"
    shutil.copy(PLUGINS / "hello.wasm", world["plugins"] / f"{name}.wasm")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        tools = host.request("tools/list", timeout=10)["result"]["tools"]
        if any(t["name"] == f"{name}.greet" for t in tools):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"{name}.wasm was not loaded:\n{host.log()[-3000:]}")
    rss = host.rss_kib()
    assert rss < rss_bound_kib, f"RSS {rss} KiB over {rss_bound_kib} KiB"


# 1. No way out of a root.

def refused(config, plugins, *needles):
    run = subprocess.run(
        [str(BINARY), "serve", "--plugins", str(plugins), "--config", str(config)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        env=dict(os.environ, XDG_STATE_HOME=str(config.parent / "state")),
    )
    assert run.returncode != 0, run.stderr
    for needle in needles:
        assert needle in run.stderr, run.stderr


def test_overlapping_roots_and_host_folders_inside_roots_are_refused(tmp_path):
    outer = tmp_path / "outer"
    (outer / "sub").mkdir(parents=True)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    config = tmp_path / "config.toml"
    # Nested roots, written with a trailing slash and a relative path.
    config.write_text('[roots.outer]\npath = "outer/"\nmode = "read-write"\n[roots.inner]\npath = "./outer/sub"\n')
    refused(config, plugins, "roots.inner", "roots.outer", "overlap")
    # The same folder twice, once through a symlink.
    os.symlink(outer, tmp_path / "alias")
    config.write_text('[roots.a]\npath = "outer"\n[roots.b]\npath = "alias"\n')
    refused(config, plugins, "roots.a", "roots.b", "overlap")
    # The compile cache or the plugin folder inside a root.
    config.write_text(f'[server]\ncache_dir = "{outer}/cache"\n[roots.outer]\npath = "outer"\n')
    refused(config, plugins, "compile cache", "roots.outer")
    config.write_text('[roots.all]\npath = "."\n')
    refused(config, plugins, "plugin folder", "roots.all")


@pytest.mark.parametrize("link", ["absolute", "relative", "renamed"])
def test_a_root_replaced_while_serving_is_not_followed(tmp_path, cache_dir, link):
    world = make_world(tmp_path, cache_dir)
    host = start(world)
    try:
        assert call(host, "read", path="/data/inside.txt") == (False, "inside the root")
        data = world["data"]
        data.rename(tmp_path / "data-moved")
        if link == "absolute":
            os.symlink(world["outside"], data)
        elif link == "relative":
            os.symlink("outside", data)
        else:
            world["outside"].rename(data)
        failed, text = call(host, "read", path="/data/secret.txt")
        assert failed and SECRET not in text, text
        failed, text = call(host, "write", path="/data/planted.txt", content="x")
        assert not (world["outside"] / "planted.txt").exists() and not (data / "planted.txt").exists()
        # The plugin still sees the folder that was configured.
        assert call(host, "read", path="/data/inside.txt") == (False, "inside the root")
        assert_healthy(host, world, 400 * MIB)
    finally:
        host.close()


# 2. A stuck OS call costs only its own plugin.

def test_calls_stuck_in_a_fifo_hold_only_their_own_plugin(tmp_path, cache_dir):
    world = make_world(tmp_path, cache_dir, evil_limits="call_timeout_ms = 300\nmax_blocking_threads = 4\n")
    os.mkfifo(world["data"] / "fifo")
    host = start(world)
    try:
        baseline = host.rss_kib()
        ids = []
        for _ in range(600):
            host.next_id += 1
            ids.append(host.next_id)
            host.send({"jsonrpc": "2.0", "id": host.next_id, "method": "tools/call",
                       "params": {"name": "read", "arguments": {"path": "/data/fifo"}}})
        # While they queue and time out, everything else is served.
        worst = 0.0
        for _ in range(20):
            sent = time.monotonic()
            host.request("ping", timeout=10)
            worst = max(worst, time.monotonic() - sent)
        assert call(host, "greet", timeout=10, name="fifo") == (False, "Hello, fifo!")
        for id_ in ids:
            result = host.response(id_, timeout=120)["result"]
            assert result.get("isError"), result
        # The plugin's other, file-free calls still work.
        assert call(host, "env_all", timeout=10)[0] is False
        assert_healthy(host, world, baseline + 200 * MIB)
        # Only the plugin's own few threads are stuck.
        assert host.status("Threads") < 64, host.status("Threads")
        print(f"worst ping during the FIFO attack: {worst * 1e3:.1f} ms")
    finally:
        host.proc.kill()
        host.proc.wait()


# 3. Host memory per call is bounded.

def test_what_a_plugin_hands_the_host_is_bounded(tmp_path, cache_dir):
    world = make_world(tmp_path, cache_dir, evil_limits="memory_mb = 64\n")
    host = start(world)
    try:
        host.request("logging/setLevel", {"level": "debug"})
        baseline = host.rss_kib()
        peak = Peak(host)
        # Four calls at once, each returning 100 000 empty content items.
        ids = []
        for _ in range(4):
            host.next_id += 1
            ids.append(host.next_id)
            host.send({"jsonrpc": "2.0", "id": host.next_id, "method": "tools/call",
                       "params": {"name": "many_items", "arguments": {"count": 100_000}}})
        for id_ in ids:
            result = host.response(id_, timeout=120)["result"]
            text = result["content"][0]["text"]
            assert result.get("isError") and "limit of 10000 items" in text, text
        # A million progress notifications: the response is not stuck behind them.
        host.next_id += 1
        flood = host.next_id
        host.send({"jsonrpc": "2.0", "id": flood, "method": "tools/call",
                   "params": {"name": "progress_flood", "arguments": {"count": 1_000_000},
                              "_meta": {"progressToken": "p"}}})
        result = host.response(flood, timeout=120)["result"]
        assert not result.get("isError"), result
        progress = [m for m in host.pending if m.get("method") == "notifications/progress"]
        assert 1 <= len(progress) <= 1000, len(progress)
        # A thousand log lines of 1 MiB each.
        failed, _ = call(host, "log_flood", timeout=120, count=1000, kb=1024)
        assert not failed
        logs = [m for m in host.pending if m.get("method") == "notifications/message"]
        assert logs and all(len(m["params"]["data"]) < 1000 for m in logs), logs[:1]
        assert any("over this plugin's limit" in m["params"]["data"] for m in logs)
        # Empty writes to stdout do not pile up.
        assert call(host, "empty_writes", timeout=120, count=5_000_000) == (False, "written")
        worst = peak.stop()
        print(f"peak RSS during the memory attacks: {worst // 1024} MiB (baseline {baseline // 1024} MiB)")
        # The guests may use 4 x 64 MiB of linear memory; the host adds little
        # (unbounded, one call of 500 000 items grew the host by ~860 MB).
        assert worst < baseline + 4 * 64 * MIB + 96 * MIB, (worst, baseline)
        host.pending.clear()
        assert_healthy(host, world, baseline + 4 * 64 * MIB + 96 * MIB)
        assert "notifications over its limits were dropped" in host.log()
    finally:
        host.close()


def test_one_memory_cap_covers_every_memory_of_an_instance(tmp_path, cache_dir):
    world = make_world(tmp_path, cache_dir, extra_config="[plugins.twomem.limits]\nmemory_mb = 64\n")
    shutil.copy(FIXTURES / "twomem.wasm", world["plugins"] / "twomem.wasm")
    host = start(world)
    try:
        baseline = host.rss_kib()
        # 40 MiB in one memory fits the 64 MiB cap.
        assert call(host, "one") == (False, "")
        # 40 MiB in each of two memories does not, though each is under it.
        failed, text = call(host, "both")
        assert failed and "memory limit of 64 MiB" in text, text
        assert_healthy(host, world, baseline + 200 * MIB)
    finally:
        host.close()


# 4. No CPU bombs on the request path.

def test_schema_patterns_and_uri_templates_match_in_linear_time(tmp_path, cache_dir):
    world = make_world(tmp_path, cache_dir)
    host = start(world)
    try:
        evil = "a" * 40 + "!"
        host.next_id += 1
        validate = host.next_id
        host.send({"jsonrpc": "2.0", "id": validate, "method": "tools/call",
                   "params": {"name": "backtrack", "arguments": {"items": [evil, evil, evil]}}})
        host.next_id += 1
        read = host.next_id
        host.send({"jsonrpc": "2.0", "id": read, "method": "resources/read",
                   "params": {"uri": "evil://bomb/" + "ab" * 20_000 + "/"}})
        sent = time.monotonic()
        host.request("ping", timeout=10)
        worst = time.monotonic() - sent
        # A tool error (2025-11-25), quoting the argument no further than a
        # short excerpt.
        text = tool_error_text(host.response(validate, timeout=10))
        assert "Invalid arguments for tool backtrack" in text and len(text) < 2000, text
        response = host.response(read, timeout=10)
        assert "error" in response, response
        print(f"ping during the regex and template attacks: {worst * 1e3:.1f} ms")
        assert_healthy(host, world, 400 * MIB)
    finally:
        host.close()


def test_a_schema_cannot_make_checking_arguments_freeze_the_host(tmp_path, cache_dir):
    """Input schemas whose checks would cost without bound (an enum of 10^5
    values, $refs that double at each of 30 levels; plugins/schemas-rust)
    are refused at load with
    the reason; arguments whose check against an allowed schema would still
    cost too much are refused before checking starts, and a long check runs
    off the async workers: ping and other plugins are answered throughout."""
    world = make_world(tmp_path, cache_dir)
    shutil.copy(FIXTURES / "schemas.wasm", world["plugins"] / "schemas.wasm")
    host = start(world)
    try:
        tools = {t["name"] for t in host.request("tools/list")["result"]["tools"]}
        assert "big_enum" in tools and "plain" in tools and "enum_bomb" not in tools and "ref_chain" not in tools, tools
        log = host.log()
        assert "enum_bomb" in log and "over the limit of 262144" in log, log[-3000:]
        assert "ref_chain" in log and "$refs written out" in log, log[-3000:]
        peak = Peak(host)
        # 10^4 items, each checked against an enum of 4000 values: refused.
        items = [f"value-{3999 - i % 7}" for i in range(10_000)]
        host.next_id += 1
        heavy = host.next_id
        host.send({"jsonrpc": "2.0", "id": heavy, "method": "tools/call",
                   "params": {"name": "big_enum", "arguments": {"items": items}}})
        # A check that is long but allowed, several at once, beside pings.
        allowed = []
        for _ in range(6):
            host.next_id += 1
            allowed.append(host.next_id)
            host.send({"jsonrpc": "2.0", "id": host.next_id, "method": "tools/call",
                       "params": {"name": "big_enum", "arguments": {"items": items[:400]}}})
        # Allowed, and every item wrong: the problems are not all worked out.
        host.next_id += 1
        wrong = host.next_id
        host.send({"jsonrpc": "2.0", "id": wrong, "method": "tools/call",
                   "params": {"name": "big_enum", "arguments": {"items": [f"nope-{i}" for i in range(4000)]}}})
        started = time.monotonic()
        for _ in range(5):
            host.request("ping", timeout=10)
        assert time.monotonic() - started < 10
        assert "nope-" in tool_error_text(host.response(wrong, timeout=10))
        assert "too large to check" in tool_error_text(host.response(heavy, timeout=30))
        for id_ in allowed:
            response = host.response(id_, timeout=60)
            assert response["result"]["content"][0]["text"] == "validated", response
        rss = peak.stop()
        print(f"peak RSS while checking arguments: {rss // 1024} MiB")
        assert_healthy(host, world, 400 * MIB)
    finally:
        host.close()


# 5. A plugin speaks only for itself.

def test_a_plugin_notifies_only_for_its_own_resources_and_cannot_drown_others(tmp_path, cache_dir):
    world = make_world(tmp_path, cache_dir)
    shutil.copy(PLUGINS / "notes.wasm", world["plugins"] / "notes.wasm")
    host = start(world)
    try:
        for uri in ("notes://index", "evil://self"):
            assert "result" in host.request("resources/subscribe", {"uri": uri})
        call(host, "touch", uri="notes://index")
        call(host, "touch", uri="notes://note/todo")
        call(host, "touch", uri="evil://self")
        drain(host)
        updated = [m["params"]["uri"] for m in host.pending if m.get("method") == "notifications/resources/updated"]
        assert updated == ["evil://self"], updated
        host.pending.clear()
        # A flood of list-changed notices beside 20 real resource updates.
        host.next_id += 1
        flood = host.next_id
        host.send({"jsonrpc": "2.0", "id": flood, "method": "tools/call",
                   "params": {"name": "list_changed_flood", "arguments": {"count": 1_000_000}}})
        for _ in range(20):
            call(host, "touch", uri="evil://self")
        host.response(flood, timeout=120)
        drain(host)
        updated = [m for m in host.pending if m.get("method") == "notifications/resources/updated"]
        assert len(updated) >= 20, len(updated)
        assert_healthy(host, world, 400 * MIB)
    finally:
        host.close()


# 6. Files the host reads are checked.

def test_strange_plugin_files_never_hang_the_host(tmp_path, cache_dir):
    world = make_world(tmp_path, cache_dir, extra_config="[limits]\nload_timeout_ms = 1000\n")
    plugins = world["plugins"]
    os.mkfifo(plugins / "fifo.wasm")
    with open(plugins / "sparse.wasm", "wb") as f:
        f.truncate(2 << 30)
    shutil.copy(PLUGINS / "notes.wasm", plugins / "zero.wasm")
    os.symlink("/dev/zero", plugins / "zero.toml")
    shutil.copy(PLUGINS / "notes.wasm", plugins / "piped.wasm")
    os.mkfifo(plugins / "piped.toml")
    shutil.copy(FIXTURES / "stuck.wasm", plugins / "stuck.wasm")
    (plugins / "dir.wasm").mkdir()
    host = RawHost(plugins, world["env"])
    try:
        started = time.monotonic()
        host.initialize(timeout=60)
        # A generous liveness bound: the stuck plugin's listing is cut at 1 s.
        assert time.monotonic() - started < 30
        log = host.wait_for_log("stuck.wasm")
        for needle in ("fifo.wasm", "a FIFO", "sparse.wasm", "over the limit", "zero.toml", "a device", "piped.toml"):
            assert needle in log, needle
        names = [t["name"] for t in host.request("tools/list")["result"]["tools"]]
        assert "greet" in names and "read" in names
        baseline = host.rss_kib()
        # Written while serving: a FIFO, then a FIFO manifest for a good plugin.
        os.mkfifo(plugins / "late.wasm")
        host.wait_for_log("late.wasm")
        os.mkfifo(plugins / "hello.toml")
        host.wait_for_log("hello.toml")
        assert_healthy(host, world, baseline + 200 * MIB)
    finally:
        host.close()


# 7. The compiled cache is trusted only if it is ours.

def test_only_genuine_cache_artifacts_are_loaded(tmp_path):
    cache = tmp_path / "cache"
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins / "hello.wasm")
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache}"\n')
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), XDG_STATE_HOME=str(tmp_path / "state"))

    def serve(cached=False):
        host = RawHost(plugins, env)
        host.initialize(timeout=120)
        assert call(host, "greet", name="cache") == (False, "Hello, cache!")
        # A plugin first served by the baseline compiler (it is when the
        # optimising one is slower, as on a busy machine) is cached once
        # its optimised build replaces it: wait for that (a liveness bound).
        deadline = time.monotonic() + 60
        while cached and not any(cache.glob("*.cwasm")) and time.monotonic() < deadline:
            time.sleep(0.1)
        return host.close()

    serve(cached=True)
    assert cache.stat().st_mode & 0o777 == 0o700
    artifacts = list(cache.glob("*.cwasm"))
    assert len(artifacts) == 1 and artifacts[0].stat().st_mode & 0o777 == 0o600
    key = tmp_path / "state" / "wasm-mcp" / "cache.key"
    assert key.stat().st_mode & 0o777 == 0o600
    # A planted artifact (right name, wrong tag) is not run.
    blob = bytearray(artifacts[0].read_bytes())
    blob[0] ^= 0xFF
    artifacts[0].write_bytes(bytes(blob))
    assert "its tag does not match" in serve()
    # Writable by others: not trusted.
    os.chmod(artifacts[0], 0o666)
    assert "others may change it" in serve()
