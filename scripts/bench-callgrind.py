#!/usr/bin/env python3
"""Benchmark (not a test): the host's instructions per HTTP request, counted
by valgrind's callgrind, which counts the same whatever else the machine
does. Wall-clock A/B runs on a shared 2-core machine spread by +-25%; this
settles a few-percent question.

Starts each given build with hello's `greet` on the stateless 2026-07-28
wire, sends WARMUP requests with instrumentation off, switches it on
(callgrind_control), sends REQUESTS more one at a time on one keep-alive
connection, and prints instructions per request for `tools/call greet` and
`server/discover`. Each build's profile stays in OUT (callgrind_annotate it).
The targets stdio-greet and stdio-list send theirs over stdio instead, in
a session a client began with `initialize` (2025-11-25), as desktop clients
do.

    scripts/bench-callgrind.py [--requests 500] [--out DIR] [--peers PERF_PEERS]
                               [--config-extra TOML] [--hot-functions FILE] [BINARY ...]

BINARY defaults to target/release/wasm-mcp. The first build is the
baseline the others are given as ratios of. --peers adds rmcp's native
server from ../shared/peer-bench (its `perf-peers` binary). Needs valgrind
(Debian's). --config-extra is added to every build's config, e.g.
'[limits]\nspare_instance = "never"' (counts repeat within 1%, so two runs
with different extras compare).

--hot-functions FILE also writes the functions the first build ran while
it served greet, tools/list and server/discover over HTTP (every request
from the first, every other one on a new connection, so that what a first
request and a new connection need once is in; the counts printed then
include that) and greet and tools/list over stdio (from `initialize` on),
hottest first, by symbol name: host/hot-functions.txt, which the build
links together (host/build.rs). Regenerate it with the release
build after a toolchain or dependency update:

    scripts/bench-callgrind.py --requests 50 --hot-functions host/hot-functions.txt
"""

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIRE = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": WIRE,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
TARGETS = {
    "greet": ("tools/call", {"name": "greet", "arguments": {"name": "bench"}}, "Hello, bench!"),
    "discover": ("server/discover", {}, "supportedVersions"),
    "list": ("tools/list", {}, "greet"),
}
# The same requests over stdio (a target named stdio-NAME), in a session.
STDIO_REVISION = "2025-11-25"
HOT_TARGETS = "greet,list,discover,stdio-greet,stdio-list"


class Stdio:
    """A stdio session with the host `process`: begun with `initialize` by
    the first request (`begin`), then one request at a time."""

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.next_id = 0

    def send(self, message: dict) -> None:
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def ask(self, method: str, params: dict) -> str:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"{method}: the host closed stdout")
            if json.loads(line).get("id") == self.next_id:
                return line.decode()

    def begin(self) -> None:
        self.ask("initialize", {"protocolVersion": STDIO_REVISION, "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(conn: http.client.HTTPConnection, method: str, params: dict) -> str:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": dict(params, _meta=META)})
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": WIRE, "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    conn.request("POST", "/mcp", body=body, headers=headers)
    response = conn.getresponse()
    text = response.read().decode()
    if response.status != 200:
        raise RuntimeError(f"{method}: HTTP {response.status}: {text}")
    return text


