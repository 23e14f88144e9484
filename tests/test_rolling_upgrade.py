"""A rolling upgrade and a rollback under load (issue 57): three replicas
on a real PostgreSQL behind the real HAProxy start on one version of the
host and are replaced, one at a time, by the other (stopped with SIGTERM,
as an operator's rollout does; the new one on the same port and name),
while clients keep going: stateless 2026-07-28 calls, tasks polled to
their end, and a 2025-11-25 session with a resource subscription and its
GET stream. The previous version is the commit scripts/previous-version
pins, built by it (and cached).

What must hold: no request fails but with what the book says a client
retries (HAProxy's JSON 502/503/504, a replica's -32603 with Retry-After;
docs/src/running/replicas.md), which the clients here retry as a client
would; every task ends, completed or failed with the documented message;
the session goes on, its subscription too; no replica logs an ERROR line
or a record of a version it does not know."""

import http.client
import json
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cluster import Cluster, Postgres, post, until
from conftest import BINARY, CONFORMANCE, FIXTURES, ROOT, modern_meta
from test_http_transport import BASE_HEADERS, INIT, parse_sse

PREVIOUS_VERSION = ROOT / "scripts" / "previous-version"
TASKS_EXT = "io.modelcontextprotocol/tasks"
SESSION_VERSION = "2025-11-25"
#: What a replica whose task it could not finish ended says of it (the book's
#: "the replica running this task stopped"; host/src/server/rerun.rs).
STOPPED = "the replica running this task stopped"
#: Log lines of a replica meeting what a version it does not know wrote.
UNKNOWN_VERSION = re.compile(r"newer than this (host|replica)|a newer (replica|host|version)|not one this version "
                             r"knows|unknown (\w+ )?version|version \S+ (is )?unknown", re.I)
#: Lines the book documents for a mixed-version cluster, which the checks
#: below let through (none so far).
DOCUMENTED: list[re.Pattern] = []


@pytest.fixture(scope="module")
def previous_binary() -> Path:
    """The previous version's host: scripts/previous-version builds it once
    (and says where); a failure fails the test, never skips it."""
    run = subprocess.run([str(PREVIOUS_VERSION)], capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, f"scripts/previous-version failed:\n{run.stderr[-4000:]}"
    binary = Path(run.stdout.strip().splitlines()[-1])
    assert binary.is_file(), run.stdout
    return binary


@pytest.fixture
def postgres(tmp_path):
    server = Postgres(tmp_path / "postgres")
    yield server
    server.stop()


def version_of(binary: Path) -> str:
    return subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30,
                          check=True).stdout.strip()


def retryable(status: int, headers, reply) -> bool:
    """What the book tells a client to retry after Retry-After: HAProxy's
    JSON 502/503/504 and a replica's own "busy, try again" (-32603 with
    `data.retryAfterMs`), each with Retry-After."""
    if status not in (502, 503, 504) or not headers.get("retry-after") or not reply:
        return False
    error = reply.get("error") or {}
    return error.get("code") == -32603 and "retryAfterMs" in (error.get("data") or {})


