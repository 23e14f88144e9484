"""What replicas cost (issue 50): a replica pays for what a request asks of
it, not for what other replicas hold. Hostile inputs against three
replicas sharing a real PostgreSQL behind HAProxy, each measured against
a bound stated here:

- a big `tasks/update` sent to a replica that does not run the task, with
  many sessions open on every replica, costs the other replicas about
  what it costs the one running the task, and reaches the task once;
- 1 024 subscribes on one session write a bounded amount of WAL each;
- the cap on a session's stored SSE events holds while two replicas
  append to it at once;
- a session's stored rows go with it, ended or expired."""

import concurrent.futures
import http.client
import json
import os
import secrets
import shutil
import threading
import time

import pytest

from cluster import Cluster, Postgres, post, until
from conftest import CONFORMANCE, PLUGINS, modern_meta
from test_http_transport import BASE_HEADERS, INIT

TASKS_EXT = "io.modelcontextprotocol/tasks"


@pytest.fixture
def postgres(tmp_path):
    server = Postgres(tmp_path / "postgres")
    yield server
    server.stop()


@pytest.fixture
def cluster_factory(tmp_path, postgres, host_env):
    clusters = []

    def start(plugins, **kwargs) -> Cluster:
        folder = tmp_path / f"cluster{len(clusters)}"
        folder.mkdir()
        cluster = Cluster(folder, postgres, plugins, host_env, **kwargs)
        clusters.append(cluster)
        return cluster

    yield start
    for cluster in clusters:
        cluster.close()


def folder_of(tmp_path, name: str, *plugins: str, source=PLUGINS):
    folder = tmp_path / name
    folder.mkdir()
    for plugin in plugins:
        shutil.copy(source / f"{plugin}.wasm", folder / f"{plugin}.wasm")
    return folder


def psql(url: str, query: str) -> str:
    import subprocess
    run = subprocess.run(["psql", "-At", url, "-c", query], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def modern(authority: str, id_, method: str, params: dict):
    """A 2026-07-28 request declaring the tasks extension; its reply."""
    caps = {"elicitation": {}, "extensions": {TASKS_EXT: {}}}
    params = dict(params, _meta=modern_meta(**{"io.modelcontextprotocol/clientCapabilities": caps}))
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    name = params.get("name") or params.get("taskId")
    if name:
        headers["Mcp-Name"] = name
    status, _, reply = post(authority, {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}, headers)
    assert status == 200 and reply is not None, (status, reply)
    return reply


def open_session(authority: str) -> str:
    """A 2025-11-25 session, initialized; its id."""
    status, headers, reply = post(authority, INIT, {})
    assert status == 200 and "result" in reply, reply
    session = headers["mcp-session-id"]
    status, _, _ = post(authority, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_headers(session))
    assert status == 202
    return session


def session_headers(session: str) -> dict:
    return {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}


def cpu_seconds(pid: int) -> float:
    """User and system CPU time process `pid` has used."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_big_answer_sent_to_another_replica_costs_only_where_it_goes(cluster_factory, tmp_path, postgres):
    """Bound: each replica not running the task spends at most 3x the CPU of
    the one running it, plus 0.5 s for what a replica does meanwhile
    anyway (lease renewals, sweeps), whatever the sessions open on it; the
    answer is handed to the task once. (Before: every session of every
    replica copied the answer, about 90x the owner's CPU.)"""
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE),
                              config="[tasks]\nafter_ms = 300\n")
    r1, r2, r3 = (host.authority for host in cluster.replicas.values())
    # Many sessions open on every replica, each hearing server events.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        sessions = list(pool.map(open_session, [r1, r2, r3] * 100))
    assert len(set(sessions)) == 300

    asking = modern(r1, 1, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}})["result"]
    task_id = asking["taskId"]
    assert task_id.startswith("r1."), asking
    until(lambda: modern(r1, 2, "tasks/get", {"taskId": task_id})["result"]["status"] == "input_required",
          "the task to ask")
    time.sleep(1)
    pids = {name: host.proc.pid for name, host in cluster.replicas.items()}
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    # 3.9 MB of answer, sent to r2.
    pad = "x" * (3_900_000)
    answer = {"confirm_delete": {"action": "accept", "content": {"confirm": False, "pad": pad}}}
    reply = modern(r2, 3, "tasks/update", {"taskId": task_id, "inputResponses": answer})
    assert "result" in reply, str(reply)[:500]
    done = until(lambda: (lambda r: r if r["status"] == "completed" else None)(
        modern(r1, 4, "tasks/get", {"taskId": task_id})["result"]), "the task to complete", timeout=60)
    assert done["result"]["content"][0]["text"] == "Kept a.txt"
    time.sleep(1)
    spent = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
    print(f"CPU seconds per replica for one 3.9 MB tasks/update sent to r2 (r1 runs the task): {spent}")
    for name in ("r2", "r3"):
        assert spent[name] <= 3 * spent["r1"] + 0.5, spent
    # Handed to the task once, by the replica running it (relayed there to
    # decide, or, to a replica that does not take relays, addressed there);
    # nobody else saw it.
    handed = ("a relayed task operation decided", "answers from another host handed to the task")

    def times_handed(name: str) -> int:
        log = cluster.replicas[name].log()
        return sum(log.count(line) for line in handed)

    until(lambda: times_handed("r1") >= 1, "r1 to hand the answers to the task", timeout=10)
    time.sleep(0.5)
    assert times_handed("r1") == 1, cluster.replicas["r1"].log()[-3000:]
    for name in ("r2", "r3"):
        assert times_handed(name) == 0, cluster.replicas[name].log()[-3000:]
    assert psql(postgres.url, "SELECT count(*) FROM wasm_mcp_answers") == "0"


