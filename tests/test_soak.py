"""Every client attack at once, for a bounded time, while a well-behaved
client keeps calling tools: slow headers, a session flood, readers that
never read, queued calls with large arguments, and calls that ask the
user and are never answered, all from one principal. The well-behaved
client (another principal) gets every answer right, and the host's RSS
stays under the bound below. Time appears only as generous liveness
bounds; the worst latency is printed for the record (pytest -s)."""

import http.client
import json
import shutil
import socket
import threading
import time

from conftest import FIXTURES, MODERN, PLUGINS, CONFORMANCE, modern_meta

SOAK_SECONDS = 30
RSS_BOUND_MIB = 768
EVIL = "Bearer evil-token-0123456789abcdef"
GOOD = "Bearer good-token-0123456789abcdef"


def soak_host(tmp_path, cache_dir, host_env, http_host_factory):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    shutil.copy(CONFORMANCE / "conformance.wasm", folder / "conformance.wasm")
    shutil.copy(FIXTURES / "crashy.wasm", folder / "crashy.wasm")
    shutil.copy(FIXTURES / "evil.wasm", folder / "evil.wasm")
    config = tmp_path / "config.toml"
    config.write_text(
        f'[server]\ncache_dir = "{cache_dir}"\nmax_requests_per_principal = 64\n'
        "[http]\nmax_connections = 256\nheader_timeout_secs = 3\nmax_sessions_per_principal = 50\n"
        "resume_grace_secs = 2\n"
        '[http.auth]\ntokens = ["evil-token-0123456789abcdef", "good-token-0123456789abcdef"]\n'
        "[plugins.crashy.limits]\ncall_timeout_ms = 2000\nmax_concurrent_calls = 2\n"
        "[plugins.evil.limits]\nmax_concurrent_calls = 4\n")
    return http_host_factory(folder, env=dict(host_env, WASM_MCP_CONFIG=str(config)))


class Soak:
    def __init__(self, host):
        self.host = host
        self.port = int(host.authority.split(":")[1])
        self.stop = threading.Event()
        self.done = {}

    def connect(self, timeout=30):
        return http.client.HTTPConnection(self.host.authority, timeout=timeout)

    def send(self, body, headers, auth=EVIL, path="/mcp", method="POST"):
        """Sends a request and returns its connection, without reading."""
        conn = self.connect()
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "Authorization": auth}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=dict(base, **headers))
        return conn

    def session(self, auth, capabilities=None):
        conn = self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities or {},
                                     "clientInfo": {"name": "soak", "version": "1"}}}, {}, auth)
        response = conn.getresponse()
        response.read()
        session = response.getheader("mcp-session-id")
        conn.close()
        if session is None:
            raise ValueError(f"no session ({response.status})")
        headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"}, headers, auth).close()
        return headers

    def attack(self, name, step):
        """Runs `step` until the soak ends; failures of attacks are expected."""
        held = []
        while not self.stop.is_set():
            try:
                step(held)
                self.done[name] = self.done.get(name, 0) + 1
            except (OSError, http.client.HTTPException, ValueError):
                time.sleep(0.05)
            # Keep a bounded number of the attacker's connections open.
            while len(held) > 40:
                held.pop(0).close()
        for conn in held:
            conn.close()

    def slow_headers(self, held):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        held.append(s)
        time.sleep(0.02)

    def session_flood(self, held):
        self.session(EVIL)

    def never_reads(self, held):
        headers = self.session(EVIL)
        get = self.send(None, {**headers, "Accept": "text/event-stream"}, method="GET")
        flood = self.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                           "params": {"name": "log_flood", "arguments": {"count": 2000, "kb": 16},
                                      "_meta": {"progressToken": 1}}}, headers)
        self.send({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "debug"}},
                  headers).close()
        held.extend([get, flood])
        time.sleep(0.5)

    def queued_calls(self, held):
        padding = "x" * (1 << 20)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "spin", "arguments": {"padding": padding}, "_meta": modern_meta()}}
        held.append(self.send(body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                                     "Mcp-Name": "spin"}))
        time.sleep(0.05)

    def never_answers(self, held):
        headers = self.session(EVIL, {"elicitation": {}})
        conn = self.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "test_elicitation", "arguments": {"message": "never answered"}}},
                         headers)
        held.append(conn)
        time.sleep(0.1)


def test_every_attack_at_once_leaves_a_well_behaved_client_served(tmp_path, cache_dir, host_env, http_host_factory):
    host = soak_host(tmp_path, cache_dir, host_env, http_host_factory)
    soak = Soak(host)
    good_session = soak.session(GOOD)
    baseline = host.rss_kib()
    attackers = [threading.Thread(target=soak.attack, args=(step.__name__, step), name=step.__name__, daemon=True)
                 for step in (soak.slow_headers, soak.session_flood, soak.never_reads,
                              soak.queued_calls, soak.never_answers)]
    for t in attackers:
        t.start()
    peak = baseline
    latencies = []
    wrong = []
    started = time.monotonic()
    n = 0
    while time.monotonic() - started < SOAK_SECONDS:
        n += 1
        name = f"soak{n}"
        stateless = n % 2 == 0
        if stateless:
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "greet", "arguments": {"name": name}, "_meta": modern_meta()}}
            headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "greet"}
        else:
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "greet", "arguments": {"name": name}}}
            headers = good_session
        t0 = time.monotonic()
        conn = soak.send(body, headers, GOOD)
        response = conn.getresponse()
        data = response.read().decode()
        conn.close()
        latencies.append(time.monotonic() - t0)
        if response.status != 200 or f"Hello, {name}!" not in data:
            wrong.append((response.status, data[:300]))
        peak = max(peak, host.rss_kib())
        time.sleep(0.1)
    soak.stop.set()
    for t in attackers:
        t.join(timeout=60)
    worst = max(latencies)
    print(f"\nsoak: {len(latencies)} calls, worst latency {worst * 1000:.0f} ms, "
          f"median {sorted(latencies)[len(latencies) // 2] * 1000:.0f} ms, "
          f"RSS {baseline // 1024} MiB before, peak {peak // 1024} MiB; attacks made: {soak.done}")
    assert all(soak.done.get(t.name, 0) > 0 for t in attackers), soak.done
    assert not wrong, wrong[:3]
    assert len(latencies) >= 20, "the well-behaved client made progress"
    assert worst < 10, f"an answer took {worst:.1f} s"
    assert peak < RSS_BOUND_MIB * 1024, f"RSS peaked at {peak // 1024} MiB"
    # Afterwards the host still serves, and gives memory back.
    conn = soak.send({"jsonrpc": "2.0", "id": "after", "method": "tools/call",
                      "params": {"name": "greet", "arguments": {"name": "after"}}}, good_session, GOOD)
    assert "Hello, after!" in conn.getresponse().read().decode()