class Load:
    """Clients of a cluster in threads, every loop bounded by count and
    time: what they got, retried and failed with."""

    def __init__(self, cluster: Cluster, seconds: float):
        self.cluster = cluster
        self.deadline = time.monotonic() + seconds
        self.stop = threading.Event()
        self.lock = threading.RLock()
        self.ok = 0
        self.session_ok = 0
        self.retried: list[str] = []
        self.failures: list[str] = []
        #: (task id, replicas replaced when it started, its last tasks/get result)
        self.tasks: list[list] = []
        #: How many replicas the rollout has replaced (set by the test).
        self.replaced = 0
        self.events: list[dict] = []
        self.stream_opens = 0
        self.session = ""
        self.threads: list[threading.Thread] = []

    def summary(self) -> str:
        with self.lock:
            ended = [t[2].get("status") for t in self.tasks if len(t) > 3]
            return (f"{self.ok} stateless calls, {self.session_ok} on the session, {len(self.tasks)} tasks "
                    f"({ended.count('completed')} completed, {ended.count('failed')} failed), "
                    f"{len(self.retried)} retried, "
                    f"the stream opened {self.stream_opens} times with {len(self.events)} events")

    def explain(self) -> str:
        """What the clients saw, and the end of every replica's log."""
        with self.lock:
            lines = [self.summary(), "failures:", *self.failures[:20], "retried:", *self.retried[-10:],
                     "tasks:", *[str(t)[:300] for t in self.tasks[-6:]]]
        for name, text in self.cluster.logs():
            lines += [f"--- {name}", *text.splitlines()[-25:]]
        return "\n".join(lines)

    def running(self) -> bool:
        return not self.stop.is_set() and time.monotonic() < self.deadline

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures.append(what)

    def send(self, body: dict, headers: dict, what: str):
        """Posts through HAProxy, retrying what the book says a client
        retries (at most 60 times, after Retry-After); the reply, or None
        after recording the failure."""
        for _ in range(60):
            try:
                status, response_headers, reply = post(self.cluster.front, body, headers, timeout=60)
            except (OSError, http.client.HTTPException) as error:
                self.fail(f"{what}: {error!r}")
                return None
            if retryable(status, response_headers, reply):
                with self.lock:
                    self.retried.append(f"{what}: {status} {reply['error']['message'][:80]}")
                time.sleep(float(response_headers["retry-after"]))
                continue
            if status != 200 or reply is None:
                self.fail(f"{what}: HTTP {status} {reply}")
                return None
            return reply
        self.fail(f"{what}: still refused after 60 retries")
        return None

    def modern(self, id_, method: str, params: dict, tasks: bool = False):
        caps = {"extensions": {TASKS_EXT: {}}} if tasks else {}
        params = dict(params, _meta=modern_meta(**{"io.modelcontextprotocol/clientCapabilities": caps}))
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        name = params.get("name") or params.get("taskId")
        if name:
            headers["Mcp-Name"] = name
        return self.send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}, headers,
                         f"{method} {name or ''}")

    def on_session(self, id_, method: str, params: dict):
        headers = {"Mcp-Session-Id": self.session, "MCP-Protocol-Version": SESSION_VERSION}
        return self.send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}, headers,
                         f"session {method}")

    # The clients.

    def stateless(self, worker: int) -> None:
        for i in range(2000):
            if not self.running():
                return
            reply = self.modern(i, "tools/call", {"name": "greet", "arguments": {"name": f"w{worker}.{i}"}})
            if reply is None:
                continue
            text = ((reply.get("result") or {}).get("content") or [{}])[0].get("text")
            if text != f"Hello, w{worker}.{i}!":
                self.fail(f"greet w{worker}.{i}: {reply}")
                continue
            with self.lock:
                self.ok += 1
            time.sleep(0.05)

    def tasks_client(self, worker: int) -> None:
        for i in range(200):
            if not self.running():
                return
            label = f"t{worker}.{i}"
            reply = self.modern(i, "tools/call", {"name": "slow_compute",
                                                  "arguments": {"seconds": 2.5, "label": label}}, tasks=True)
            if reply is None:
                continue
            task = reply.get("result") or {}
            if task.get("resultType") != "task":
                self.fail(f"slow_compute {label} is no task: {reply}")
                continue
            record = [task["taskId"], self.replaced, task]
            with self.lock:
                self.tasks.append(record)
            # Polled until it ends, even after the load stops (bounded).
            deadline = time.monotonic() + 120
            while record[2].get("status") not in ("completed", "failed", "cancelled"):
                if time.monotonic() > deadline:
                    self.fail(f"task {record[0]} ({label}) never ended: {record[2]}")
                    return
                time.sleep(0.25)
                got = self.modern(i, "tasks/get", {"taskId": record[0]}, tasks=True)
                if got is not None and "result" in got:
                    record[2] = got["result"]
                elif got is not None:
                    self.fail(f"tasks/get {record[0]}: {got}")
                    return
            record.append(label)

    def session_client(self) -> None:
        for i in range(2000):
            if not self.running():
                return
            reply = self.on_session(100 + i, "tools/call", {"name": "greet", "arguments": {"name": f"s{i}"}})
            if reply is not None:
                text = ((reply.get("result") or {}).get("content") or [{}])[0].get("text")
                if text != f"Hello, s{i}!":
                    self.fail(f"session greet s{i}: {reply}")
                else:
                    with self.lock:
                        self.session_ok += 1
            time.sleep(0.2)

    def stream(self) -> None:
        """The session's GET stream, opened again with Last-Event-ID (through
        HAProxy) whenever it ends, as a client does."""
        for _ in range(500):
            if self.stop.is_set():
                return
            headers = {"Accept": "text/event-stream", "Mcp-Session-Id": self.session,
                       "MCP-Protocol-Version": SESSION_VERSION}
            with self.lock:
                last = next((e["id"] for e in reversed(self.events) if e.get("id")), None)
            if last:
                headers["Last-Event-ID"] = last
            conn = http.client.HTTPConnection(self.cluster.front, timeout=5)
            try:
                conn.request("GET", "/mcp", headers=headers)
                response = conn.getresponse()
                with self.lock:
                    self.stream_opens += 1
                if response.status != 200:
                    raw = response.read()
                    reply = json.loads(raw) if raw.startswith(b"{") else None
                    if retryable(response.status, {k.lower(): v for k, v in response.getheaders()}, reply):
                        with self.lock:
                            self.retried.append(f"GET stream: {response.status}")
                        time.sleep(1)
                    else:
                        self.fail(f"GET stream: HTTP {response.status} {raw[:300]!r}")
                        time.sleep(1)
                    continue
                lines: list[str] = []
                while not self.stop.is_set():
                    line = response.readline().decode()
                    if not line:
                        break
                    line = line.rstrip("\r\n")
                    if line:
                        lines.append(line)
                        continue
                    event = parse_sse("\n".join(lines) + "\n")
                    lines = []
                    if event and event[0].get("data"):
                        with self.lock:
                            self.events.append(event[0])
            except (socket.timeout, TimeoutError):
                pass  # Quiet for 5 s: open it again (Last-Event-ID loses nothing).
            except (OSError, http.client.HTTPException):
                pass  # Cut with its replica: open it again.
            finally:
                conn.close()

    # Driving them.

    def open_session(self) -> None:
        try:
            status, headers, reply = post(self.cluster.front, INIT, {}, timeout=60)
        except (OSError, http.client.HTTPException) as error:
            raise AssertionError(f"initialize: {error!r}\n{self.explain()}") from None
        assert status == 200 and "result" in reply, (status, reply, self.explain())
        self.session = headers["mcp-session-id"]
        status, _, _ = post(self.cluster.front, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                            {"Mcp-Session-Id": self.session, "MCP-Protocol-Version": SESSION_VERSION})
        assert status == 202, status
        reply = self.on_session(2, "resources/subscribe", {"uri": "evil://self"})
        assert reply is not None and "result" in reply, (reply, self.failures)

    def start(self) -> None:
        self.threads = [threading.Thread(target=self.stateless, args=(w,)) for w in range(2)]
        self.threads += [threading.Thread(target=self.tasks_client, args=(w,)) for w in range(2)]
        self.threads += [threading.Thread(target=self.session_client), threading.Thread(target=self.stream)]
        for thread in self.threads:
            thread.daemon = True
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=180)
            assert not thread.is_alive(), "a client never stopped"

    def updated(self, since: int) -> bool:
        with self.lock:
            return any("notifications/resources/updated" in e["data"] and "evil://self" in e["data"]
                       for e in self.events[since:])

    def touch_heard(self, what: str) -> None:
        """The plugin says evil://self changed (a stateless call on any
        replica); the session's stream hears it."""
        with self.lock:
            since = len(self.events)
        reply = self.modern(0, "tools/call", {"name": "touch", "arguments": {"uri": "evil://self"}})
        assert reply is not None and reply["result"]["content"][0]["text"] == "touched", (reply, self.failures)
        until(lambda: self.updated(since), f"resources/updated on the session's stream {what}", timeout=60,
              explain=self.explain)


