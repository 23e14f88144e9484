#!/usr/bin/env python3
"""Benchmark (not a test): how long the host takes from being started to
its first complete `tools/list` over stdio, for one plugin (hello, or
`--plugin NAME` of dist/plugins) whose compiled form is in the cache
(`wasm-mcp warm` puts it there first), and the CPU and memory that costs. Two builds of this
repository, BEFORE and AFTER, are compared with each other and with rmcp's
stdio server (peer-bench's `perf-peers rmcp-stdio`, the issue's
yardstick) in the same run.

Each start is timed as peer-bench times it: from just before the process
is spawned to the answer of a `tools/list` that lists every tool
(`initialize` first; the list is asked again while it is short, which the
host never needs while its first load runs). Then stdin is closed and the
process's CPU is read from wait4(): utime + stime of every thread, so it
includes the graceful shutdown.

  wall ms       p25, p50 and p75 over the runs
  CPU ms        median
  peak MiB      median of the peak RSS up to the full list (VmHWM; not
                wait4's ru_maxrss, which counts the forking parent too)
  ratios        medians of per-round ratios (each round starts every
                build once, back to back, the order reversed every other
                round, so slow drifts of the machine cancel)

    ../shared/peer-bench/setup.sh      # once: builds perf-peers
    git worktree add /tmp/before REV && (cd /tmp/before && cargo build --release)
    mkdir -p /tmp/before/dist/plugins && cp dist/plugins/hello.wasm /tmp/before/dist/plugins/
    scripts/bench-startup.py --before /tmp/before [--after .] [--runs 60] [--plugin hello] [--peers PERF_PEERS]

Each checkout needs target/release/wasm-mcp and dist/plugins/PLUGIN.wasm
(the plugin is counted complete at as many tools as its first list of
the AFTER build has).
A start is a few ms: on a shared 2-core machine one run's p50 moves by
several percent, so use many runs and trust only a ratio well away from 1.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
MAX_TRIES = 2000


def start_once(command: list[str], tools: int, env: dict) -> tuple[float, float, float]:
    """Wall ms to a full tools/list, CPU ms of the whole run, peak RSS MiB;
    with `tools` 0, the number of tools first listed instead of the wall."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)

    def ask(message: dict) -> dict:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
        if "id" not in message:
            return {}
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"{command[0]} ended before answering {message['method']}")
        return json.loads(line)

    try:
        ask(INITIALIZE)
        ask(INITIALIZED)
        for tries in range(MAX_TRIES):
            listed = ask({"jsonrpc": "2.0", "id": 2 + tries, "method": "tools/list", "params": {}})
            count = len(listed.get("result", {}).get("tools", []))
            if count >= max(tools, 1):
                break
        else:
            raise SystemExit(f"{command[0]} never listed {tools} tools: {listed}")
        took = time.perf_counter() - started
        peak = hiwater_mib(proc.pid)
    finally:
        proc.stdin.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = status
    cpu = (usage.ru_utime + usage.ru_stime) * 1e3
    return (took * 1e3 if tools else count), cpu, peak


def hiwater_mib(pid: int) -> float:
    """The process's peak RSS so far, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def quantile(ordered: list[float], q: float) -> float:
    """The value a fraction `q` into `ordered` (nearest rank)."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    peers_default = Path.home() / ".cache/peer-bench/target/release/perf-peers"
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="a built checkout (the baseline)")
    parser.add_argument("--after", type=Path, default=ROOT, help="a built checkout (default: this one)")
    parser.add_argument("--peers", type=Path, default=peers_default, help="peer-bench's perf-peers binary")
    parser.add_argument("--runs", type=int, default=60, help="starts of each server")
    parser.add_argument("--plugin", default="hello", help="the plugin served (a component of dist/plugins)")
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("RUST_BACKTRACE", None)  # an error's backtrace is not part of a start
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        tmp = Path(tmp)
        commands: dict[str, tuple[list[str], int]] = {}
        for name, checkout in (("before", args.before), ("after", args.after)):
            binary = checkout.resolve() / "target/release/wasm-mcp"
            component = checkout.resolve() / f"dist/plugins/{args.plugin}.wasm"
            for needed in (binary, component):
                if not needed.is_file():
                    raise SystemExit(f"{needed} is missing: build that checkout first")
            plugins = tmp / name / "plugins"
            plugins.mkdir(parents=True)
            (plugins / component.name).write_bytes(component.read_bytes())
            config = tmp / name / "config.toml"
            config.write_text(f'[server]\ncache_dir = "{tmp / name / "cache"}"\nwatch = false\n'
                              f'[tasks]\nstore = "{tmp / name / "tasks.db"}"\n')
            subprocess.run([str(binary), "warm", "--plugins", str(plugins), "--config", str(config)],
                           env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            commands[name] = ([str(binary), "serve", "--plugins", str(plugins), "--config", str(config)], 0)
        if args.peers.is_file():
            commands["rmcp"] = ([str(args.peers), "rmcp-stdio"], 1)
        else:
            print(f"no {args.peers}: rmcp is left out (../shared/peer-bench/setup.sh builds it)", file=sys.stderr)
        # A full list (as AFTER first lists it, every plugin loaded), and
        # each server started once before timing: the page cache warm.
        full = int(start_once(commands["after"][0], 0, env)[0])
        for name, (command, tools) in list(commands.items()):
            commands[name] = (command, tools or full)
            start_once(*commands[name], env)
        runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        order = list(commands)
        for round_ in range(args.runs):
            for name in order if round_ % 2 == 0 else order[::-1]:
                runs[name].append(start_once(*commands[name], env))
        print(f"start to a full tools/list ({full} tools) over stdio, one cached plugin ({args.plugin}); "
              f"{args.runs} starts each\n")
        print(f"{'server':8} {'wall p25':>9} {'p50':>7} {'p75':>7} {'CPU ms':>7} {'peak MiB':>9}")
        for name, points in runs.items():
            walls = sorted(w for w, _, _ in points)
            print(f"{name:8} {quantile(walls, 0.25):9.2f} {quantile(walls, 0.5):7.2f} {quantile(walls, 0.75):7.2f} "
                  f"{statistics.median(c for _, c, _ in points):7.2f} {statistics.median(m for _, _, m in points):9.1f}")
        print()
        for a, b in (("after", "before"), ("after", "rmcp"), ("before", "rmcp")):
            if b in runs:
                wall = statistics.median(x[0] / y[0] for x, y in zip(runs[a], runs[b]))
                cpu = statistics.median(x[1] / y[1] for x, y in zip(runs[a], runs[b]))
                print(f"{a}/{b}: wall {wall:.3f}, CPU {cpu:.3f}")


if __name__ == "__main__":
    main()