def wal_bytes(url: str) -> int:
    return int(psql(url, "SELECT wal_bytes FROM pg_stat_wal"))


def test_a_thousand_subscribes_write_what_they_add(cluster_factory, tmp_path, postgres):
    """Bound: 1 024 subscribes to long random URIs (3.8 KB each, near the
    4 KiB a URI may have; 3.9 MB in all) on one anonymous session write at
    most twice their size in WAL, plus 1 MiB for what three idle replicas
    write meanwhile. (Before: each subscribe rewrote the whole session,
    2.2 GB of WAL in all, 566x the data.)"""
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "hello"), count=3)
    r1 = cluster.replicas["r1"].authority
    session = open_session(r1)
    headers = session_headers(session)
    uris = [f"file:///{secrets.token_hex(1896)}" for _ in range(1024)]
    psql(postgres.url, "CHECKPOINT")
    start = wal_bytes(postgres.url)
    conn = http.client.HTTPConnection(r1, timeout=60)
    for i, uri in enumerate(uris):
        body = json.dumps({"jsonrpc": "2.0", "id": i + 10, "method": "resources/subscribe", "params": {"uri": uri}})
        conn.request("POST", "/mcp", body=body, headers=dict(BASE_HEADERS, **headers))
        response = conn.getresponse()
        raw = response.read().decode()
        assert response.status == 200 and '"result"' in raw, raw
    conn.close()
    written = wal_bytes(postgres.url) - start
    data = sum(len(uri) for uri in uris)
    print(f"WAL for 1024 subscribes: {written} bytes ({written / 1024:.0f} per subscribe; "
          f"{written / data:.1f}x the {data} bytes of URIs)")
    assert written <= 2 * data + (1 << 20), (written, data)
    kept = psql(postgres.url, f"SELECT count(*) FROM wasm_mcp_session_subscriptions WHERE session = '{session}'")
    assert kept == "1024"
    # The session's row holds none of them.
    record = psql(postgres.url, f"SELECT record FROM wasm_mcp_sessions WHERE id = '{session}'")
    assert json.loads(record)["subscriptions"] == []
    # Another replica takes the session up with all of them: an unsubscribe
    # there removes one.
    r2 = cluster.replicas["r2"].authority
    status, _, reply = post(r2, {"jsonrpc": "2.0", "id": 2, "method": "resources/unsubscribe",
                                 "params": {"uri": uris[5]}}, headers)
    assert status == 200 and "result" in reply, reply
    until(lambda: psql(postgres.url, f"SELECT count(*) FROM wasm_mcp_session_subscriptions "
                                     f"WHERE session = '{session}'") == "1023", "the unsubscribe to be kept")


def stored_events(url: str, session: str) -> int:
    return int(psql(url, f"SELECT count(*) FROM wasm_mcp_stream_events WHERE session = '{session}'"))


