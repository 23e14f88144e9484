#!/usr/bin/env python3
"""Benchmark (not a test): what a trivial tool call costs in each plugin
language, each call in a fresh instance (the default), over stdio.

The example plugins' tools: `greet` (Rust), `line-count` (Go, a plain
component), `shout` (JavaScript) and `word_count` (Python). Each is called
sequentially (one request at a time, the next sent as soon as the answer is
read) and concurrently (`--concurrency` requests always in flight on the one
connection). Prints p50 and p90 round trips, the ratio of each to `greet`'s
in the same run, and the host's CPU time per call.

Given two binaries (`OLD NEW`), runs them in turn, `--rounds` times, and also
prints NEW/OLD ratios: before/after figures measured in one run.

    .cache/venv/bin/python scripts/bench-languages.py [--calls 1000] [BINARY [BINARY]]

Needs scripts/build's output (dist/plugins).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "dist" / "plugins"
TOOLS = [
    ("greet", "Rust", {"name": "bench"}),
    ("line-count", "Go", {"text": "one\ntwo"}),
    ("shout", "JavaScript", {"text": "bench"}),
    ("word_count", "Python", {"text": "one two three"}),
]
MODES = ("sequential", "concurrent")


class Host:
    """A host serving the example plugins over stdio, initialized."""

    def __init__(self, binary: Path, plugins: Path, config: Path):
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--plugins", str(plugins), "--config", str(config)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.next_id = 0
        self.call_sync("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "bench", "version": "1"}})
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def send(self, method: str, params: dict) -> int:
        self.next_id += 1
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def read(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the host closed stdout")
            message = json.loads(line)
            if "id" in message and "method" not in message:
                return message

    def call_sync(self, method: str, params: dict) -> dict:
        wanted = self.send(method, params)
        while True:
            message = self.read()
            if message["id"] == wanted:
                return message

    def cpu_seconds(self) -> float:
        """CPU time of the host's threads alive now, in seconds (schedstat:
        nanoseconds, where /proc/PID/stat counts 10 ms ticks)."""
        total = 0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass  # a thread that just ended
        return total / 1e9

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def check(reply: dict, tool: str) -> None:
    result = reply.get("result")
    if result is None or result.get("isError"):
        raise RuntimeError(f"{tool}: {reply}")


def run(host: Host, tool: str, arguments: dict, calls: int, in_flight: int) -> tuple[list[float], float]:
    """Round trips in microseconds of `calls` calls with `in_flight` of them
    outstanding at once, and the host's CPU microseconds per call."""
    params = {"name": tool, "arguments": arguments}
    cpu = host.cpu_seconds()
    sent: dict[int, float] = {}
    times = []
    while len(sent) < in_flight and len(times) + len(sent) < calls:
        sent[host.send("tools/call", params)] = time.perf_counter()
    while sent:
        reply = host.read()
        started = sent.pop(reply["id"])
        times.append((time.perf_counter() - started) * 1e6)
        check(reply, tool)
        if len(times) + len(sent) < calls:
            sent[host.send("tools/call", params)] = time.perf_counter()
    return times, (host.cpu_seconds() - cpu) * 1e6 / calls


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binaries", nargs="*", type=Path,
                        default=[ROOT / "target" / "release" / "wasm-mcp"])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if len(args.binaries) > 2:
        parser.error("one binary, or two (OLD NEW)")

    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        plugins = work / "plugins"
        plugins.mkdir()
        for name in ("hello", "lines", "shout", "wordcount"):
            shutil.copy(PLUGINS / f"{name}.wasm", plugins)
        # samples[binary][(tool, mode)] = round trips; cpu[binary][(tool, mode)] = per call
        samples = [{} for _ in args.binaries]
        cpu = [{} for _ in args.binaries]
        for index, binary in enumerate(args.binaries):
            cache = work / f"cache-{index}"
            cache.mkdir(mode=0o700)
            config = work / f"config-{index}.toml"
            config.write_text(f'[server]\ncache_dir = "{cache}"\n')
            # Compiled by the optimising compiler beforehand, as a host that
            # has served a while would have them.
            subprocess.run([str(binary), "warm", "--plugins", str(plugins), "--config", str(config)],
                           check=True, capture_output=True, timeout=1800)
        for _ in range(args.rounds):
            for index, binary in enumerate(args.binaries):
                host = Host(binary, plugins, work / f"config-{index}.toml")
                try:
                    for tool, _, arguments in TOOLS:
                        run(host, tool, arguments, 100, 1)  # warm up
                        for mode in MODES:
                            in_flight = 1 if mode == "sequential" else args.concurrency
                            times, per_call = run(host, tool, arguments, args.calls, in_flight)
                            samples[index].setdefault((tool, mode), []).extend(times)
                            cpu[index].setdefault((tool, mode), []).append(per_call)
                finally:
                    host.close()

    for mode in MODES:
        label = "one at a time" if mode == "sequential" else f"{args.concurrency} in flight"
        print(f"\n{mode} ({label}), µs; ×greet is the ratio to greet's in the same run")
        header = f"{'tool':12} {'language':10}"
        for index in range(len(args.binaries)):
            name = ("old", "new")[index] if len(args.binaries) == 2 else "host"
            header += f" | {name + ' p50':>8} {'p90':>7} {'×greet':>6}/{'×':<5} {'cpu':>6}"
        if len(args.binaries) == 2:
            header += " | new/old p50   p90   cpu"
        print(header)
        for tool, language, _ in TOOLS:
            row = f"{tool:12} {language:10}"
            figures = []
            for index in range(len(args.binaries)):
                times = samples[index][(tool, mode)]
                greet = samples[index][("greet", mode)]
                p50, p90 = quantile(times, 0.5), quantile(times, 0.9)
                per_call = statistics.median(cpu[index][(tool, mode)])
                figures.append((p50, p90, per_call))
                row += (f" | {p50:8.0f} {p90:7.0f} {p50 / quantile(greet, 0.5):6.2f}/"
                        f"{p90 / quantile(greet, 0.9):<5.2f} {per_call:6.0f}")
            if len(figures) == 2:
                (o50, o90, ocpu), (n50, n90, ncpu) = figures
                row += f" | {n50 / o50:11.2f} {n90 / o90:5.2f} {ncpu / ocpu:5.2f}"
            print(row)


if __name__ == "__main__":
    sys.exit(main())
