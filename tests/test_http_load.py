"""Load and hygiene over HTTP: a thousand sessions open at once and closed,
ten thousand tool calls over keep-alive connections. Every answer is the
right one, the session table empties, and memory returns to where it was."""

import http.client
import json
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor

from conftest import PLUGINS, modern_meta

THREADS = 20
SESSIONS = 1000
CALLS = 10_000
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def exchange(conn, method, body=None, headers=None):
    data = None if body is None else json.dumps(body)
    conn.request(method, "/mcp", body=data, headers=dict(HEADERS, **(headers or {})))
    response = conn.getresponse()
    raw = response.read()
    return response.status, dict(response.getheaders()), raw


def open_sessions(authority, count):
    conn = http.client.HTTPConnection(authority, timeout=120)
    sessions = []
    for i in range(count):
        init = {"jsonrpc": "2.0", "id": i, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "load", "version": "1"}}}
        status, headers, _ = exchange(conn, "POST", init)
        assert status == 200
        session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        status, _, _ = exchange(conn, "POST", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                {"Mcp-Session-Id": session})
        assert status == 202
        sessions.append(session)
    return conn, sessions


def use_and_close(conn, sessions):
    for n, session in enumerate(sessions):
        status, _, raw = exchange(conn, "POST", {"jsonrpc": "2.0", "id": n, "method": "tools/list"},
                                  {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
        assert status == 200 and json.loads(raw)["result"]["tools"]
    for session in sessions:
        status, _, _ = exchange(conn, "DELETE", headers={"Mcp-Session-Id": session})
        assert status == 200
    conn.close()


def calls(authority, worker, count):
    conn = http.client.HTTPConnection(authority, timeout=120)
    for n in range(count):
        name = f"w{worker}-{n}"
        body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                "params": {"name": "greet", "arguments": {"name": name}, "_meta": modern_meta()}}
        status, _, raw = exchange(conn, "POST", body, {
            "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "greet"})
        assert status == 200, raw
        reply = json.loads(raw)
        assert reply["id"] == n and reply["result"]["content"][0]["text"] == f"Hello, {name}!"
    conn.close()
    return count


def run_load(host, sessions=SESSIONS, total_calls=CALLS):
    per_thread = sessions // THREADS
    with ThreadPoolExecutor(THREADS) as pool:
        opened = list(pool.map(lambda _: open_sessions(host.authority, per_thread), range(THREADS)))
        # All sessions are open at once here.
        list(pool.map(lambda pair: use_and_close(*pair), opened))
        done = sum(pool.map(lambda w: calls(host.authority, w, total_calls // THREADS), range(THREADS)))
    assert done == total_calls


def test_a_thousand_sessions_and_ten_thousand_calls(http_host_factory, host_env, tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    env = dict(host_env, RUST_LOG="info,wasm_mcp::transport=debug")
    host = http_host_factory(folder, env=env)

    run_load(host, sessions=200, total_calls=2000)  # warm-up: pools, caches, allocator
    baseline = host.rss_kib()
    run_load(host)
    after = host.rss_kib()
    print(f"RSS {baseline} KiB before, {after} KiB after")

    log = host.log()
    closed = [line for line in log.splitlines() if "session closed" in line]
    assert len(closed) == 200 + SESSIONS
    assert closed[-1].rstrip().endswith("open=0"), closed[-1]
    assert " ERROR " not in log and "panicked" not in log
    # Back to baseline: growth stays far below what 1000 kept sessions or
    # 10 000 kept calls would cost.
    assert after - baseline < 16 * 1024, f"RSS grew from {baseline} KiB to {after} KiB"