def measure(binary: Path, target: str, requests: int, warmup: int, out: Path, peer: bool,
            extra: str = "", mangled: bool = False) -> float:
    """Instructions per request. `mangled` (for --hot-functions) names
    functions by symbol and counts from the very first MCP request (over
    HTTP every other one on a new connection, so that what a first request
    and a new connection run once is counted too; over stdio from the
    session's `initialize`)."""
    first_counted = mangled and not peer
    stdio = target.startswith("stdio-")
    method, params, expect = TARGETS[target.removeprefix("stdio-")]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plugins = tmp / "plugins"
        plugins.mkdir()
        (plugins / "hello.wasm").write_bytes((ROOT / "dist/plugins/hello.wasm").read_bytes())
        config = tmp / "config.toml"
        port, ops = free_port(), free_port()
        # Where a first request is counted too, readiness is asked of the
        # operations port instead, so that no MCP request runs uncounted.
        readyz = f'[metrics]\nlisten = "127.0.0.1:{ops}"\n' if first_counted else ""
        # Few pooled slots: valgrind runs the host slowly, and reserving
        # 1000 slots' address space under it takes long.
        config.write_text(f'[server]\ncache_dir = "{tmp / "cache"}"\nwatch = false\nmax_instances = 4\n'
                          + readyz + extra.replace("\\n", "\n") + "\n")
        dump = out / f"{binary.parent.name}-{binary.name}-{target}.callgrind"
        if peer:
            command = [str(binary), "rmcp-stdio"] if stdio else [str(binary), "rmcp-http", f"127.0.0.1:{port}"]
        else:
            # Compiled into the cache beforehand, under valgrind too (the
            # CPU it emulates has other features, so a natively compiled
            # artifact would not do): on a cold cache the host serves a
            # baseline build first and compiles the optimised one in the
            # background, in the middle of the measurement.
            subprocess.run(["valgrind", "--tool=none", str(binary), "warm", "--plugins", str(plugins),
                            "--config", str(config)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=900)
            command = [str(binary), "serve", "--plugins", str(plugins), "--config", str(config)]
            if not stdio:
                command += ["--http", f"127.0.0.1:{port}"]
        host = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--demangle={'no' if mangled else 'yes'}",
             f"--callgrind-out-file={dump}", *command],
            # The host's pages stay: valgrind forgets a mapping's symbols
            # once they are released.
            env=dict(os.environ, WASM_MCP_NO_TRIM="1"),
            stdin=subprocess.PIPE if stdio else None,
            stdout=subprocess.PIPE if stdio else subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        session = Stdio(host) if stdio else None
        try:
            conn = None
            deadline = time.monotonic() + 300
            while first_counted:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{ops}/readyz", timeout=120) as ready:
                        if ready.status == 200:
                            # The start's own work done (the trim 0.5 s after the load).
                            time.sleep(5)
                            if not stdio:
                                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline or host.poll() is not None:
                    raise RuntimeError(f"{binary} was never ready under valgrind")
                time.sleep(0.5)
            if stdio and not first_counted:
                # Over stdio, requests wait for the plugins' first load.
                session.begin()
            while not first_counted and not stdio:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                    if expect in request(conn, method, params):
                        break
                except (OSError, RuntimeError, http.client.HTTPException):
                    pass
                if time.monotonic() > deadline or host.poll() is not None:
                    raise RuntimeError(f"{binary} did not answer {method} under valgrind")
                time.sleep(0.5)

            def ask() -> str:
                return session.ask(method, params) if stdio else request(conn, method, params)

            for _ in range(warmup):
                ask()
            subprocess.run(["callgrind_control", "--instr=on", str(host.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if stdio and first_counted:
                session.begin()
            for i in range(requests):
                if first_counted and not stdio and i % 2 == 0:
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                assert expect in ask()
            subprocess.run(["callgrind_control", "--dump", str(host.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            if stdio:
                host.stdin.close()
            host.terminate()
            host.wait(timeout=120)
    # callgrind_control --dump writes DUMP.1 (the final dump at exit is DUMP).
    totals = [int(m.group(1)) for f in sorted(out.glob(dump.name + ".*"))
              for m in [re.search(r"^summary: (\d+)", f.read_text(errors="replace"), re.M)] if m]
    if not totals:
        raise RuntimeError(f"no callgrind dump for {binary} {target}")
    return totals[0] / requests


def self_costs(profile: Path, binary: Path) -> dict[str, int]:
    """Instructions each function of `binary` ran itself, by its symbol
    name, from a callgrind profile written with --demangle=no. Names are
    compressed to "(id)" after their first mention, which may come after
    a use: costs are kept by id and named at the end."""
    names: dict[tuple[str, str], str] = {}
    costs: dict[tuple[str, str], int] = {}
    obj = fn = None
    after_calls = False
    for line in profile.read_text(errors="replace").splitlines():
        match = re.match(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$", line)
        if match:
            called, kind, ident, name = match.groups()
            if name is not None:
                names[(kind, ident)] = name
            if not called:
                if kind == "ob":
                    obj = ident
                else:
                    fn = ident
            continue
        if line.startswith("calls="):
            after_calls = True  # the next cost line is the call's, not fn's own
            continue
        if line[:1].isdigit() or line[:1] in "+-*":
            if after_calls:
                after_calls = False
            elif obj is not None and fn is not None:
                fields = line.split()
                if len(fields) >= 2:
                    costs[(obj, fn)] = costs.get((obj, fn), 0) + int(fields[1])
    own: dict[str, int] = {}
    for (obj, fn), cost in costs.items():
        if names.get(("ob", obj)) == str(binary) and ("fn", fn) in names:
            name = re.sub(r"'\d+$", "", names[("fn", fn)])
            own[name] = own.get(name, 0) + cost
    return own


def write_hot_functions(path: Path, binary: Path, profiles: list[Path]) -> None:
    """The functions `binary` ran while it served the measured requests,
    hottest first, one symbol name a line: what host/build.rs links
    together."""
    costs: dict[str, int] = {}
    for profile in profiles:
        for name, cost in self_costs(profile, binary).items():
            costs[name] = costs.get(name, 0) + cost
    hot = sorted((n for n, c in costs.items() if c > 0 and not n.startswith("0x")),
                 key=lambda n: (-costs[n], n))
    header = ("# The functions the host runs to serve requests, hottest first: the linker\n"
              "# places them together at the start of the code (host/build.rs), so serving\n"
              "# touches few pages of it. Written by scripts/bench-callgrind.py\n"
              "# --hot-functions from tools/call greet and tools/list over HTTP and stdio,\n"
              "# and server/discover over HTTP.\n"
              "# Names the build no longer has match nothing: regenerate after\n"
              "# a toolchain or dependency update.\n")
    path.write_text(header + "".join(n + "\n" for n in hot))
    print(f"{len(hot)} functions written to {path}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binaries", nargs="*", type=Path, default=[ROOT / "target/release/wasm-mcp"])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--targets", default="greet,discover",
                        help="of greet, discover, list, stdio-greet, stdio-list")
    parser.add_argument("--peers", type=Path,
                        help="peer-bench's perf-peers binary: rmcp's native greet, measured the same way")
    parser.add_argument("--config-extra", default="", help="TOML added to each build's config")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "wasm-mcp-callgrind")
    parser.add_argument("--hot-functions", type=Path, metavar="FILE",
                        help="write the functions the first build ran to FILE, hottest first "
                             "(host/hot-functions.txt); counts every request from the first, "
                             f"for the targets {HOT_TARGETS}")
    args = parser.parse_args()
    if args.hot_functions:
        args.targets = HOT_TARGETS
        args.warmup = 0
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.callgrind*"):
        old.unlink()
    base = None
    runs = [(b, False) for b in args.binaries]
    if args.peers:
        runs.append((args.peers, True))
    for binary, peer in runs:
        mangled = bool(args.hot_functions) and base is None
        figures = {t: measure(binary.resolve(), t, args.requests, args.warmup, args.out, peer, args.config_extra,
                              mangled)
                   for t in args.targets.split(",")}
        if mangled:
            write_hot_functions(args.hot_functions, binary.resolve(),
                                sorted(args.out.glob(f"{binary.parent.name}-{binary.name}-*.callgrind.*")))
        line = "  ".join(f"{t} {n:10.0f} instr/request" for t, n in figures.items())
        if base is None:
            base = figures
        else:
            line += "  " + "  ".join(f"{t} {figures[t] / base[t]:.3f}x" for t in figures)
        print(f"{binary}: {line}", flush=True)
    print(f"profiles in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
