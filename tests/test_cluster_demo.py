"""scripts/cluster, the one-machine demo of examples/cluster, run as an
operator runs it (issue 52): it serves through HAProxy; the long Python
task (slow_count) started through HAProxy on both wires dies with the
replica killed under it (`scripts/cluster kill`), the other two replicas
go on serving, both tasks end failed once the lease lapses, the 2025
session goes on on another replica, the dead replica's log is kept;
`scripts/cluster restart` brings it back; and with no replica left,
HAProxy answers a JSON-RPC error with Retry-After: 502 to the request in
flight, 503 to the next, never an HTML page."""

import http.client
import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from cluster import post
from conftest import ROOT, modern_meta
from test_cluster import modern, until
from test_http_transport import call, open_session

SCRIPT = ROOT / "scripts" / "cluster"
STOPPED = "the replica running this task stopped"


def free_block() -> int:
    """A port P with P..P+3 free (HAProxy and the three replicas)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 3 > 65535:
            continue
        try:
            for offset in range(1, 4):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port + offset))
        except OSError:
            continue
        return port
    raise AssertionError("no four free ports in a row")


class Demo:
    """scripts/cluster running on free ports, its run folder in `tmp_path`."""

    def __init__(self, tmp_path: Path):
        self.port = free_block()
        self.front = f"127.0.0.1:{self.port}"
        self.env = dict(os.environ, PORT=str(self.port), WASM_MCP_CLUSTER_DIR=str(tmp_path),
                        WASM_MCP_CLUSTER_NO_BUILD="1")
        # Ctrl-C (SIGINT) must reach the script however this run was started:
        # a shell without job control starts background commands with SIGINT
        # ignored, and bash cannot trap a signal ignored when it starts.
        self.proc = subprocess.Popen([str(SCRIPT)], cwd=ROOT, env=self.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.stderr: list[str] = []
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.proc.stdout] + [lines.put("")],
                         daemon=True).start()
        threading.Thread(target=lambda: [self.stderr.append(line) for line in self.proc.stderr] and None,
                         daemon=True).start()
        try:
            self.url = lines.get(timeout=300).strip()
        except queue.Empty:
            self.url = ""
        if not self.url:
            self.stop()
            time.sleep(0.5)
            raise AssertionError(f"scripts/cluster printed no URL:\n{''.join(self.stderr)[-3000:]}")
        #: The run folder (the link scripts/cluster makes points at it).
        self.run = Path(os.readlink(tmp_path / f"wasm-mcp-cluster-{self.port}"))

    def replica(self, name: str) -> str:
        return f"127.0.0.1:{self.port + int(name[1:])}"

    def control(self, *args: str) -> str:
        """`scripts/cluster ARGS` from another terminal: what it said."""
        done = subprocess.run([str(SCRIPT), *args], cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # Ctrl-C
        return self.proc.wait(timeout=120)


@pytest.fixture
def demo(tmp_path):
    started = Demo(tmp_path)
    yield started
    started.stop()


def session_on(demo: Demo, replica: str) -> str:
    """A 2025 session opened through HAProxy that HAProxy keeps on `replica`."""
    front = SimpleNamespace(authority=demo.front, url=demo.url)
    for _ in range(30):
        before = session_count(demo, replica)
        session = open_session(front)
        if session_count(demo, replica) > before:
            return session
    raise AssertionError(f"HAProxy never put a session on {replica}")


def session_count(demo: Demo, replica: str) -> int:
    conn = http.client.HTTPConnection(demo.replica(replica), timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines()
               if line.startswith("wasm_mcp_sessions"))


def stateless_call(authority: str, seconds: int):
    """An ordinary (not task) call of slow_count on the 2026-07-28 wire that
    takes JSON only: (status, headers, the JSON answer)."""
    return post(authority, {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "slow_count", "arguments": {"seconds": seconds}, "_meta": modern_meta()}},
        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "slow_count",
         "Accept": "application/json"})


def test_the_demo_survives_a_dead_replica_and_says_so_when_none_is_left(demo):
    assert demo.url == f"http://{demo.front}/mcp"
    assert str(demo.run) in "".join(demo.stderr)

    async def serves(mode: str):
        async with Client(demo.url, mode=mode, read_timeout_seconds=120) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            assert {"slow_count", "greet", "word_count", "shout"} <= set(names), names
            slow = next(t for t in (await c.list_tools()).tools if t.name == "slow_count")
            assert slow.execution.task_support == "optional", slow
            for i in range(6):
                assert (await c.call_tool("greet", {"name": f"n{i}"})).content[0].text == f"Hello, n{i}!"

    anyio.run(serves, "2026-07-28")

    # The long job, as a task on the 2026-07-28 wire through HAProxy: the
    # task id names the replica running it.
    task = modern(demo.front, 1, "tools/call", {"name": "slow_count", "arguments": {"seconds": 600}})["result"]
    assert task["resultType"] == "task" and task["status"] == "working", task
    victim = task["taskId"].split(".")[0]
    assert victim in ("r1", "r2", "r3"), task
    # And as a task of a 2025 session that HAProxy keeps on the same replica.
    session = session_on(demo, victim)
    front = SimpleNamespace(authority=demo.front, url=demo.url)
    made = call(front, session, 2, "tools/call", {"name": "slow_count", "arguments": {"seconds": 600}, "task": {}})
    assert made.status == 200, made.raw
    session_task = [m for m in made.json() if m.get("id") == 2][0]["result"]["task"] \
        if made.events else made.json()["result"]["task"]
    assert session_task["taskId"].startswith(victim + "."), session_task
    got = call(front, session, 3, "tasks/get", {"taskId": session_task["taskId"]})
    assert got.status == 200

    said = demo.control("kill", victim)
    assert f"{victim} stopped" in said
    assert f"{victim} down" in demo.control("status")

    # The other two serve on through HAProxy, on both wires.
    anyio.run(serves, "2026-07-28")
    anyio.run(serves, "legacy")
    # The 2025 session whose replica died goes on elsewhere, without a new
    # initialize.
    greet = call(front, session, 4, "tools/call", {"name": "greet", "arguments": {"name": "again"}})
    assert greet.status == 200, greet.raw
    texts = json.dumps(greet.json())
    assert "Hello, again!" in texts, texts

    # Both tasks end failed once the dead replica's lease lapses (10 s in
    # examples/cluster/replica.toml).
    failed = until(lambda: (lambda r: r if r["status"] == "failed" else None)(
        modern(demo.front, 5, "tasks/get", {"taskId": task["taskId"]})["result"]), "the task to fail", timeout=90)
    assert STOPPED in failed["error"]["message"], failed

    def session_status():
        reply = call(front, session, 6, "tasks/get", {"taskId": session_task["taskId"]})
        assert reply.status == 200, reply.raw
        result = [m for m in reply.json() if m.get("id") == 6][0] if reply.events else reply.json()
        return result["result"] if result["result"]["status"] == "failed" else None

    failed = until(session_status, "the session's task to fail", timeout=90)
    assert STOPPED in failed["statusMessage"], failed

    # The logs are kept: the dead replica's, and what the demo saw.
    log = demo.run / f"{victim}.log"
    assert log.is_file() and log.stat().st_size > 0
    assert "serving Streamable HTTP" in log.read_text()
    assert f"{victim} stopped: killed by signal 9" in (demo.run / "demo.log").read_text()
    assert demo.proc.poll() is None

    # Restarted, it serves again (and its log goes on in the same file).
    demo.control("restart", victim)
    reply = modern(demo.replica(victim), 8, "tools/call", {"name": "greet", "arguments": {"name": "back"}},
                   tasks=False)
    assert reply["result"]["content"][0]["text"] == "Hello, back!"
    assert log.read_text().count(f"scripts/cluster starts {victim}") == 2
    assert f"{victim} running, pid" in demo.control("status")

    # No replica left: the call in flight gets a 502, the next a 503, both
    # JSON-RPC errors with Retry-After.
    flight: dict = {}
    caller = threading.Thread(target=lambda: flight.update(answer=stateless_call(demo.front, 60)))
    caller.start()
    # HAProxy hands the request on in milliseconds (no metric shows a call
    # in progress): 3 s is generous.
    time.sleep(3)
    demo.control("kill", "all")
    caller.join(timeout=120)
    status, headers, answer = flight["answer"]
    assert status == 502, (status, answer)
    assert headers["content-type"] == "application/json" and headers["retry-after"] == "1"
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None and answer["error"]["code"] == -32603, answer
    assert "stopped before it answered" in answer["error"]["message"]
    status, headers, answer = stateless_call(demo.front, 1)
    assert status == 503, (status, answer)
    assert headers["content-type"] == "application/json" and headers["retry-after"] == "1"
    assert answer["error"]["code"] == -32603 and "No replica can take this request" in answer["error"]["message"]
    assert answer["error"]["data"]["retryAfterMs"] == 1000

    # A real client reads it as the JSON-RPC error it is.
    async def refused(mode: str):
        with pytest.raises(BaseException) as raised:
            async with Client(demo.url, mode=mode, read_timeout_seconds=30) as c:
                await c.list_tools()
        error = raised.value
        while isinstance(error, BaseExceptionGroup):
            error = error.exceptions[0]
        assert isinstance(error, MCPError) and error.error.code == -32603, repr(error)
        assert "No replica can take this request" in error.error.message

    for mode in ("2026-07-28", "legacy"):
        anyio.run(refused, mode)
    # The demo itself is still running, and keeps every log after Ctrl-C.
    assert demo.proc.poll() is None
    demo.stop()
    for name in ("r1", "r2", "r3", "haproxy", "demo"):
        assert (demo.run / f"{name}.log").stat().st_size > 0, name
    assert not (demo.run / "plugins").exists()
    assert f"the logs are kept in {demo.run}" in "".join(demo.stderr)

