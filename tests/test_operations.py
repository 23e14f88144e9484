"""What operators see: Prometheus metrics at /metrics (on the MCP listener,
or on [metrics] listen, which also works with stdio), scraped and parsed
with the Prometheus project's own Python parser after known calls."""

import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from conftest import BINARY, FIXTURES, PLUGINS, HttpHost, RawHost


def scrape(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain"), answer.headers
        text = answer.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            samples[key] = sample.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def folder(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins)
    shutil.copy(FIXTURES / "evil.wasm", plugins)
    shutil.copy(FIXTURES / "crashy.wasm", plugins)
    return plugins


def ready(base):
    """Waits until the first load has ended (a generous liveness bound)."""
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=10):
                return
        except urllib.error.HTTPError as error:
            assert error.code == 503 and time.monotonic() < deadline
            time.sleep(0.1)


def call(url, session, name, arguments, id_):
    message = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    request = urllib.request.Request(url, data=json.dumps(message).encode(), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        text = answer.read().decode()
    data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1] if data else text)


def initialize(url):
    message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "ops", "version": "1"}}}
    request = urllib.request.Request(url, data=json.dumps(message).encode(), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.headers["Mcp-Session-Id"]


def test_metrics_count_calls_by_outcome_and_show_the_hosts_state(tmp_path, cache_dir, host_env):
    config = tmp_path / "config.toml"
    # Without spares, every instance alive is a call's (the spares' own
    # gauge: test_spare_instances.py).
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[limits]\nspare_instance = "never"\n'
                      '[plugins.crashy.limits]\ncall_timeout_ms = 500\n')
    host = HttpHost(folder(tmp_path), dict(host_env, WASM_MCP_CONFIG=str(config)))
    try:
        base = host.url.rsplit("/", 1)[0]
        session = initialize(host.url)
        for i in range(3):
            assert call(host.url, session, "greet", {"name": "x"}, i)["result"]["content"][0]["text"] == "Hello, x!"
        assert call(host.url, session, "panic", {}, 10)["result"]["isError"] is True
        assert call(host.url, session, "spin", {}, 13)["result"]["isError"] is True
        # No root granted: the plugin reports the failure itself.
        assert call(host.url, session, "read", {"path": "/data/x"}, 11)["result"]["isError"] is True
        # A call's instance is torn down just after its answer is sent.
        deadline = time.monotonic() + 10
        while True:
            samples = scrape(f"{base}/metrics")
            if value(samples, "wasm_mcp_instances") == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        calls = "wasm_mcp_tool_calls_total"
        assert value(samples, calls, plugin="hello", tool="greet", outcome="ok") == 3
        assert value(samples, calls, plugin="hello", tool="greet", outcome="trap") == 0
        assert value(samples, calls, plugin="crashy", tool="panic", outcome="trap") == 1
        assert value(samples, calls, plugin="crashy", tool="spin", outcome="timeout") == 1
        assert value(samples, calls, plugin="evil", tool="read", outcome="tool_error") == 1
        durations = "wasm_mcp_tool_call_duration_seconds"
        assert value(samples, f"{durations}_count", plugin="hello", tool="greet") == 3
        assert value(samples, f"{durations}_bucket", plugin="hello", tool="greet", le="+Inf") == 3
        assert value(samples, "wasm_mcp_plugin_loads_total", plugin="hello", result="ok") == 1
        assert value(samples, "wasm_mcp_plugins") == 3
        assert value(samples, "wasm_mcp_sessions") == 1
        # Every call's instance is gone, and its memory with it.
        assert value(samples, "wasm_mcp_instances") == 0
        assert value(samples, "wasm_mcp_plugin_memory_bytes") == 0
        assert value(samples, "wasm_mcp_max_instances") == 1000
        # Every response stream has ended; a session's GET stream is open
        # while it is.
        assert value(samples, "wasm_mcp_streams") == 0
        stream = urllib.request.urlopen(urllib.request.Request(host.url, headers={
            "Accept": "text/event-stream", "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}),
            timeout=10)
        try:
            assert value(scrape(f"{base}/metrics"), "wasm_mcp_streams") == 1
        finally:
            stream.close()
        # What a client named but no plugin serves makes no series.
        call(host.url, session, "no-such-tool", {}, 12)
        assert not [k for k in scrape(f"{base}/metrics") if ("tool", "no-such-tool") in k[1]]
    finally:
        host.close()


def test_metrics_are_behind_the_endpoints_authentication(tmp_path, cache_dir, host_env):
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[http.auth]\ntokens = ["ops-token-1234567890"]\n')
    host = HttpHost(folder(tmp_path), dict(host_env, WASM_MCP_CONFIG=str(config)))
    try:
        base = host.url.rsplit("/", 1)[0]
        try:
            urllib.request.urlopen(f"{base}/metrics", timeout=10)
            raise AssertionError("metrics served without the token")
        except urllib.error.HTTPError as error:
            assert error.code == 401
        ready(base)
        samples = scrape(f"{base}/metrics", {"Authorization": "Bearer ops-token-1234567890"})
        assert value(samples, "wasm_mcp_plugins") == 3
    finally:
        host.close()


def test_a_metrics_address_of_its_own_serves_a_stdio_host(tmp_path, cache_dir, host_env):
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[metrics]\nlisten = "127.0.0.1:0"\n')
    host = RawHost(folder(tmp_path), dict(host_env, WASM_MCP_CONFIG=str(config)))
    try:
        host.initialize()
        assert host.request("tools/call", {"name": "greet", "arguments": {"name": "y"}})["result"]["content"]
        log = host.wait_for_log("serving metrics and health")
        address = re.search(r"serving metrics and health address=(\S+)", log).group(1)
        samples = scrape(f"http://{address}/metrics")
        assert value(samples, "wasm_mcp_tool_calls_total", plugin="hello", tool="greet", outcome="ok") == 1
        assert value(samples, "wasm_mcp_sessions") == 1  # the stdio client
        with urllib.request.urlopen(f"http://{address}/readyz", timeout=10) as answer:
            ready = json.loads(answer.read())
            assert ready["status"] == "ready" and ready["store"] == "reachable", ready
    finally:
        host.close()


def test_long_tool_names_and_concurrent_scrapes_cost_what_the_caps_allow(tmp_path, cache_dir, host_env):
    """A plugin of 1 200 tools named with 3 000 characters each, every one
    called: the metrics keep at most 1 000 tool series, each label cut
    short; eight scrapes at once share renderings; the scrape and the
    host's peak memory stay under the bounds stated here."""
    import threading

    from test_plain_components import all_tool_names, build_plain

    long = "-".join(["abcdefghij"] * 300)
    lines = ["package test:names;", "", "world names {"]
    lines += [f"    export t{i}-{long}: func();" for i in range(1_200)]
    lines.append("}")
    component = build_plain(tmp_path, "names", "\n".join(lines) + "\n")
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[metrics]\nlisten = "127.0.0.1:0"\n')
    env = dict(host_env, WASM_MCP_CONFIG=str(config))
    host = RawHost(component.parent, env)
    try:
        host.initialize(timeout=120)
        log = host.wait_for_log("serving metrics and health")
        address = re.search(r"serving metrics and health address=(\S+)", log).group(1)
        names = all_tool_names(host)
        assert len(names) == 1_200 and all(len(n) > 3_000 for n in names)
        # In batches under the connection's 1 024 requests in progress, which
        # a slow machine could otherwise reach with all 1 200 sent at once.
        for batch in range(0, len(names), 400):
            for name in names[batch:batch + 400]:
                host.next_id += 1
                host.send({"jsonrpc": "2.0", "id": host.next_id, "method": "tools/call",
                           "params": {"name": name, "arguments": {}}})
            for id_ in range(host.next_id - len(names[batch:batch + 400]) + 1, host.next_id + 1):
                assert "result" in host.response(id_, timeout=60)
        sizes, errors = [], []

        def one_scrape():
            try:
                with urllib.request.urlopen(f"http://{address}/metrics", timeout=60) as answer:
                    sizes.append(len(answer.read()))
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        for _ in range(3):
            scrapers = [threading.Thread(target=one_scrape) for _ in range(8)]
            for s in scrapers:
                s.start()
            for s in scrapers:
                s.join(timeout=120)
        assert not errors, errors
        assert len(sizes) == 24
        print(f"scrape: {max(sizes) // 1024} KiB; peak RSS {host.status('VmHWM') // 1024} MiB")
        assert max(sizes) < 8 << 20, max(sizes)
        samples = scrape(f"http://{address}/metrics")
        tools = {dict(labels).get("tool") for (name, labels) in samples if name == "wasm_mcp_tool_calls_total"}
        assert "_other" in tools and len(tools) == 1_001, len(tools)
        assert max(len(t) for t in tools) <= 128
        assert host.status("VmHWM") < 600 * 1024, host.status("VmHWM")
        assert host.request("ping", timeout=10)["result"] == {}
    finally:
        host.close()


def test_json_logs_are_one_object_per_line_and_a_wrong_format_is_refused(tmp_path, cache_dir, host_env):
    """WASM_MCP_LOG_FORMAT=json: every stderr line is a JSON object a log
    collector can read (its level, message and fields at the top level);
    a format the host does not know stops it before it serves."""
    host = RawHost(folder(tmp_path), dict(host_env, WASM_MCP_LOG_FORMAT="json"))
    try:
        host.initialize()
        assert host.request("tools/call", {"name": "greet", "arguments": {"name": "j"}})["result"]["content"]
        host.wait_for_log('"plugin":"hello"')
        lines = [line for line in host.log().splitlines() if line.strip()]
        records = [json.loads(line) for line in lines]
        assert all({"timestamp", "level", "target"} <= record.keys() for record in records), lines
        assert any(record.get("plugin") == "hello" and record["level"] == "INFO" for record in records), lines
    finally:
        host.close()
    refused = subprocess.run([str(BINARY), "serve", "--plugins", str(tmp_path / "plugins")],
                             env=dict(host_env, WASM_MCP_LOG_FORMAT="yaml", RUST_BACKTRACE="0"),
                             capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert refused.returncode != 0 and 'WASM_MCP_LOG_FORMAT="yaml": expected "text" or "json"' in refused.stderr, refused
