#!/usr/bin/env python3
"""Benchmark (not a test): what a tool call costs that keeps plugin data in
the host's key-value store (wasi:keyvalue) against one that keeps it in a
file of a root, and what Python and JavaScript calls cost with warm
instances, in one run, over stdio.

1. Key-value against files: the fixture kv-rust (`rust_put`, a set, and
   `rust_get`, a get, of one small value under one key, one store operation
   per call), granted `keyvalue = true`, on SQLite (`[state]
   keyvalue_store`, a file in the run's folder) and on PostgreSQL (`[state]
   url`, a throwaway server from scripts/throwaway-postgres; skipped, and
   said so, when none starts within a minute); against the real filesystem
   plugin granted a root, `write_file` and `read_text_file` of the same
   small value in one file. Ratios: a set to `write_file`, a get to
   `read_text_file`.
2. Warm instances: `word_count` (Python), `shout` (JavaScript) and `greet`
   (Rust) with `[limits] calls_per_instance = 100` (greet too) and with the
   default 1 (a fresh instance per call). Ratios to greet with the same
   limit, and warm to fresh. Over stdio every call is tenant `local`, so a
   warm instance serves every call: what a single tenant gets.

Calls are sequential (the next sent as soon as the answer is read). Each
round starts every host afresh, in turn, warms it with a few calls, then
times `--calls` calls of each tool. Prints p50 and p90 round trips in µs,
the host's CPU µs per call (median over rounds) and the ratios; compare
ratios, not absolute times, on a loaded machine.

    .cache/venv/bin/python scripts/bench-keyvalue.py [--calls 200] [--rounds 3] [--no-postgres] [--cache-dir DIR] [BINARY]

The binary and the plugins are copied into the run's folder first (a
rebuild meanwhile does not mix builds), and compiled into a compile cache
of the run's own (`wasm-mcp warm`) before anything is timed, so no
optimisation swap happens mid-run. Needs scripts/build's output (dist/).
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
FIXTURES = ROOT / "dist" / "fixtures"
THROWAWAY_POSTGRES = ROOT / "scripts" / "throwaway-postgres"

# A small value, the same bytes for the store and for the file.
VALUE = "the quick brown fox jumps over the lazy dog, 0123456789 abcdef\n"
# (label, tool, arguments, the file row it is compared with)
KV_CALLS = [
    ("set", "rust_put", {"key": "bench", "value": VALUE}, "write_file"),
    ("get", "rust_get", {"key": "bench"}, "read_text_file"),
]
FILE_CALLS = [
    ("write_file", "write_file", {"path": "/files/bench.txt", "content": VALUE}),
    ("read_text_file", "read_text_file", {"path": "/files/bench.txt"}),
]
LANGUAGE_CALLS = [
    ("greet", "Rust", {"name": "bench"}),
    ("word_count", "Python", {"text": "one two three"}),
    ("shout", "JavaScript", {"text": "bench"}),
]
WARM = 100


class Host:
    """A host serving a plugin folder over stdio, initialized; its stderr in
    a log file (shown if it fails)."""

    def __init__(self, binary: Path, plugins: Path, config: Path, env: dict, log: Path):
        self.log = log
        self.log_start = log.stat().st_size if log.exists() else 0
        with open(log, "ab") as err:
            self.proc = subprocess.Popen(
                [str(binary), "serve", "--plugins", str(plugins), "--config", str(config)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
        self.next_id = 0
        self.call_sync("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "bench", "version": "1"}})
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def call_sync(self, method: str, params: dict) -> dict:
        self.next_id += 1
        wanted = self.next_id
        self.write({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the host closed stdout; its log ends:\n{tail}")
            message = json.loads(line)
            if message.get("id") == wanted and "method" not in message:
                return message

    def wait_for_log(self, text: str, timeout: float = 60) -> None:
        """Waits until this run of the host has logged `text`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log, "rb") as log:
                log.seek(self.log_start)
                if text.encode() in log.read():
                    return
            time.sleep(0.05)
        raise RuntimeError(f"the host did not log {text!r} within {timeout} s (see {self.log})")

    def cpu_seconds(self) -> float:
        """CPU time of the host's threads alive now (schedstat, ns)."""
        total = 0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass  # a thread that just ended
        return total / 1e9

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def timed(host: Host, tool: str, arguments: dict, calls: int) -> tuple[list[float], float]:
    """Round trips in µs of `calls` sequential calls, and the host's CPU µs
    per call."""
    params = {"name": tool, "arguments": arguments}
    cpu = host.cpu_seconds()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        reply = host.call_sync("tools/call", params)
        times.append((time.perf_counter() - started) * 1e6)
        result = reply.get("result")
        if result is None or result.get("isError"):
            raise RuntimeError(f"{tool}: {reply}")
    return times, (host.cpu_seconds() - cpu) * 1e6 / calls


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def start_postgres(folder: Path) -> str | None:
    """A throwaway PostgreSQL's URL, or None (said why) if none starts
    within a minute."""
    try:
        run = subprocess.run([str(THROWAWAY_POSTGRES), "start", str(folder)],
                             capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        print("PostgreSQL did not start within 60 s: its rows are skipped", file=sys.stderr)
        stop_postgres(folder)
        return None
    if run.returncode != 0:
        print(f"PostgreSQL did not start: its rows are skipped\n{run.stderr[-2000:]}", file=sys.stderr)
        return None
    return run.stdout.strip()


def stop_postgres(folder: Path) -> None:
    subprocess.run([str(THROWAWAY_POSTGRES), "stop", str(folder)], timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", nargs="?", type=Path, default=ROOT / "target" / "release" / "wasm-mcp")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls of each tool per host")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--cache-dir", type=Path,
                        help="the compile cache to use and fill (default: one of the run's own)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-keyvalue.") as work:
        work = Path(work)
        binary = work / "wasm-mcp"
        shutil.copy(args.binary, binary)
        kv_plugins = work / "kv-plugins"
        kv_plugins.mkdir()
        shutil.copy(FIXTURES / "kv-rust.wasm", kv_plugins)
        shutil.copy(PLUGINS / "filesystem.wasm", kv_plugins)
        shutil.copy(PLUGINS / "filesystem.toml", kv_plugins)
        lang_plugins = work / "lang-plugins"
        lang_plugins.mkdir()
        for name in ("hello", "wordcount", "shout"):
            shutil.copy(PLUGINS / f"{name}.wasm", lang_plugins)
        files = work / "files"
        files.mkdir()
        cache = args.cache_dir.resolve() if args.cache_dir else work / "cache"
        cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        env = dict(os.environ, XDG_STATE_HOME=str(work / "state"))
        env.pop("RUST_LOG", None)  # the host's default (info): the postgres row waits for a line
        env.pop("WASM_MCP_CONFIG", None)
        env.pop("WASM_MCP_PLUGINS", None)
        server = f'[server]\ncache_dir = "{cache}"\n\n'

        # Compiled by the optimising compiler beforehand, as a host that has
        # served a while would have them.
        plain = work / "plain.toml"
        plain.write_text(server)
        for folder in (kv_plugins, lang_plugins):
            started = time.monotonic()
            subprocess.run([str(binary), "warm", "--plugins", str(folder), "--config", str(plain)],
                           check=True, capture_output=True, timeout=1800, env=env)
            print(f"warmed {folder.name} in {time.monotonic() - started:.0f} s", file=sys.stderr)

        grants = ('[roots.files]\npath = "{files}"\nmode = "read-write"\n\n'
                  '[plugins.filesystem]\nroots = ["files"]\n\n'
                  '[plugins.kv-rust]\nkeyvalue = true\n').format(files=files)
        sqlite = work / "sqlite.toml"
        sqlite.write_text(server + f'[state]\nkeyvalue_store = "{work / "kv.db"}"\n\n' + grants)
        configs = {"sqlite": sqlite}
        postgres_dir = work / "postgres"
        url = None if args.no_postgres else start_postgres(postgres_dir)
        if url:
            postgres = work / "postgres.toml"
            postgres.write_text(server + f'[state]\nurl = "{url}"\n\n' + grants)
            configs["postgres"] = postgres
        for limit in (1, WARM):
            config = work / f"lang-{limit}.toml"
            config.write_text(server + f"[limits]\ncalls_per_instance = {limit}\n")
            configs[f"lang-{limit}"] = config

        # samples[(config, row)] = round trips; cpu[(config, row)] = per call, each round
        samples: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        try:
            for round_ in range(args.rounds):
                for name, config in configs.items():
                    if name.startswith("lang"):
                        plugins = lang_plugins
                        calls = [(tool, tool, arguments) for tool, _, arguments in LANGUAGE_CALLS]
                    else:
                        plugins = kv_plugins
                        calls = [(label, tool, arguments) for label, tool, arguments, _ in KV_CALLS]
                        if name == "sqlite":
                            calls += FILE_CALLS
                    host = Host(binary, plugins, config, env, work / f"{name}.log")
                    try:
                        if name == "postgres":
                            # The schema is brought up to date in the
                            # background after start; a call before that
                            # finds no tables.
                            host.wait_for_log("sharing state with other replicas")
                        for _, tool, arguments in calls:
                            timed(host, tool, arguments, args.warmup)
                        # What is timed does what it says: the value set is read back.
                        for tool, arguments in (("rust_get", {"key": "bench"}),
                                                ("read_text_file", {"path": "/files/bench.txt"})):
                            if any(row[1] == tool for row in calls):
                                text = host.call_sync("tools/call", {"name": tool, "arguments": arguments})
                                text = text["result"]["content"][0]["text"]
                                if text.strip() != VALUE.strip():
                                    raise RuntimeError(f"{tool} read {text!r}, not the value written")
                        for row, tool, arguments in calls:
                            times, per_call = timed(host, tool, arguments, args.calls)
                            samples.setdefault((name, row), []).extend(times)
                            cpu.setdefault((name, row), []).append(per_call)
                    finally:
                        host.close()
                print(f"round {round_ + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            if url:
                stop_postgres(postgres_dir)

    def figures(key):
        times = samples[key]
        return quantile(times, 0.5), quantile(times, 0.9), statistics.median(cpu[key])

    print(f"\n{args.calls} sequential calls x {args.rounds} rounds per row, over stdio; µs")
    print("\n1. key-value store against a file in a root (kv-rust vs filesystem);"
          " ×file = p50/p90 ratio to the file row in the same run")
    print(f"{'store':10} {'call':16} {'p50':>7} {'p90':>7} {'cpu':>7} | {'×file p50':>9} {'p90':>5}")
    for label, _, arguments in FILE_CALLS:
        p50, p90, per_call = figures(("sqlite", label))
        print(f"{'file':10} {label:16} {p50:7.0f} {p90:7.0f} {per_call:7.0f} | {1:9.2f} {1:5.2f}")
    for store in ("sqlite", "postgres"):
        for label, tool, _, against in KV_CALLS:
            if (store, label) not in samples:
                print(f"{store:10} {label + ' (' + tool + ')':16}   skipped: PostgreSQL did not start")
                continue
            p50, p90, per_call = figures((store, label))
            f50, f90, _ = figures(("sqlite", against))
            print(f"{store:10} {label + ' (' + tool + ')':16} {p50:7.0f} {p90:7.0f} {per_call:7.0f} | "
                  f"{p50 / f50:9.2f} {p90 / f90:5.2f}")

    print("\n2. calls per instance (tenant `local`: over stdio one tenant makes every call);"
          " ×greet = ratio to greet with the same limit; ×fresh = ratio to the same tool at 1")
    print(f"{'tool':11} {'language':10} {'per inst.':>9} {'p50':>7} {'p90':>7} {'cpu':>7} | "
          f"{'×greet p50':>10} {'p90':>5} | {'×fresh p50':>10} {'p90':>5}")
    for tool, language, _ in LANGUAGE_CALLS:
        for limit in (1, WARM):
            name = f"lang-{limit}"
            p50, p90, per_call = figures((name, tool))
            g50, g90, _ = figures((name, "greet"))
            c50, c90, _ = figures(("lang-1", tool))
            print(f"{tool:11} {language:10} {limit:9} {p50:7.0f} {p90:7.0f} {per_call:7.0f} | "
                  f"{p50 / g50:10.2f} {p90 / g90:5.2f} | {p50 / c50:10.2f} {p90 / c90:5.2f}")


if __name__ == "__main__":
    sys.exit(main())
