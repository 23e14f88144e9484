"""Traces over OTLP/HTTP (JSON), received here by a small OTLP receiver:
a span per request, continuing the W3C trace context the client sent in
`_meta`, with the plugin call and its parts as children."""

import json
import os
import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import PLUGINS, RawHost

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


class Receiver:
    """Collects the spans POSTed to /v1/traces."""

    def __init__(self):
        self.spans = []
        self.resources = []
        self.paths = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.paths.append((self.path, self.headers["Content-Type"]))
                for resource_spans in json.loads(body).get("resourceSpans", []):
                    receiver.resources.append(resource_spans.get("resource", {}))
                    for scope in resource_spans.get("scopeSpans", []):
                        receiver.spans.extend(scope.get("spans", []))
                answer = b"{}"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def attribute(span, key):
    for a in span.get("attributes", []):
        if a["key"] == key:
            return next(iter(a["value"].values()))
    return None


def test_a_request_continues_the_clients_trace_and_the_plugin_call_is_its_child(tmp_path, cache_dir):
    receiver = Receiver()
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins)
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[traces]\nendpoint = "{receiver.url}"\n'
                      'service_name = "traced-host"\n'
                      # Every call instantiates as a child of its span (a
                      # spare instance would have been made ahead of it).
                      '[limits]\nspare_instance = "never"\n')
    host = RawHost(plugins, dict(os.environ, WASM_MCP_CONFIG=str(config)))
    try:
        host.initialize()
        traced = host.request("tools/call", {"name": "greet", "arguments": {"name": "t"},
                                             "_meta": {"traceparent": f"00-{TRACE}-{PARENT}-01"}})
        assert traced["result"]["content"][0]["text"] == "Hello, t!", traced
        untraced = host.request("tools/call", {"name": "greet", "arguments": {"name": "u"}})
        assert untraced["result"]["content"][0]["text"] == "Hello, u!", untraced
    finally:
        # Spans still batched are sent as the host stops.
        host.close()
        receiver.close()
    assert receiver.paths and all(p == ("/v1/traces", "application/json") for p in receiver.paths), receiver.paths
    names = [s["name"] for s in receiver.spans]
    by_id = {s["spanId"]: s for s in receiver.spans}

    [request] = [s for s in receiver.spans if s["name"] == "tools/call" and s["traceId"] == TRACE]
    assert request["parentSpanId"] == PARENT, request
    assert attribute(request, "mcp.request.id") is not None, request
    [call] = [s for s in receiver.spans if s["name"] == "plugin.call" and s["traceId"] == TRACE]
    assert call["parentSpanId"] == request["spanId"], call
    assert attribute(call, "plugin") == "hello", call
    for part in ("plugin.instantiate", "plugin.run"):
        [span] = [s for s in receiver.spans if s["name"] == part and s["traceId"] == TRACE]
        assert span["parentSpanId"] == call["spanId"], span
        assert int(span["startTimeUnixNano"]) >= int(call["startTimeUnixNano"]), span

    # Without a traceparent, a request starts a trace of its own.
    others = [s for s in receiver.spans if s["name"] == "tools/call" and s["traceId"] != TRACE]
    assert others and all(not s.get("parentSpanId") for s in others), others
    assert any(by_id.get(s.get("parentSpanId"), {}).get("name") == "tools/call"
               for s in receiver.spans if s["name"] == "plugin.call" and s["traceId"] != TRACE), names

    # Loading the plugin was traced too, and every span names the service.
    assert "plugin.compile" in names, names
    services = {attribute({"attributes": r.get("attributes", [])}, "service.name") for r in receiver.resources}
    assert services == {"traced-host"}, services


@pytest.mark.parametrize("collector", ["refusing", "silent"])
def test_a_collector_that_is_down_or_silent_costs_the_host_nothing(tmp_path, cache_dir, collector):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins)
    # Refusing: nothing listens. Silent: connections are taken and never
    # answered.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    port = silent.getsockname()[1]
    if collector == "refusing":
        silent.close()
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[traces]\nendpoint = "http://127.0.0.1:{port}/v1/traces"\n')
    host = RawHost(plugins, dict(os.environ, WASM_MCP_CONFIG=str(config)))
    try:
        host.initialize()
        for i in range(20):
            answer = host.request("tools/call", {"name": "greet", "arguments": {"name": str(i)},
                                                 "_meta": {"traceparent": "not a traceparent"}})
            assert answer["result"]["content"][0]["text"] == f"Hello, {i}!", answer
    finally:
        started = time.monotonic()
        host.close()
        silent.close()
    # The spans still batched are given up on, not waited for.
    assert time.monotonic() - started < 10


def test_what_a_client_sends_is_recorded_bounded_and_not_kept(tmp_path, cache_dir):
    """Requests with multi-megabyte method names, ids and trace states: the
    spans record a method outside the protocol as `other` and the id cut
    short, so the spans kept until export (and the host) stay small."""
    receiver = Receiver()
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins)
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[traces]\nendpoint = "{receiver.url}"\n')
    host = RawHost(plugins, dict(os.environ, WASM_MCP_CONFIG=str(config)))
    try:
        host.initialize()
        big = 3 << 20
        for i in range(40):
            host.send({"jsonrpc": "2.0", "id": f"{i}-" + "i" * big, "method": "m" * big,
                       "params": {"_meta": {"traceparent": f"00-{TRACE}-{PARENT}-01",
                                            "tracestate": "k=" + "v" * big}}})
            reply = host.read(timeout=60)
            assert reply["error"]["code"] == -32601, str(reply)[:300]
            host.send({"jsonrpc": "2.0", "id": "x" * big, "method": "ping"})
            assert host.read(timeout=60)["result"] == {}
        peak = host.status("VmHWM")
        print(f"peak RSS after 80 requests of 6 MB: {peak // 1024} MiB")
        assert peak < 400 * 1024, peak
        assert host.request("ping")["result"] == {}
    finally:
        host.close()
        receiver.close()
    requests = [s for s in receiver.spans if attribute(s, "mcp.request.id") is not None]
    assert len(requests) >= 80, len(requests)
    assert {s["name"] for s in requests} >= {"other", "ping"}, {s["name"][:20] for s in requests}
    assert all(len(s["name"]) < 64 for s in requests)
    assert all(len(attribute(s, "mcp.request.id")) <= 80 for s in requests)
    assert all(len(json.dumps(s)) < 4096 for s in receiver.spans)
