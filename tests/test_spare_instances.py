"""Spare instances: while a plugin is idle, the host instantiates it once
ahead of its next call, so that the call need not wait for it. Every call
still runs in an instance no other call has used; a spare gives its slot to
any call that finds none free. `spare_instance` is "auto" by default (spares
for plugins that instantiate slowly, such as CPython ones), "always" or
"never"."""

import os
import re
import shutil
import subprocess
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from conftest import BINARY, FIXTURES, PLUGINS, RawHost

SPARE_USED = "the call runs in a spare instance"


def call(host, tool, **arguments):
    response = host.request("tools/call", {"name": tool, "arguments": arguments}, timeout=120)
    assert "result" in response, response
    result = response["result"]
    return bool(result.get("isError")), "".join(c.get("text", "") for c in result["content"])


ALWAYS = '[limits]\nspare_instance = "always"\n'


def serve(tmp_path, cache_dir, components, server="", config=ALWAYS, capabilities=None):
    """A stdio host serving `components` with `server` settings and other
    `config`, its metrics on an address of their own, logging which calls
    ran in a spare (and the client roots it learns)."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for component in components:
        shutil.copy(component, plugins)
    path = tmp_path / "config.toml"
    path.write_text(f'[server]\ncache_dir = "{cache_dir}"\n{server}[metrics]\nlisten = "127.0.0.1:0"\n{config}')
    env = dict(os.environ, WASM_MCP_CONFIG=str(path),
               RUST_LOG="info,wasm_mcp::runtime=debug,wasm_mcp::server::connection=debug")
    # Compiled beforehand, so that no optimised build replaces a baseline
    # one (and its spare) in the middle of a test.
    subprocess.run([str(BINARY), "warm", "--plugins", str(plugins)], env=env, check=True,
                   capture_output=True, timeout=900)
    host = RawHost(plugins, env)
    host.initialize(capabilities=capabilities)
    log = host.wait_for_log("serving metrics and health")
    host.metrics = "http://" + re.search(r"serving metrics and health address=(\S+)", log).group(1) + "/metrics"
    return host


def gauges(host):
    with urllib.request.urlopen(host.metrics, timeout=10) as answer:
        text = answer.read().decode()
    return {sample.name: sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if not sample.labels}


def until_gauges(host, **expected):
    """Waits (a generous liveness bound) until the gauges read `expected`."""
    deadline = time.monotonic() + 30
    while True:
        now = gauges(host)
        if all(now.get(f"wasm_mcp_{name}") == value for name, value in expected.items()):
            return now
        assert time.monotonic() < deadline, (expected, now)
        time.sleep(0.05)


def until_spares_used(host, count):
    """Waits (a liveness bound) until the log says `count` calls ran in a
    spare, and no more: the log comes on stderr, apart from the answers."""
    deadline = time.monotonic() + 10
    while host.log().count(SPARE_USED) < count:
        assert time.monotonic() < deadline, host.log()[-2000:]
        time.sleep(0.02)
    assert host.log().count(SPARE_USED) == count


def test_calls_run_in_spares_that_no_call_used_before(tmp_path, cache_dir):
    """`residue` reports what earlier calls in its instance left in memory,
    then leaves some. Each call finds none, though spares serve them."""
    host = serve(tmp_path, cache_dir, [FIXTURES / "evil.wasm"])
    try:
        # One is made after the listing at load, and one while each call runs.
        until_gauges(host, spare_instances=1, instances=1)
        for _ in range(6):
            assert call(host, "residue", megabytes=1) == (False, "found 0")
            until_gauges(host, spare_instances=1, instances=1)
        assert host.log().count(SPARE_USED) == 6
        # The next one is made while a call runs, whatever its outcome: the
        # call after one that trapped runs in a spare too.
        assert call(host, "recurse")[0]
        until_gauges(host, spare_instances=1, instances=1)
        assert host.log().count(SPARE_USED) == 7
        assert call(host, "residue", megabytes=0) == (False, "found 0")
        until_spares_used(host, 8)
        until_gauges(host, spare_instances=1, instances=1)
    finally:
        host.close()


def test_the_next_spare_is_made_while_a_call_runs(tmp_path, cache_dir):
    """While a long call runs in the spare, the next spare is made beside it
    (so calls that come back to back find one ready), and the call after it
    runs in that one."""
    host = serve(tmp_path, cache_dir, [PLUGINS / "hello.wasm"])
    try:
        until_gauges(host, spare_instances=1, instances=1)
        host.send({"jsonrpc": "2.0", "id": "long", "method": "tools/call",
                   "params": {"name": "countdown", "arguments": {"steps": 600, "delay_ms": 100}}})
        # The call's instance (the spare it took) and the next spare.
        until_gauges(host, spare_instances=1, instances=2)
        assert host.log().count(SPARE_USED) == 1
        host.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": "long", "reason": "enough"}})
        until_gauges(host, spare_instances=1, instances=1)
        assert call(host, "greet", name="next") == (False, "Hello, next!")
        until_spares_used(host, 2)
    finally:
        host.close()


def test_spares_give_their_slots_to_calls(tmp_path, cache_dir):
    """With one instance slot for three plugins, a spare holds it between
    calls: each call of another plugin takes it from the spare."""
    components = [PLUGINS / "hello.wasm", FIXTURES / "evil.wasm", PLUGINS / "stats.wasm"]
    host = serve(tmp_path, cache_dir, components, server="max_instances = 1\n")
    try:
        for i in range(10):
            assert call(host, "greet", name=str(i)) == (False, f"Hello, {i}!")
            assert call(host, "residue", megabytes=0) == (False, "found 0")
            assert call(host, "stats", numbers=[i, i + 2]) == (
                False, f"count 2, mean {i + 1}, min {i}, max {i + 2}")
        now = until_gauges(host, instances=1, spare_instances=1)
        assert now["wasm_mcp_max_instances"] == 1
    finally:
        host.close()


def test_with_spares_off_no_instance_outlives_its_call(tmp_path, cache_dir):
    host = serve(tmp_path, cache_dir, [PLUGINS / "hello.wasm"], config='[limits]\nspare_instance = "never"\n')
    try:
        for i in range(3):
            assert call(host, "greet", name=str(i)) == (False, f"Hello, {i}!")
        now = until_gauges(host, instances=0, spare_instances=0)
        assert now["wasm_mcp_plugin_memory_bytes"] == 0
        assert SPARE_USED not in host.log()
    finally:
        host.close()


def test_by_default_a_plugin_that_instantiates_slowly_gets_spares(tmp_path, cache_dir):
    """CPython takes ~0.1 ms to instantiate at the fastest (three times
    the 30 µs at which "auto" makes spares): its calls run in spares, each
    fresh."""
    host = serve(tmp_path, cache_dir, [PLUGINS / "wordcount.wasm"], config="")
    try:
        until_gauges(host, spare_instances=1, instances=1)
        for i in range(4):
            text = " ".join(["w"] * (i + 1))
            assert call(host, "word_count", text=text) == (False, str(i + 1)), i
            until_gauges(host, spare_instances=1, instances=1)
        assert host.log().count(SPARE_USED) == 4
    finally:
        host.close()


def answer_roots(host, folders, answered):
    """Answers the host's next roots/list with `folders`, and waits until it
    has stored them (its `answered`-th "client roots" log line)."""
    def asked(message):
        return message.get("method") == "roots/list"
    request = next((m for m in host.pending if asked(m)), None)
    if request:
        host.pending.remove(request)
    while request is None:
        message = host.read()
        if asked(message):
            request = message
        else:
            host.pending.append(message)
    host.send({"jsonrpc": "2.0", "id": request["id"],
               "result": {"roots": [{"uri": folder.as_uri(), "name": folder.name} for folder in folders]}})
    deadline = time.monotonic() + 30
    while host.log().count("client roots") < answered:
        assert time.monotonic() < deadline, host.log()[-2000:]
        time.sleep(0.02)


def test_a_spare_made_for_other_client_roots_is_not_used(tmp_path, cache_dir):
    """A spare's preopened folders are those of the client roots of the
    call before it: once the client names other roots, the next call gets
    a fresh instance that sees only what they allow."""
    data, scratch = tmp_path / "data", tmp_path / "scratch"
    data.mkdir()
    scratch.mkdir()
    config = (f'[roots.data]\npath = "{data}"\n[roots.scratch]\npath = "{scratch}"\n'
              '[plugins.evil]\nroots = ["data", "scratch"]\n' + ALWAYS)
    (tmp_path / "manifests").mkdir()
    components = [FIXTURES / "evil.wasm", tmp_path / "manifests" / "evil.toml"]
    components[1].write_text('[roots]\ndata = "read-only"\nscratch = "read-only"\n')
    host = serve(tmp_path, cache_dir, components, config=config,
                 capabilities={"roots": {"listChanged": True}})
    try:
        answer_roots(host, [tmp_path], 1)
        assert call(host, "list", path="/data")[0] is False
        until_gauges(host, spare_instances=1)
        used = host.log().count(SPARE_USED)
        # The client's roots now hold only the scratch folder.
        host.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        answer_roots(host, [scratch], 2)
        assert call(host, "list", path="/data")[0] is True
        assert host.log().count(SPARE_USED) == used
        # The spare made after it is for the new roots, and is used.
        until_gauges(host, spare_instances=1)
        assert call(host, "list", path="/scratch")[0] is False
        assert host.log().count(SPARE_USED) == used + 1
    finally:
        host.close()
