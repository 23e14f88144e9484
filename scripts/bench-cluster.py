#!/usr/bin/env python3
"""Benchmark (not a test): what sharing state costs. All in one run, on
loopback, with a throwaway PostgreSQL server and HAProxy
(examples/cluster/haproxy.cfg):

  - 2026-07-28 `tools/call` (a tool that answers at once) through HAProxy
    with one replica and with three, `CLIENTS` clients at once;
  - a 2026-07-28 task (a call of 5 ms of work that goes on as a task at
    once, then `tasks/get` until completed) the same way;
  - on one host without HAProxy: the task with the PostgreSQL store
    against the SQLite store, and a plain call with and without
    `[state]` (the baseline of each pair measured in the same run).

Reports medians of ROUNDS rounds and the ratios. On a 2-core machine three
replicas will not be faster: what is measured is the cost of sharing.

    .cache/venv/bin/python scripts/bench-cluster.py [N]
"""

import http.client
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from cluster import Cluster, Postgres  # noqa: E402
from conftest import CONFORMANCE, HttpHost, modern_meta  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
ROUNDS = 3
CLIENTS = 4
TASKS_EXT = "io.modelcontextprotocol/tasks"


class Client:
    """One keep-alive connection speaking 2026-07-28."""

    def __init__(self, authority: str):
        self.conn = http.client.HTTPConnection(authority, timeout=60)
        self.id = 0

    def rpc(self, method: str, params: dict) -> dict:
        self.id += 1
        caps = {"extensions": {TASKS_EXT: {}}}
        body = {"jsonrpc": "2.0", "id": self.id, "method": method,
                "params": dict(params, _meta=modern_meta(**{"io.modelcontextprotocol/clientCapabilities": caps}))}
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        name = params.get("name") or params.get("taskId")
        if name:
            headers["Mcp-Name"] = name
        self.conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
        response = self.conn.getresponse()
        raw = response.read()
        assert response.status == 200, raw
        message = json.loads(raw)
        assert "result" in message, message
        return message["result"]

    def call(self) -> None:
        result = self.rpc("tools/call", {"name": "greet", "arguments": {"name": "b"}})
        assert result["content"][0]["text"] == "Hello, b!"

    def task(self) -> None:
        made = self.rpc("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.005}})
        assert made["resultType"] == "task", made
        while True:
            got = self.rpc("tasks/get", {"taskId": made["taskId"]})
            if got["status"] == "completed":
                return
            assert got["status"] == "working", got


def rate(authority: str, work: str, count: int) -> float:
    """Operations per second with CLIENTS clients doing `count` in all."""
    clients = [Client(authority) for _ in range(CLIENTS)]
    for c in clients:
        for _ in range(5):
            getattr(c, work)()
    errors = []

    def run(c: Client):
        try:
            for _ in range(count // CLIENTS):
                getattr(c, work)()
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=run, args=(c,)) for c in clients]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    elapsed = time.perf_counter() - start
    assert not errors, errors[0]
    return (count // CLIENTS) * CLIENTS / elapsed


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plugins = tmp / "plugins"
        plugins.mkdir()
        shutil.copy(CONFORMANCE / "conformance.wasm", plugins / "conformance.wasm")
        config = tmp / "config.toml"
        # Room for every task the run makes (they are kept for an hour).
        room = "[tasks]\nmax_stored_per_owner = 1000000\nmax_stored = 1000000\n"
        config.write_text(f'[server]\ncache_dir = "{ROOT / ".cache" / "bench-cache"}"\n{room}')
        env = {"WASM_MCP_CONFIG": str(config), "RUST_LOG": "warn", "PATH": "/usr/bin:/bin",
               "WASM_MCP_STARTUP_WAIT_MS": "600000", "XDG_STATE_HOME": str(tmp / "state")}
        postgres = Postgres(tmp / "postgres")
        running = []
        try:
            (tmp / "one").mkdir()
            (tmp / "three").mkdir()
            # Both clusters share the one database (and replica names): each
            # reaches only its own replicas.
            one = Cluster(tmp / "one", postgres, plugins, env, count=1, config=room)
            running.append(one)
            three = Cluster(tmp / "three", postgres, plugins, env, count=3, config=room)
            running.append(three)
            alone = HttpHost(plugins, env)
            running.append(alone)
            shared = HttpHost(plugins, env, ["--state", postgres.url, "--replica", "solo"])
            running.append(shared)
            pairs = {
                "tools/call via HAProxy: 3 replicas / 1": (one.front, three.front, "call"),
                "task via HAProxy: 3 replicas / 1": (one.front, three.front, "task"),
                "task on one host: PostgreSQL / SQLite": (alone.authority, shared.authority, "task"),
                "tools/call on one host: [state] / none": (alone.authority, shared.authority, "call"),
            }
            rows = []
            for label, (base, other, work) in pairs.items():
                count = 10 * N if work == "call" else N
                a, b = [], []
                for _ in range(ROUNDS):
                    a.append(rate(base, work, count))
                    b.append(rate(other, work, count))
                base_rate, other_rate = statistics.median(a), statistics.median(b)
                rows.append((label, base_rate, other_rate, other_rate / base_rate))
            print(f"| measured ({CLIENTS} clients, medians of {ROUNDS} rounds) | baseline /s | other /s | ratio |")
            print("|---|---|---|---|")
            for label, base_rate, other_rate, ratio in rows:
                print(f"| {label} | {base_rate:.0f} | {other_rate:.0f} | {ratio:.2f} |")
        finally:
            for process in running:
                process.close()
            postgres.stop()


if __name__ == "__main__":
    main()
