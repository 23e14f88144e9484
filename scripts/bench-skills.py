#!/usr/bin/env python3
"""What serving a skill costs, against a plugin's own resource, in one run:
requests per second over stdio for `resources/read` of a skill file (the
host serves it from memory), of a plugin resource (a call into the plugin),
and for `skills/list` and `skills/get`; each as a ratio to the plugin read.

    scripts/bench-skills.py [--requests N] [--rounds R]

Needs scripts/build (target/release/wasm-mcp, dist/plugins)."""

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in ("notes", "time"):
            shutil.copy(ROOT / "dist/plugins" / f"{name}.wasm", folder)
        shutil.copytree(ROOT / "dist/plugins/time.skills", folder / "time.skills")
        host = subprocess.Popen([str(ROOT / "target/release/wasm-mcp"), "serve", "--plugins", str(folder)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        ids = iter(range(1, 10**9))

        def ask(method, params):
            i = next(ids)
            host.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}).encode() + b"\n")
            host.stdin.flush()
            while True:
                message = json.loads(host.stdout.readline())
                if message.get("id") == i:
                    assert "result" in message, message
                    return message

        ask("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}})
        deadline = time.monotonic() + 60
        while not ask("skills/list", {})["result"]["skills"]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        cases = {
            "plugin resource read": ("resources/read", {"uri": "notes://index"}),
            "skill file read": ("resources/read", {"uri": "skill://time/time-zones/SKILL.md"}),
            "skills/list": ("skills/list", {}),
            "skills/get": ("skills/get", {"uri": "skill://time/time-zones/SKILL.md"}),
        }
        rates = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, (method, params) in cases.items():
                started = time.perf_counter()
                for _ in range(args.requests):
                    ask(method, params)
                rates[name].append(args.requests / (time.perf_counter() - started))
        host.stdin.close()
        host.wait(timeout=20)
    base = statistics.median(rates["plugin resource read"])
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"{name:22} {median:9.0f} req/s  {median / base:5.2f}x the plugin read")


if __name__ == "__main__":
    main()