def test_the_stored_events_cap_holds_while_two_replicas_append(cluster_factory, tmp_path, postgres):
    """Bound: a session's stored SSE events never exceed
    `max_stream_events` (10 here), sampled throughout 400 responses
    streamed to one session by two replicas at once (four events each: three
    progress notifications and the answer), without slack: each
    append and its trim are one transaction that takes turns per session.
    (Before: trimmed every 32 appends of any session: a cap of 10 left 600
    rows.)"""
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE), count=2,
                              config="[state]\nmax_stream_events = 10\n")
    r1, r2 = (host.authority for host in cluster.replicas.values())
    session = open_session(r1)
    headers = session_headers(session)
    # r2 takes the session up too.
    status, _, _ = post(r2, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers)
    assert status == 200
    stop = threading.Event()
    seen = []

    def sample():
        while not stop.is_set():
            seen.append(stored_events(postgres.url, session))

    sampler = threading.Thread(target=sample)
    sampler.start()

    def call(i: int):
        # Progress notifications first: the answer is a stream, kept.
        authority = r1 if i % 2 else r2
        status, response_headers, reply = post(authority, {
            "jsonrpc": "2.0", "id": i + 100, "method": "tools/call",
            "params": {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": i}}}, headers)
        assert status == 200 and reply["result"]["content"][0]["text"] == "Progress tool completed", reply
        if i % 16 == 0:
            # A sample every 16 calls too, while the other 15 workers go on
            # appending: as many samples under load however fast the calls
            # run (the sampler thread alone took fewer when they ran fast).
            seen.append(stored_events(postgres.url, session))
        return response_headers.get("content-type", "")

    try:
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            kinds = list(pool.map(call, range(400)))
    finally:
        stop.set()
        sampler.join()
    assert any(kind.startswith("text/event-stream") for kind in kinds), "responses are streamed (and kept)"
    seen.append(stored_events(postgres.url, session))
    print(f"stored events of the session: max {max(seen)} over {len(seen)} samples (cap 10)")
    assert max(seen) <= 10, max(seen)
    # (Fewer than 10 may remain: both replicas number the streams they open
    # for the session from where it stood when they took it up, and an
    # event of a stream number the other replica used is not kept twice.)
    assert seen[-1] > 0 and len(seen) > 20, seen
    # One replica alone fills it to the bound, and no further.
    for i in range(10):
        call(1001 + 2 * i)
    assert stored_events(postgres.url, session) == 10


def session_rows(url: str, session: str) -> int:
    return int(psql(url, f"""SELECT (SELECT count(*) FROM wasm_mcp_stream_events WHERE session = '{session}')
        + (SELECT count(*) FROM wasm_mcp_session_subscriptions WHERE session = '{session}')
        + (SELECT count(*) FROM wasm_mcp_stream_counters WHERE session = '{session}')
        + (SELECT count(*) FROM wasm_mcp_sessions WHERE id = '{session}')"""))


def test_a_sessions_rows_go_with_it_ended_or_expired(cluster_factory, tmp_path, postgres):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE), count=2,
                              config="[http]\nsession_idle_secs = 3\n")
    r1, r2 = cluster.replicas["r1"], cluster.replicas["r2"]

    def busy_session() -> str:
        session = open_session(r1.authority)
        headers = session_headers(session)
        for i in range(3):
            status, _, _ = post(r1.authority, {"jsonrpc": "2.0", "id": i + 10, "method": "resources/subscribe",
                                               "params": {"uri": f"file:///s/{i}"}}, headers)
            assert status == 200
            status, _, _ = post(r1.authority, {"jsonrpc": "2.0", "id": i + 20, "method": "tools/call", "params": {
                "name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": i}}}, headers)
            assert status == 200
        assert stored_events(postgres.url, session) > 0
        return session

    # Ended (DELETE, through another replica).
    ended = busy_session()
    conn = http.client.HTTPConnection(r2.authority, timeout=30)
    conn.request("DELETE", "/mcp", headers=dict(BASE_HEADERS, **session_headers(ended)))
    assert conn.getresponse().status in (200, 204)
    conn.close()
    until(lambda: session_rows(postgres.url, ended) == 0, "the ended session's rows to go", timeout=20)

    # Expired: its replica dies, and the other sweeps it once idle.
    expired = busy_session()
    r1.proc.kill()
    r1.proc.wait(timeout=20)
    assert session_rows(postgres.url, expired) > 0
    until(lambda: session_rows(postgres.url, expired) == 0, "the expired session's rows to go", timeout=30)
