#!/usr/bin/env python3
"""Benchmark (not a test): the host's stdio round trip for tools/call on a
trivial Rust tool, against `ping` (no wasm) as the baseline in the same run.

    .cache/venv/bin/python scripts/bench-stdio.py [N]
"""

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        config = Path(cache) / "config.toml"
        config.write_text(f'[server]\ncache_dir = "{cache}"\n')
        proc = subprocess.Popen(
            [str(ROOT / "target/release/wasm-mcp"), "serve", "--plugins", str(ROOT / "dist/plugins"), "--config", str(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )

        def rpc(id_, method, params):
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}).encode() + b"\n")
            proc.stdin.flush()
            while True:
                message = json.loads(proc.stdout.readline())
                if message.get("id") == id_:
                    return message

        rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
        calls = {
            "ping": ("ping", {}),
            "tools/call greet": ("tools/call", {"name": "greet", "arguments": {"name": "bench"}}),
        }
        results = {}
        for label, (method, params) in calls.items():
            for i in range(200):  # warm up
                rpc(i + 1, method, params)
            samples = []
            for i in range(N):
                start = time.perf_counter()
                reply = rpc(i + 1, method, params)
                samples.append(time.perf_counter() - start)
                assert "result" in reply, reply
            samples.sort()
            results[label] = (statistics.median(samples), samples[int(len(samples) * 0.95)])
        proc.stdin.close()
        proc.wait()
    base = results["ping"][0]
    for label, (p50, p95) in results.items():
        print(f"{label:18} p50 {p50 * 1e6:8.1f} µs   p95 {p95 * 1e6:8.1f} µs   {p50 / base:5.2f}x ping")


if __name__ == "__main__":
    main()
