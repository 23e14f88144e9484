#!/usr/bin/env python3
"""Benchmark (not a test): what running a tool call as a 2025-11-25 task
costs over stdio. The task (tools/call with `task`, then tasks/result) of a
tool that returns at once, against the same call without a task as the
baseline in the same run; with the SQLite store and with tasks in memory.

    .cache/venv/bin/python scripts/bench-tasks.py [N]
"""

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 500
ROUNDS = 3


def run(store: str) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text(f'[server]\ncache_dir = "{ROOT / ".cache" / "bench-cache"}"\n[tasks]\nstore = "{store and Path(tmp) / store}"\n')
        proc = subprocess.Popen(
            [str(ROOT / "target/release/wasm-mcp"), "serve", "--plugins", str(ROOT / "dist/conformance"),
             "--config", str(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        next_id = 0

        def rpc(method, params):
            nonlocal next_id
            next_id += 1
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}).encode() + b"\n")
            proc.stdin.flush()
            while True:
                message = json.loads(proc.stdout.readline())
                if message.get("id") == next_id and "method" not in message:
                    assert "result" in message, message
                    return message["result"]

        rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        arguments = {"name": "slow_compute", "arguments": {"seconds": 0}}

        def plain():
            rpc("tools/call", arguments)

        def task():
            created = rpc("tools/call", dict(arguments, task={}))
            rpc("tasks/result", {"taskId": created["task"]["taskId"]})

        timings: dict[str, list[float]] = {"plain": [], "task": []}
        for f in (plain, task):
            for _ in range(50):
                f()
        for _ in range(ROUNDS):
            for name, f in (("plain", plain), ("task", task)):
                start = time.perf_counter()
                for _ in range(N):
                    f()
                timings[name].append((time.perf_counter() - start) / N * 1e6)
        proc.stdin.close()
        proc.wait(timeout=20)
        return timings


def main() -> None:
    for label, store in (("sqlite store", "tasks.db"), ("in memory", "")):
        timings = run(store)
        plain, task = statistics.median(timings["plain"]), statistics.median(timings["task"])
        print(f"{label}: plain call {plain:.0f} us, task (create + tasks/result) {task:.0f} us, "
              f"ratio {task / plain:.2f}  (medians of {ROUNDS} rounds of {N})")


if __name__ == "__main__":
    main()
