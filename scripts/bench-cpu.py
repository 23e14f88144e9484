#!/usr/bin/env python3
"""Benchmark (not a test): what an HTTP `tools/call` costs the server's CPU
and scheduler, which bench-callgrind.py's instruction count cannot see:
kernel time (sockets, page faults, madvise, TLB shootdowns), threads waking
each other, time spent waiting. Two builds of this repository, BEFORE and
AFTER, are compared with each other and with a bare axum JSON echo (the
floor, peer-bench's `perf-peers echo`) and with rmcp serving the same tool
natively (`perf-peers rmcp-http`, the issue's yardstick) under the same load
in the same run.
Needs wrk (Debian's: `apt-get install -y wrk`; ../shared/peer-bench/setup.sh
installs it) and perf-peers (built by that setup.sh).

For hello's `greet` on the stateless 2026-07-28 wire (headers and `_meta`
as peer-bench sends them), driven by wrk (2 threads, 1 at c=1) at 1, 8 and
32 keep-alive connections, each point for SECONDS after a warm-up:

  req/s         requests wrk completed / its own duration
  CPU us/req    the server's utime+stime, all threads (live and exited,
                /proc/PID/stat), read just before wrk starts and just after
                it exits, / requests completed in that window
  ctxsw/req     voluntary + involuntary context switches summed over the
                server's threads (/proc/PID/task/*/status), same window,
                polled every 0.1 s so that a thread exiting inside it loses
                at most its last 0.1 s (such exits are printed); a thread
                born in it counts from zero
  p50, p99 us   wrk --latency (client side, includes wrk's own scheduling)

Rounds alternate (before, after, rmcp, echo; reversed every other round), each
point of a round back to back. The table gives medians over rounds, and
after/before, after/rmcp and after/echo as medians of the per-round ratios (adjacent
measurements, so slow drifts of the machine's load cancel).

    ../shared/peer-bench/setup.sh      # once: builds perf-peers (rmcp and the echo), installs wrk
    git worktree add /tmp/before REV && (cd /tmp/before && cargo build --release)
    mkdir -p /tmp/before/dist/plugins && cp dist/plugins/hello.wasm /tmp/before/dist/plugins/
                                       # or build hello there (scripts/build) if it changed
    scripts/bench-cpu.py --before /tmp/before [--after .] [--rounds 3] [--seconds 5]
                         [--connections 1,8,32] [--peers PERF_PEERS] [--json OUT] [--pin]

Each checkout needs target/release/wasm-mcp and dist/plugins/hello.wasm.
Loopback only. wrk shares the machine's cores with the server, and the
kernel's loopback TCP work is charged to whichever side is running (mostly
the sender), so CPU per request includes part of the client's receive path.
On a busy 2-core machine even two identical builds differ by 20% or more at
a point: use more rounds, longer points and a quiet machine before trusting
a ratio under about 1.2.

With --pin, every server runs on one core and wrk (a thread per core left)
on the others, so that client and server never wait for each other's core.
Unpinned, wrk's wait for a core is part of every latency it reports: at 32
connections on 2 cores, a server whose workers seldom sleep keeps wrk off a
core for up to a scheduler slice (a few ms) more often, and that shows as
its p99, not as its own time to answer. Pinned, p50 and p99 are the
server's own (each server then sizes its runtime for one core: tokio starts
one worker).
"""

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIRE = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": WIRE,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}
BODY = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": "bench"}, "_meta": META}}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": WIRE, "Mcp-Method": "tools/call", "Mcp-Name": "greet"}
CLK = os.sysconf("SC_CLK_TCK")
# --pin: the cores the servers run on, and wrk's (None: wherever the kernel puts them)
SERVER_CPUS: set[int] | None = None
CLIENT_CPUS: set[int] | None = None
# wrk prints one JSON line from its done() hook: requests, duration, errors, latency percentiles (us)
LUA = """wrk.method = "POST"
wrk.body = [==[%s]==]
%s
done = function(s, latency, requests)
  local e = s.errors
  io.write(string.format('WRK {"requests":%%d,"duration_us":%%d,"errors":%%d,"p50":%%d,"p99":%%d}\\n',
    s.requests, s.duration, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""
FIGURES = [("rps", "req/s", "{:.0f}"), ("cpu_us", "CPU us/req", "{:.1f}"), ("ctxsw", "ctxsw/req", "{:.2f}"),
           ("p50", "p50 us", "{:.0f}"), ("p99", "p99 us", "{:.0f}")]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ticks(pid: int) -> int:
    """utime + stime of the whole process: every thread, including exited ones."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def ctx_switches(pid: int) -> dict[int, int]:
    """Voluntary + involuntary context switches of each live thread, by thread id."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "status").read_text()
        except OSError:  # exited between listing and reading
            continue
        out[int(task.name)] = sum(int(n) for n in re.findall(r"^(?:non)?voluntary_ctxt_switches:\s+(\d+)", text, re.M))
    return out


def pinned_to(cpus: set[int] | None):
    """A preexec_fn that binds the child to `cpus` (None: no binding)."""
    return None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))


class Server:
    def __init__(self, name: str, command: list[str], port: int):
        self.name, self.port = name, port
        self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=pinned_to(SERVER_CPUS))
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}: {' '.join(command)}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not listen on {port} within 60 s")
                time.sleep(0.05)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_host(name: str, checkout: Path, tmp: Path) -> Server:
    binary, hello = checkout / "target/release/wasm-mcp", checkout / "dist/plugins/hello.wasm"
    for f in (binary, hello):
        if not f.is_file():
            sys.exit(f"missing {f}: build that checkout first (see --help)")
    work = tmp / name
    (work / "plugins").mkdir(parents=True)
    shutil.copy(hello, work / "plugins/hello.wasm")
    config = work / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{work / "cache"}"\nwatch = false\n')
    common = ["--plugins", str(work / "plugins"), "--config", str(config)]
    # Compiled beforehand: on a cold cache the host serves a quick baseline
    # build and compiles the optimised one in the background, mid-measurement.
    # (An old revision without `warm` just gets a longer warm-up.)
    subprocess.run([str(binary), "warm", *common], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=600)
    port = free_port()
    return Server(name, [str(binary), "serve", *common, "--http", f"127.0.0.1:{port}"], port)


def check_answer(server: Server, expect: str):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", "/mcp", body=json.dumps(BODY), headers=HEADERS)
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    if response.status != 200 or expect not in text:
        raise RuntimeError(f"{server.name}: HTTP {response.status}, answer lacks {expect!r}: {text[:300]}")


def run_wrk(server: Server, script: Path, conns: int, seconds: int) -> dict:
    """One timed point: wrk's summary plus the server's CPU and context switches over it."""
    pid = server.proc.pid
    cs0, cpu0 = ctx_switches(pid), cpu_ticks(pid)
    last = dict(cs0)  # each thread's latest count, polled: an exiting thread loses <= 0.1 s of switches
    threads = min(2, conns) if CLIENT_CPUS is None else min(len(CLIENT_CPUS), conns)
    wrk = subprocess.Popen(["wrk", f"-t{threads}", f"-c{conns}", f"-d{seconds}s", "--timeout", "5s",
                            "--latency", "-s", str(script), f"http://127.0.0.1:{server.port}/mcp"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           preexec_fn=pinned_to(CLIENT_CPUS))
    try:
        deadline = time.monotonic() + seconds + 60
        while wrk.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
            last.update(ctx_switches(pid))
        out = wrk.communicate(timeout=max(1, deadline - time.monotonic()))[0]
    finally:
        if wrk.poll() is None:
            wrk.kill()
            wrk.wait()
    cpu1, cs1 = cpu_ticks(pid), ctx_switches(pid)
    last.update(cs1)
    m = re.search(r"^WRK (\{.*\})$", out, re.M)
    if wrk.returncode != 0 or not m:
        raise RuntimeError(f"wrk against {server.name}: {out[-800:]}")
    w = json.loads(m.group(1))
    if server.proc.poll() is not None:
        raise RuntimeError(f"{server.name} exited during the run")
    if w["errors"] or not w["requests"]:
        raise RuntimeError(f"{server.name} c={conns}: {w['errors']} errors, {w['requests']} requests")
    n = w["requests"]
    switches = sum(last.values()) - sum(cs0.values())
    return {"rps": n / (w["duration_us"] / 1e6), "cpu_us": (cpu1 - cpu0) / CLK * 1e6 / n,
            "ctxsw": switches / n, "p50": w["p50"], "p99": w["p99"], "requests": n, "threads": len(cs1),
            "threads_exited": len(set(last) - set(cs1)), "threads_born": len(set(last) - set(cs0))}


def median_ratio(runs: dict, a: str, b: str, conns: int, key: str) -> float:
    pairs = zip(runs[a][conns], runs[b][conns])
    return statistics.median(x[key] / y[key] for x, y in pairs if y[key])


def table(runs: dict, connections: list[int]) -> str:
    lines = ["| figure | conns | before | after | rmcp | echo | after÷before | after÷rmcp | after÷echo |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for key, label, fmt in FIGURES:
        for c in connections:
            med = {s: fmt.format(statistics.median(r[key] for r in runs[s][c])) for s in runs}
            lines.append(f"| {label} | {c} | {med['before']} | {med['after']} | {med['rmcp']} | {med['echo']} | "
                         f"{median_ratio(runs, 'after', 'before', c, key):.3f} | "
                         f"{median_ratio(runs, 'after', 'rmcp', c, key):.2f} | "
                         f"{median_ratio(runs, 'after', 'echo', c, key):.2f} |")
    return "\n".join(lines)


def main() -> None:
    peers_default = Path(os.environ.get("PERF_BUILD", Path.home() / ".cache/peer-bench")) / "target/release/perf-peers"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--before", type=Path, required=True, help="a built checkout (the baseline)")
    parser.add_argument("--after", type=Path, default=ROOT, help="a built checkout (default: this one)")
    parser.add_argument("--peers", type=Path, default=peers_default, help="peer-bench's perf-peers binary")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5, help="per timed point")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of c=32 load per server first")
    parser.add_argument("--connections", default="1,8,32")
    parser.add_argument("--json", type=Path, help="write every run here")
    parser.add_argument("--pin", action="store_true",
                        help="servers on one core, wrk on the others (see below)")
    args = parser.parse_args()
    connections = [int(c) for c in args.connections.split(",")]
    global SERVER_CPUS, CLIENT_CPUS
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            sys.exit("--pin needs at least 2 cores")
        SERVER_CPUS, CLIENT_CPUS = {cpus[0]}, set(cpus[1:])
    if not shutil.which("wrk"):
        sys.exit("wrk not found: apt-get install -y wrk")
    if not args.peers.is_file():
        sys.exit(f"no {args.peers}: run ../shared/peer-bench/setup.sh (or pass --peers)")
    # A polite SIGTERM/SIGHUP ends the run through the finally below, like Ctrl-C.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit("stopped by signal"))

    servers: dict[str, Server] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        tmp = Path(tmp)
        script = tmp / "greet.lua"
        script.write_text(LUA % (json.dumps(BODY), "\n".join(f'wrk.headers["{k}"] = "{v}"'
                                                             for k, v in HEADERS.items())))
        try:
            servers["before"] = start_host("before", args.before.resolve(), tmp)
            servers["after"] = start_host("after", args.after.resolve(), tmp)
            port = free_port()
            servers["rmcp"] = Server("rmcp", [str(args.peers), "rmcp-http", f"127.0.0.1:{port}"], port)
            port = free_port()
            servers["echo"] = Server("echo", [str(args.peers), "echo", f"127.0.0.1:{port}"], port)
            for name, server in servers.items():
                check_answer(server, '"bench"' if name == "echo" else "Hello, bench!")
                run_wrk(server, script, 32, args.warmup)
            runs = {name: {c: [] for c in connections} for name in servers}
            order = list(servers)
            for rnd in range(args.rounds):
                for c in connections:
                    for name in (order if rnd % 2 == 0 else order[::-1]):
                        r = run_wrk(servers[name], script, c, args.seconds)
                        r["round"] = rnd + 1
                        runs[name][c].append(r)
                        log(f"round {rnd + 1} {name:6} c={c:2}  {r['rps']:8.0f} req/s  cpu {r['cpu_us']:6.1f} us/req"
                            f"  ctxsw {r['ctxsw']:5.2f}/req  p50 {r['p50']:6} us  p99 {r['p99']:6} us"
                            f"  threads {r['threads']}" + (f"  ({r['threads_exited']} EXITED in window)"
                                                           if r["threads_exited"] else ""))
        finally:
            for server in servers.values():
                server.stop()
    load = open("/proc/loadavg").read().split()[:3]
    placed = (f"; servers pinned to core {min(SERVER_CPUS)}, wrk to {sorted(CLIENT_CPUS)}" if args.pin else "")
    print(f"greet over HTTP ({WIRE}, stateless), wrk {args.seconds:g} s per point, {args.rounds} round(s), "
          f"medians; {os.cpu_count()} cores, load average {' '.join(load)} at the end{placed}\n")
    print(table(runs, connections))
    exited = [f"{name} c={c} round {r['round']}: {r['threads_exited']}" for name, per in runs.items()
              for c, rs in per.items() for r in rs if r["threads_exited"]]
    if exited:
        print("\nthreads that exited inside a window (up to 0.1 s of their context switches uncounted): "
              + "; ".join(exited))
    if args.json:
        args.json.write_text(json.dumps({"before": str(args.before), "after": str(args.after),
                                         "seconds": args.seconds, "rounds": args.rounds, "loadavg": load,
                                         "pinned": args.pin,
                                         "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
