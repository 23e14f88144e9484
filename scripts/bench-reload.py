#!/usr/bin/env python3
"""Benchmark (not a test): hot-reload latency, from a new `.wasm` being
complete on disk (the atomic rename into the plugin folder returned) to the
client reading `notifications/tools/list_changed` on stdout.

The Rust examples `hello` and `notes` take turns as `bench.wasm`, so every
reload changes the tool list. Two rounds:
  cached   the compiled component is in the artifact cache (same bytes seen before);
  compile  every version has new bytes (a unique custom section), so it compiles.

    .cache/venv/bin/python scripts/bench-reload.py [N]
"""

import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N = int(sys.argv[1]) if len(sys.argv) > 1 else 30
VERSIONS = [(ROOT / "dist/plugins" / name).read_bytes() for name in ("hello.wasm", "notes.wasm")]


def custom_section(payload: bytes) -> bytes:
    name = b"bench"
    body = bytes([len(name)]) + name + payload
    assert len(body) < 128
    return b"\x00" + bytes([len(body)]) + body


def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        plugins = work / "plugins"
        plugins.mkdir()
        (plugins / "bench.wasm").write_bytes(VERSIONS[0])
        config = work / "config.toml"
        config.write_text(f'[server]\ncache_dir = "{work / "cache"}"\n')
        proc = subprocess.Popen(
            [str(ROOT / "target/release/wasm-mcp"), "serve", "--plugins", str(plugins), "--config", str(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        arrivals: queue.Queue = queue.Queue()

        def read() -> None:
            for line in proc.stdout:
                arrivals.put((time.monotonic(), json.loads(line)))

        threading.Thread(target=read, daemon=True).start()

        def send(message: dict) -> None:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()

        send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        arrivals.get(timeout=60)

        def reload(data: bytes) -> float:
            tmp = plugins / ".bench.wasm.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, plugins / "bench.wasm")
            done = time.monotonic()
            while True:
                at, message = arrivals.get(timeout=60)
                if message.get("method") == "notifications/tools/list_changed":
                    # Let the other list_changed of this reload arrive and be dropped.
                    time.sleep(0.2)
                    while not arrivals.empty():
                        arrivals.get()
                    return (at - done) * 1000

        # Warm the cache with both versions.
        for data in (VERSIONS[1], VERSIONS[0]):
            reload(data)
        rounds = {
            "cached": [reload(VERSIONS[(i + 1) % 2]) for i in range(N)],
            "compile": [reload(VERSIONS[(i + 1) % 2] + custom_section(str(i).encode())) for i in range(N)],
        }
        proc.stdin.close()
        proc.wait()
    print(f"reload -> tools/list_changed over stdio, {N} reloads each (ms)")
    for name, samples in rounds.items():
        samples.sort()
        p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
        print(f"  {name:8} p50 {statistics.median(samples):7.1f}  p95 {p95:7.1f}  min {samples[0]:7.1f}  max {samples[-1]:7.1f}")


if __name__ == "__main__":
    main()