@pytest.mark.parametrize("direction", ["upgrade", "rollback"])
def test_replicas_replaced_one_at_a_time_lose_nothing(direction, previous_binary, postgres, host_env, tmp_path):
    first, second = (previous_binary, BINARY) if direction == "upgrade" else (BINARY, previous_binary)
    versions = f"{version_of(first)} -> {version_of(second)}"
    folder = tmp_path / "plugins"
    folder.mkdir()
    for source in (CONFORMANCE / "conformance.wasm", FIXTURES / "evil.wasm"):
        (folder / source.name).write_bytes(source.read_bytes())
    (tmp_path / "cluster").mkdir()
    cluster = Cluster(tmp_path / "cluster", postgres, folder, host_env, binaries=first,
                      config="[tasks]\nafter_ms = 300\n", cluster="drain_secs = 10")
    load = Load(cluster, seconds=240)
    try:
        load.open_session()
        load.start()
        until(lambda: load.ok >= 20 and load.session_ok >= 5 and load.tasks, "the load to run", timeout=60,
              explain=load.explain)
        load.touch_heard(f"before the rollout ({versions})")

        for name in ("r1", "r2", "r3"):
            served, tasks = load.ok, len(load.tasks)
            cluster.replace(name, second)
            load.replaced += 1
            # The clients go on with the new replica among the old ones.
            until(lambda: load.ok >= served + 20 and len(load.tasks) > tasks,
                  f"the load to go on after {name} was replaced", timeout=90, explain=load.explain)

        # The session goes on, and so does its subscription.
        reply = load.on_session(9000, "tools/call", {"name": "greet", "arguments": {"name": "after"}})
        assert reply is not None and reply["result"]["content"][0]["text"] == "Hello, after!", (reply, load.failures)
        load.touch_heard(f"after the rollout ({versions})")
        load.finish()
    finally:
        load.stop.set()
        cluster.close()

    logs = cluster.logs()
    summary = f"{versions}: {load.summary()}"
    assert load.failures == [], f"{summary}\n" + "\n".join(load.failures[:30])

    # Every task ended: completed, or failed as the book says a task whose
    # replica stopped does; some were started before any replica was replaced.
    assert any(record[1] == 0 for record in load.tasks), summary
    for task_id, replaced, result, *label in load.tasks:
        assert label, f"task {task_id} has no end: {result}"
        if result["status"] == "completed":
            assert result["result"]["content"][0]["text"] == f"Computed {label[0]} in 2.5s", result
        else:
            assert result["status"] == "failed" and STOPPED in result["error"]["message"], (task_id, replaced, result)

    # No replica, old or new, logged an error or met a version it does not know.
    bad = [f"{name}: {line}" for name, text in logs for line in text.splitlines()
           if (re.search(r"\bERROR\b", line) or UNKNOWN_VERSION.search(line))
           and not any(pattern.search(line) for pattern in DOCUMENTED)]
    assert bad == [], f"{summary}\n" + "\n".join(bad[:40])
    print(summary)
