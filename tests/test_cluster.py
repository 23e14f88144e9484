"""Replicas behind HAProxy sharing a real PostgreSQL server (issue 36):
stateless calls spread over every replica with the same lists; a task
made on one replica is polled, answered and cancelled through the others;
a killed replica's task fails elsewhere once its lease lapses; a 2025
session continues on another replica without a new `initialize`; a
`list_changed` on one replica reaches sessions and listeners on the
others. Real clients (the Python `mcp` client) and raw HTTP."""

import http.client
import json
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from cluster import Cluster, Postgres, post, until
from conftest import CONFORMANCE, FIXTURES, PLUGINS, HttpHost, modern_meta
from test_http_transport import BASE_HEADERS, open_session, read_events
from test_traces import Receiver, attribute

TASKS_EXT = "io.modelcontextprotocol/tasks"
TS = Path(__file__).resolve().parent / "ts"


@pytest.fixture
def postgres(tmp_path):
    server = Postgres(tmp_path / "postgres")
    yield server
    server.stop()


@pytest.fixture
def cluster_factory(tmp_path, postgres, host_env):
    clusters = []

    def start(plugins, **kwargs) -> Cluster:
        cluster = Cluster(tmp_path / f"cluster{len(clusters)}", postgres, plugins, host_env, **kwargs)
        clusters.append(cluster)
        return cluster

    (tmp_path / "cluster0").mkdir()
    (tmp_path / "cluster1").mkdir()
    yield start
    for cluster in clusters:
        cluster.close()


def folder_of(tmp_path, name: str, *plugins: str, source=PLUGINS):
    folder = tmp_path / name
    folder.mkdir()
    for plugin in plugins:
        shutil.copy(source / f"{plugin}.wasm", folder / f"{plugin}.wasm")
    return folder


def modern(authority: str, id_, method: str, params: dict, tasks: bool = True):
    """A 2026-07-28 request; its JSON-RPC reply."""
    caps = {"elicitation": {}, "extensions": {TASKS_EXT: {}}} if tasks else {}
    params = dict(params, _meta=modern_meta(**{"io.modelcontextprotocol/clientCapabilities": caps}))
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    name = params.get("name") or params.get("taskId")
    if name:
        headers["Mcp-Name"] = name
    status, _, reply = post(authority, {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}, headers)
    assert status == 200 and reply is not None, (status, reply)
    return reply


def test_stateless_calls_spread_over_replicas_that_list_the_same(cluster_factory, tmp_path):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "hello", "notes"))
    lists = [modern(host.authority, 1, "tools/list", {})["result"]["tools"] for host in cluster.replicas.values()]
    assert lists[0] and lists[1:] == lists[:-1]
    for i in range(30):
        reply = modern(cluster.front, i, "tools/call", {"name": "greet", "arguments": {"name": f"n{i}"}})
        assert reply["result"]["content"][0]["text"] == f"Hello, n{i}!"
    for name in cluster.replicas:
        assert cluster.metric("wasm_mcp_tool_calls_total", name, 'tool="greet"') > 0, name


def test_a_task_is_polled_answered_and_cancelled_through_other_replicas(cluster_factory, tmp_path):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE),
                              config="[tasks]\nafter_ms = 300\n")
    r1, r2, r3 = (host.authority for host in cluster.replicas.values())

    # A long call on r1 becomes a task named after r1; r2 sees it working,
    # r3 cancels it, and r1 stops its call.
    slow = modern(r1, 1, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60, "detach": False}})
    task = slow["result"]
    assert task["resultType"] == "task" and task["taskId"].startswith("r1."), task
    assert modern(r2, 2, "tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "working"
    assert "result" in modern(r3, 3, "tasks/cancel", {"taskId": task["taskId"]})
    got = modern(r2, 4, "tasks/get", {"taskId": task["taskId"]})["result"]
    assert got["status"] == "cancelled"
    cluster.replicas["r1"].wait_for_log("task ended through another host", timeout=10)

    # A task that asks: r2 shows its question, r3 refuses a malformed
    # answer and takes a good one, r1's call goes on to its result, seen
    # from r2 and through HAProxy.
    asking = modern(r1, 5, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}})["result"]
    task_id = asking["taskId"]
    waiting = until(lambda: (lambda r: r if r["status"] == "input_required" else None)(
        modern(r2, 6, "tasks/get", {"taskId": task_id})["result"]), "the task to ask")
    assert list(waiting["inputRequests"]) == ["confirm_delete"]
    bad = modern(r3, 7, "tasks/update", {"taskId": task_id, "inputResponses": {"confirm_delete": {"action": "maybe"}}})
    assert bad["error"]["code"] == -32602
    good = modern(r3, 8, "tasks/update", {
        "taskId": task_id, "inputResponses": {"confirm_delete": {"action": "accept", "content": {"confirm": False}}}})
    assert "result" in good, good
    done = until(lambda: (lambda r: r if r["status"] == "completed" else None)(
        modern(r2, 9, "tasks/get", {"taskId": task_id})["result"]), "the task to complete", timeout=30)
    assert done["result"]["content"][0]["text"] == "Kept a.txt"
    through = modern(cluster.front, 10, "tasks/get", {"taskId": task_id})["result"]
    assert through["status"] == "completed"


def test_a_killed_replicas_task_fails_on_another(cluster_factory, tmp_path):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE),
                              config="[tasks]\nafter_ms = 300\n")
    r1, r2 = cluster.replicas["r1"], cluster.replicas["r2"]
    task = modern(r1.authority, 1, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 120, "detach": False}})
    task_id = task["result"]["taskId"]
    r1.proc.send_signal(signal.SIGKILL)
    r1.proc.wait(timeout=20)
    # The lease is 3 s, renewed every second: generous bounds only.
    failed = until(lambda: (lambda r: r if r["status"] == "failed" else None)(
        modern(r2.authority, 2, "tasks/get", {"taskId": task_id})["result"]), "the task to fail", timeout=60)
    assert "the replica running this task stopped" in failed["error"]["message"]
    # Through HAProxy too: the rule naming r1 is skipped while r1 is down.
    through = until(lambda: (lambda r: r if "result" in r else None)(
        modern(cluster.front, 3, "tasks/get", {"taskId": task_id})), "HAProxy to skip r1", timeout=60)
    assert through["result"]["status"] == "failed"


@pytest.mark.anyio
async def test_a_session_continues_on_another_replica(cluster_factory, tmp_path):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "hello"))
    async with Client(cluster.url, mode="legacy", read_timeout_seconds=120) as c:
        assert (await c.call_tool("greet", {"name": "one"})).content[0].text == "Hello, one!"
        # The session sticks to one replica: kill it.
        served = [name for name in cluster.replicas
                  if cluster.metric("wasm_mcp_tool_calls_total", name, 'tool="greet"') > 0]
        assert len(served) == 1, served
        victim = cluster.replicas[served[0]]
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=20)
        # No new initialize: another replica takes the session up.
        with anyio.fail_after(60):
            again = await c.call_tool("greet", {"name": "two"})
        assert again.content[0].text == "Hello, two!"
        assert "greet" in [t.name for t in (await c.list_tools()).tools]
    others = [name for name in cluster.replicas if name != served[0]]
    assert sum(cluster.metric("wasm_mcp_tool_calls_total", name, 'tool="greet"') for name in others) == 1


@pytest.mark.anyio
async def test_list_changed_on_one_replica_reaches_the_others(cluster_factory, tmp_path):
    folders = [folder_of(tmp_path, f"plugins{i}", "hello") for i in range(1, 4)]
    cluster = cluster_factory(folders)
    r2, r3 = cluster.replicas["r2"], cluster.replicas["r3"]
    send, heard = anyio.create_memory_object_stream(100)

    async def on_message(message):
        method = getattr(message, "method", None)
        if method and method.endswith("list_changed"):
            await send.send(method)

    async with Client(r2.url, mode="legacy", read_timeout_seconds=120, message_handler=on_message) as session, \
            Client(r3.url, mode="2026-07-28", read_timeout_seconds=120) as stateless:
        assert "greet" in [t.name for t in (await session.list_tools()).tools]
        async with stateless.listen(tools_list_changed=True) as sub:
            # Only r1's folder changes: r1 reloads, and says so to all.
            shutil.copy(PLUGINS / "wordcount.wasm", folders[0] / ".wordcount.tmp")
            (folders[0] / ".wordcount.tmp").rename(folders[0] / "wordcount.wasm")
            with anyio.fail_after(120):
                assert await heard.receive() == "notifications/tools/list_changed"
                event = await sub.__anext__()
            assert type(event).__name__ == "ToolsListChanged"


def readyz(authority: str):
    conn = http.client.HTTPConnection(authority, timeout=30)
    conn.request("GET", "/readyz")
    response = conn.getresponse()
    body = json.loads(response.read())
    conn.close()
    return response.status, body


def test_replicas_say_who_they_are_and_what_they_serve(cluster_factory, tmp_path):
    receiver = Receiver()
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "hello", "notes"),
                              config=f'[traces]\nendpoint = "{receiver.url}"\n')
    bodies = {name: readyz(host.authority) for name, host in cluster.replicas.items()}
    for name, (status, body) in bodies.items():
        assert status == 200 and body["status"] == "ready", body
        assert body["replica"] == name and body["store"] == "reachable"
    digests = {body["plugins"] for _, body in bodies.values()}
    assert len(digests) == 1 and digests.pop().startswith("sha256:")
    info = cluster.metric("wasm_mcp_replica", "r2", 'replica="r2"')
    assert info == 1
    assert cluster.metric("wasm_mcp_state_store_up", "r2") == 1
    # Its traces too.
    modern(cluster.replicas["r2"].authority, 1, "tools/call", {"name": "greet", "arguments": {"name": "t"}})
    try:
        until(lambda: any(attribute(r, "service.instance.id") == "r2" for r in receiver.resources),
              "a span from r2", timeout=60)
    finally:
        receiver.close()


def test_sigterm_drains_a_replica_under_load_without_failing_requests(cluster_factory, tmp_path):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE),
                              config="[tasks]\nafter_ms = 30000\n", cluster="drain_secs = 8")
    r1 = cluster.replicas["r1"]
    # On r1: a task that ends while r1 drains, and one that outlasts it.
    short = modern(r1.authority, 1, "tools/call", {"name": "failing_job", "arguments": {}})["result"]
    assert short["resultType"] == "task", short
    long = modern(r1.authority, 2, "tools/call", {
        "name": "slow_compute", "arguments": {"seconds": 120, "detach": True}})["result"]
    assert long["resultType"] == "task", long
    failures, done = [], []
    stop = threading.Event()

    def load(worker: int):
        i = 0
        while not stop.is_set() and i < 400:
            i += 1
            try:
                reply = modern(cluster.front, i, "tools/call",
                               {"name": "slow_compute", "arguments": {"seconds": 0.2}}, tasks=False)
                if reply.get("result", {}).get("resultType") != "complete":
                    failures.append(reply)
                else:
                    done.append(worker)
            except Exception as error:  # noqa: BLE001 - every failure counts
                failures.append(repr(error))

    workers = [threading.Thread(target=load, args=(w,)) for w in range(4)]
    for worker in workers:
        worker.start()
    until(lambda: len(done) >= 20, "the load to run")
    r1.proc.send_signal(signal.SIGTERM)
    # Draining: unready at once, still alive while its task runs.
    status, body = until(lambda: (lambda r: r if r[0] == 503 else None)(readyz(r1.authority)), "r1 to be unready",
                         timeout=10)
    assert "the host is shutting down" in body["reasons"]
    r1.proc.wait(timeout=60)
    served = len(done)
    until(lambda: len(done) >= served + 20, "the load to go on without r1")
    stop.set()
    for worker in workers:
        worker.join(timeout=120)
    assert failures == []
    ended = modern(cluster.replicas["r2"].authority, 4, "tasks/get", {"taskId": short["taskId"]})["result"]
    assert ended["status"] == "completed" and ended["result"]["isError"] is True, ended
    # The task r1 could not finish was handed back: another replica fails
    # it at once (well before its 3 s lease would lapse on its own).
    assert "running tasks handed back" in r1.log()
    failed = until(lambda: (lambda r: r if r["status"] == "failed" else None)(
        modern(cluster.replicas["r2"].authority, 3, "tasks/get", {"taskId": long["taskId"]})["result"]),
        "the handed-back task to fail", timeout=30)
    assert "the replica running this task stopped" in failed["error"]["message"]


def psql(url: str, query: str) -> str:
    run = subprocess.run(["psql", "-At", url, "-c", query], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def add_plugin(folder, plugin: str) -> None:
    shutil.copy(PLUGINS / f"{plugin}.wasm", folder / f".{plugin}.tmp")
    (folder / f".{plugin}.tmp").rename(folder / f"{plugin}.wasm")


def test_a_stream_resumes_on_another_replica_with_exactly_the_missed_events(cluster_factory, tmp_path, postgres):
    folders = [folder_of(tmp_path, f"plugins{i}", "hello") for i in range(1, 3)]
    cluster = cluster_factory(folders, count=2)
    r1, r2 = cluster.replicas["r1"], cluster.replicas["r2"]
    session = open_session(r1)
    headers = dict(BASE_HEADERS, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})

    def kept() -> int:
        return int(psql(postgres.url, f"SELECT count(*) FROM wasm_mcp_stream_events WHERE session = '{session}'"))

    # The client reads the first event of its GET stream on r1, then loses
    # the connection; more events are sent meanwhile.
    conn = http.client.HTTPConnection(r1.authority, timeout=120)
    conn.request("GET", "/mcp", headers=headers)
    stream = conn.getresponse()
    assert stream.status == 200
    add_plugin(folders[0], "wordcount")
    first = read_events(stream, 1)[0]
    assert first["id"] == "0-1" and "list_changed" in first["data"]
    conn.close()
    start = kept()
    add_plugin(folders[0], "shout")
    until(lambda: kept() > start, "the second event to be kept")
    start = kept()
    add_plugin(folders[0], "notes")
    until(lambda: kept() > start, "the third event to be kept")
    r1.proc.send_signal(signal.SIGKILL)
    r1.proc.wait(timeout=20)
    missed = psql(postgres.url, f"SELECT seq, text FROM wasm_mcp_stream_events WHERE session = '{session}' "
                                "AND stream = 0 AND seq > 1 ORDER BY seq").splitlines()
    missed = [line.split("|", 1) for line in missed]
    assert len(missed) >= 2

    # On r2, resuming after 0-1 replays exactly what r1 sent after it, then
    # goes on with the next number.
    conn = http.client.HTTPConnection(r2.authority, timeout=120)
    conn.request("GET", "/mcp", headers=dict(headers, **{"Last-Event-ID": "0-1"}))
    stream = conn.getresponse()
    assert stream.status == 200
    replayed = read_events(stream, len(missed))
    assert [(e["id"], e["data"]) for e in replayed] == [(f"0-{seq}", text) for seq, text in missed]
    assert "notifications/tools/list_changed" in replayed[0]["data"]
    add_plugin(folders[1], "stats")
    after = read_events(stream, 1)[0]
    assert after["id"] == f"0-{int(missed[-1][0]) + 1}" and "list_changed" in after["data"]
    conn.close()
    # The session goes on on r2 without a new initialize.
    status, _, reply = post(r2.authority, {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                           "params": {"name": "greet", "arguments": {"name": "again"}}}, headers)
    assert status == 200 and reply["result"]["content"][0]["text"] == "Hello, again!"


def test_a_store_outage_is_not_a_host_outage(cluster_factory, tmp_path, postgres):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE), count=2,
                              config="[tasks]\nafter_ms = 30000\n")
    r1, r2 = cluster.replicas["r1"], cluster.replicas["r2"]
    session = open_session(r1)
    headers = dict(BASE_HEADERS, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    greet = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "s"}}}

    postgres.down()
    # What needs no shared state is served, on every replica and through
    # HAProxy, and the session r1 holds goes on there.
    for authority in (r1.authority, r2.authority, cluster.front):
        reply = modern(authority, 2, "tools/call", {"name": "greet", "arguments": {"name": "x"}}, tasks=False)
        assert reply["result"]["content"][0]["text"] == "Hello, x!", reply
    status, _, reply = post(r1.authority, greet, headers)
    assert status == 200 and reply["result"]["content"][0]["text"] == "Hello, s!"
    # Still ready (a load balancer keeps every replica), saying the store is down.
    status, body = until(lambda: (lambda r: r if r[1]["store"] == "unreachable" else None)(readyz(r1.authority)),
                         "r1 to notice the outage", timeout=60)
    assert status == 200 and body["status"] == "ready"
    assert cluster.metric("wasm_mcp_state_store_up", "r1") == 0
    # What needs it fails clearly: a new task, taking a session up.
    refused = modern(r1.authority, 3, "tools/call", {"name": "failing_job", "arguments": {}})
    assert refused["error"]["code"] == -32603 and "store" in refused["error"]["message"], refused
    status, response_headers, reply = post(r2.authority, greet, headers)
    assert status == 503 and response_headers["retry-after"] == "1"
    assert "session store is unreachable" in reply["error"]["message"]

    postgres.up()
    # Everything comes back without a restart.
    until(lambda: readyz(r1.authority)[1]["store"] == "reachable", "r1 to see the store again", timeout=60)
    task = until(lambda: (lambda r: r if "result" in r else None)(
        modern(r1.authority, 4, "tools/call", {"name": "failing_job", "arguments": {}})), "a task to be made",
        timeout=60)
    assert task["result"]["resultType"] == "task"
    status, _, reply = post(r2.authority, greet, headers)
    assert status == 200 and reply["result"]["content"][0]["text"] == "Hello, s!"
    got = until(lambda: (lambda r: r if r["status"] == "completed" else None)(
        modern(r2.authority, 5, "tasks/get", {"taskId": task["result"]["taskId"]})["result"]),
        "the task to complete", timeout=60)
    assert got["result"]["isError"] is True


def test_an_idempotent_task_runs_again_on_another_replica(cluster_factory, tmp_path):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE),
                              config="[tasks]\nafter_ms = 300\n", cluster="rerun_idempotent = true")
    r1 = cluster.replicas["r1"]
    again = modern(r1.authority, 1, "tools/call", {
        "name": "idempotent_compute", "arguments": {"seconds": 3, "label": "twice"}})["result"]
    once = modern(r1.authority, 2, "tools/call", {
        "name": "slow_compute", "arguments": {"seconds": 120, "detach": True}})["result"]
    assert again["resultType"] == once["resultType"] == "task"
    r1.proc.send_signal(signal.SIGKILL)
    r1.proc.wait(timeout=20)
    r2 = cluster.replicas["r2"].authority
    done = until(lambda: (lambda r: r if r["status"] == "completed" else None)(
        modern(r2, 3, "tasks/get", {"taskId": again["taskId"]})["result"]), "the task to run again", timeout=90)
    assert done["result"]["content"][0]["text"] == "Computed twice in 3s"
    ran = [name for name in ("r2", "r3") if "running a task again" in cluster.replicas[name].log()]
    assert len(ran) == 1, ran
    # A tool not annotated idempotent is not run again: its task fails.
    failed = until(lambda: (lambda r: r if r["status"] == "failed" else None)(
        modern(r2, 4, "tasks/get", {"taskId": once["taskId"]})["result"]), "the other task to fail", timeout=60)
    assert "the replica running this task stopped" in failed["error"]["message"]


def test_typescript_sdks_through_haproxy(cluster_factory, tmp_path, host_env):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "hello", "notes"))
    node = shutil.which("node", path=host_env.get("PATH"))
    assert node, "node is not on PATH (scripts/test installs it)"
    run = subprocess.run(
        [node, "--test", "--test-concurrency=1", "--test-reporter=spec", "cluster.test.mjs"],
        cwd=TS, env=dict(host_env, WASM_MCP_URL=cluster.url), capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "fail 0" in run.stdout, run.stdout[-2000:]
    # The stateless calls went to every replica.
    for name in cluster.replicas:
        assert cluster.metric("wasm_mcp_tool_calls_total", name, 'tool="greet"') > 0, name


@pytest.mark.anyio
async def test_a_resource_update_on_one_replica_reaches_subscribers_on_the_others(cluster_factory, tmp_path):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "evil", source=FIXTURES))
    r1, r2, r3 = cluster.replicas["r1"], cluster.replicas["r2"], cluster.replicas["r3"]
    send, heard = anyio.create_memory_object_stream(100)

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/resources/updated":
            await send.send(str(message.params.uri))

    async with Client(r2.url, mode="legacy", read_timeout_seconds=120, message_handler=on_message) as session, \
            Client(r3.url, mode="2026-07-28", read_timeout_seconds=120) as stateless:
        await session.subscribe_resource("evil://self")
        async with stateless.listen(resource_subscriptions=["evil://self"]) as sub:
            # The plugin on r1 says its resource changed.
            reply = modern(r1.authority, 1, "tools/call", {"name": "touch", "arguments": {"uri": "evil://self"}},
                           tasks=False)
            assert reply["result"]["content"][0]["text"] == "touched"
            with anyio.fail_after(60):
                assert await heard.receive() == "evil://self"
                event = await sub.__anext__()
            assert "evil://self" in repr(event)


def test_a_session_ended_through_one_replica_ends_on_the_others(cluster_factory, tmp_path):
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "hello"), count=2)
    r1, r2 = cluster.replicas["r1"], cluster.replicas["r2"]
    session = open_session(r1)
    headers = dict(BASE_HEADERS, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    greet = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "d"}}}
    # Both replicas hold it: r1 opened it, r2 took it up.
    for authority in (r1.authority, r2.authority):
        status, _, reply = post(authority, greet, headers)
        assert status == 200 and reply["result"]["content"][0]["text"] == "Hello, d!"
    conn = http.client.HTTPConnection(r2.authority, timeout=30)
    conn.request("DELETE", "/mcp", headers=headers)
    assert conn.getresponse().status == 200
    conn.close()
    # r1 hears of it and ends its copy: the session is gone everywhere.
    until(lambda: post(r1.authority, greet, headers)[0] == 404, "r1 to end the session", timeout=30)
    assert post(r2.authority, greet, headers)[0] == 404


def test_an_idle_copy_on_one_replica_never_ends_a_session_another_serves(cluster_factory, tmp_path):
    """A session opened on r1 and then used only through r2 (a balancer
    with no stickiness, or one that moved it): r1's copy idles out, but
    the session lives on, since r2 uses it; r1 takes it up again when the
    client comes back. Once no replica uses it, it ends everywhere."""
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "hello"), count=2,
                              config="[http]\nsession_idle_secs = 2\n")
    r1, r2 = cluster.replicas["r1"], cluster.replicas["r2"]
    session = open_session(r1)
    headers = dict(BASE_HEADERS, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
    greet = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "i"}}}

    def served_by(replica):
        status, _, reply = post(replica.authority, greet, headers)
        assert status == 200 and reply["result"]["content"][0]["text"] == "Hello, i!", (status, reply)
        return True

    # Used through r2 until r1 has let go of its idle copy.
    until(lambda: served_by(r2) and cluster.metric("wasm_mcp_sessions", "r1") == 0,
          "r1's idle copy to go", timeout=60)
    # And on, for three times the idle time.
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        served_by(r2)
        time.sleep(0.3)
    # r1 takes the session up again: nobody ended it.
    assert served_by(r1)
    # Nobody uses it any more (asking would be using it): it ends on every
    # replica, and leaves the shared store.
    kept = f"SELECT count(*) FROM wasm_mcp_sessions WHERE id = '{session}'"
    until(lambda: psql(cluster.postgres.url, kept) == "0", "the unused session to end", timeout=60)
    until(lambda: cluster.metric("wasm_mcp_sessions", "r1") + cluster.metric("wasm_mcp_sessions", "r2") == 0,
          "both copies to go", timeout=60)
    assert post(r1.authority, greet, headers)[0] == 404
    assert post(r2.authority, greet, headers)[0] == 404


def test_a_replica_is_not_ready_until_it_reaches_the_database(tmp_path, postgres, host_env):
    postgres.down()
    config = tmp_path / "replica.toml"
    config.write_text(Path(host_env["WASM_MCP_CONFIG"]).read_text() + "\n[cluster]\nlease_secs = 3\n")
    host = HttpHost(folder_of(tmp_path, "plugins", "hello"), dict(host_env, WASM_MCP_CONFIG=str(config)),
                    ["--state", postgres.url, "--replica", "late"])
    try:
        # Alive and saying why it is not ready, while the database is down.
        status, body = until(lambda: (lambda r: r if "reasons" in r[1] and len(r[1]["reasons"]) == 1 else None)(
            readyz(host.authority)), "only the database to hold it up")
        assert status == 503 and body["reasons"] == ["the shared database has not been reached yet"]
        conn = http.client.HTTPConnection(host.authority, timeout=10)
        conn.request("GET", "/healthz")
        assert conn.getresponse().status == 200
        conn.close()
        postgres.up()
        until(lambda: readyz(host.authority)[0] == 200, "the replica to reach the database", timeout=60)
        assert "waiting for the shared database" in host.log()
    finally:
        host.close()


def test_replicas_reach_the_database_over_tls_checking_its_certificate(tmp_path, host_env):
    server = Postgres(tmp_path / "postgres", tls=True)
    hosts = []
    try:
        assert server.url.endswith("?sslmode=require")
        base = Path(host_env["WASM_MCP_CONFIG"]).read_text()
        folder = folder_of(tmp_path, "plugins", "hello")

        def replica(name: str, extra: str) -> HttpHost:
            config = tmp_path / f"{name}.toml"
            config.write_text(base + extra)
            host = HttpHost(folder, dict(host_env, WASM_MCP_CONFIG=str(config)),
                            ["--state", server.url, "--replica", name])
            hosts.append(host)
            return host

        trusting = replica("trusting", f'\n[state]\nca_file = "{server.ca}"\n')
        until(lambda: readyz(trusting.authority)[0] == 200, "the replica to reach the database", timeout=60)
        encrypted = psql(server.url, "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a "
                                     "USING (pid) WHERE a.application_name = 'wasm-mcp trusting'")
        assert encrypted == "t"
        # A certificate the system does not know is refused: never ready.
        doubting = replica("doubting", "")
        doubting.wait_for_log("waiting for the shared database", timeout=60)
        assert "certificate" in doubting.log().lower()
        status, body = until(lambda: (lambda r: r if r[1]["reasons"] == [
            "the shared database has not been reached yet"] else None)(readyz(doubting.authority)),
            "only the database to hold it up")
        assert status == 503
    finally:
        for host in hosts:
            host.close()
        server.stop()


def post_messages(authority: str, body: dict, headers: dict) -> tuple[int, list[dict]]:
    """POSTs `body` to /mcp at `authority`: the status and every JSON-RPC
    message of the answer (its notifications, then its reply)."""
    conn = http.client.HTTPConnection(authority, timeout=120)
    conn.request("POST", "/mcp", body=json.dumps(body), headers=dict(BASE_HEADERS, **headers))
    response = conn.getresponse()
    raw = response.read().decode()
    conn.close()
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]
    else:
        messages = [json.loads(raw)] if raw else []
    return response.status, messages


class StreamReader:
    """Reads a session's standalone (GET) stream on `replica` in a thread:
    its messages, as they arrive, in `messages`."""

    def __init__(self, replica, headers: dict):
        self.messages: list[dict] = []
        self.conn = http.client.HTTPConnection(replica.authority, timeout=300)
        self.conn.request("GET", "/mcp", headers=dict(headers, Accept="text/event-stream"))
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            while True:
                line = self.response.fp.readline().decode()
                if not line:
                    return
                if line.startswith("data:"):
                    self.messages.append(json.loads(line[5:]))
        except (OSError, ValueError, AttributeError):
            return

    def close(self):
        self.conn.close()


def session_headers(session: str) -> dict:
    return {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}


def test_a_log_level_set_through_one_replica_holds_on_another_holding_the_session(cluster_factory, tmp_path):
    """r1 holds a 2025-11-25 session (its client reads the GET stream
    there); the client sets the log level through r2: r1's copy hears of it
    and sends only what the new level lets through."""
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE), count=2)
    r1, r2 = cluster.replicas["r1"], cluster.replicas["r2"]
    session = open_session(r1)
    headers = session_headers(session)
    stream = StreamReader(r1, headers)
    logging = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "test_tool_with_logging", "arguments": {}}}

    def logs_through_r1() -> list[dict]:
        status, messages = post_messages(r1.authority, logging, headers)
        assert status == 200 and messages[-1]["result"]["content"][0]["text"] == "Logging tool completed", \
            messages
        return [m["params"] for m in messages if m.get("method") == "notifications/message"]

    def set_level_through_r2(level: str):
        status, messages = post_messages(
            r2.authority, {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": level}},
            headers)
        assert status == 200 and messages[-1]["result"] == {}, messages

    try:
        # No level set: r1 sends the plugin's info message.
        assert [m["level"] for m in logs_through_r1()] == ["info"] * 3
        set_level_through_r2("error")
        # r1 drops it from now on (once it heard of the change).
        until(lambda: logs_through_r1() == [], "r1 to take up the level set through r2", timeout=30)
        for _ in range(3):
            assert logs_through_r1() == []
        # And back: info set through r2 lets it through on r1 again.
        set_level_through_r2("info")
        heard = until(lambda: logs_through_r1(), "r1 to take up the second level", timeout=30)
        assert [m["data"] for m in heard] == ["Tool execution started", "Tool processing data",
                                              "Tool execution completed"]
        # r1 took up the change: it never needed to take the session up anew.
        assert cluster.metric("wasm_mcp_sessions", "r1") == 1
        assert not [m for m in stream.messages if m.get("method") == "notifications/message"]
    finally:
        stream.close()


def test_a_subscription_made_through_one_replica_is_served_on_anothers_stream(cluster_factory, tmp_path):
    """r1 holds a 2025-11-25 session and its GET stream; the client
    subscribes to a resource through r2: the resource's updates reach the
    client on r1's stream."""
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "evil", source=FIXTURES), count=2)
    r1, r2 = cluster.replicas["r1"], cluster.replicas["r2"]
    session = open_session(r1)
    headers = session_headers(session)
    stream = StreamReader(r1, headers)

    def on_r1(uri: str) -> bool:
        return any(m.get("method") == "notifications/resources/updated" and m["params"]["uri"] == uri
                   for m in stream.messages)

    def subscribe_through_r2(method: str, uri: str):
        status, messages = post_messages(
            r2.authority, {"jsonrpc": "2.0", "id": 3, "method": method, "params": {"uri": uri}}, headers)
        assert status == 200 and messages[-1]["result"] == {}, messages

    def touch(uri: str):
        reply = modern(r2.authority, 4, "tools/call", {"name": "touch", "arguments": {"uri": uri}}, tasks=False)
        assert reply["result"]["content"][0]["text"] == "touched"

    def touched_and_heard(uri: str) -> bool:
        touch(uri)
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            if on_r1(uri):
                return True
            time.sleep(0.05)
        return False

    try:
        subscribe_through_r2("resources/subscribe", "evil://self")
        until(lambda: touched_and_heard("evil://self"), "evil://self's update on r1's stream", timeout=60)
        # r1 took the change up in the copy it held all along.
        assert cluster.metric("wasm_mcp_sessions", "r1") == 1
    finally:
        stream.close()


def test_a_cancel_sent_to_another_replica_is_the_owners_decision(cluster_factory, tmp_path):
    """Issue 57: a tasks/cancel received by a replica that does not run
    the task is relayed to the one that does, which cancels (or refuses)
    and replies; the client hears that decision, and every replica then
    sees the same status."""
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE),
                              config="[tasks]\nafter_ms = 300\n")
    r1, r2 = cluster.replicas["r1"].authority, cluster.replicas["r2"].authority
    # r2 knows r1 takes relayed operations.
    cluster.replicas["r2"].wait_for_log("replica r1 takes relayed task operations", timeout=30)

    slow = modern(r1, 1, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60, "detach": False}})
    task_id = slow["result"]["taskId"]
    assert task_id.startswith("r1."), slow
    cancelled = modern(r2, 2, "tasks/cancel", {"taskId": task_id})
    assert "result" in cancelled, cancelled
    # r1 decided it (the relay reached it), and the task is cancelled
    # everywhere as soon as the client is answered.
    cluster.replicas["r1"].wait_for_log("a cancel it relayed here", timeout=10)
    for authority in (r1, r2):
        assert modern(authority, 3, "tasks/get", {"taskId": task_id})["result"]["status"] == "cancelled"
    # r2 did not hear its own change back as another replica's.
    assert "task ended through another host" not in cluster.replicas["r2"].log()

    # A finished task: cancelling it through r2 changes nothing.
    done = modern(r1, 4, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 1, "detach": False}})
    done_id = done["result"]["taskId"]
    until(lambda: modern(r2, 5, "tasks/get", {"taskId": done_id})["result"]["status"] == "completed",
          "the short task to complete", timeout=30)
    assert "result" in modern(r2, 6, "tasks/cancel", {"taskId": done_id})
    assert modern(r1, 7, "tasks/get", {"taskId": done_id})["result"]["status"] == "completed"


def test_an_answer_sent_to_another_replica_is_the_owners_decision(cluster_factory, tmp_path):
    """Issue 57: a tasks/update received by a replica that does not run the
    task is answered once the replica running it has taken the answers
    (the task no longer waits for them when the client hears back) or
    refused them (its error is the client's)."""
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "conformance", source=CONFORMANCE),
                              config="[tasks]\nafter_ms = 300\n")
    r1, r3 = cluster.replicas["r1"].authority, cluster.replicas["r3"].authority
    cluster.replicas["r3"].wait_for_log("replica r1 takes relayed task operations", timeout=30)

    asking = modern(r1, 1, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "b.txt"}})["result"]
    task_id = asking["taskId"]
    until(lambda: modern(r3, 2, "tasks/get", {"taskId": task_id})["result"]["status"] == "input_required",
          "the task to ask")
    # An answer to a question the task did not ask is ignored by r1: the
    # task still waits.
    stray = modern(r3, 3, "tasks/update", {"taskId": task_id, "inputResponses": {"other": {"action": "cancel"}}})
    assert "result" in stray, stray
    assert modern(r3, 4, "tasks/get", {"taskId": task_id})["result"]["status"] == "input_required"
    good = modern(r3, 5, "tasks/update", {
        "taskId": task_id, "inputResponses": {"confirm_delete": {"action": "accept", "content": {"confirm": True}}}})
    assert "result" in good, good
    # Answered after r1 took the answers: the task waits no more, whichever
    # replica is asked.
    for authority in (r3, r1):
        status = modern(authority, 6, "tasks/get", {"taskId": task_id})["result"]["status"]
        assert status in ("working", "completed"), status
    done = until(lambda: (lambda r: r if r["status"] == "completed" else None)(
        modern(r3, 7, "tasks/get", {"taskId": task_id})["result"]), "the task to complete", timeout=30)
    assert done["result"]["content"][0]["text"] == "Deleted b.txt"
    assert "a relayed task operation decided" in cluster.replicas["r1"].log()


def test_a_session_record_of_a_newer_version_is_not_served_nor_written_over(cluster_factory, tmp_path):
    """A replica of a newer version rewrote a session's row (version 99):
    a replica that does not hold the session does not serve it (404, the
    client initializes again) and counts it; one that holds a copy and
    saves a change does not write over the newer row."""
    cluster = cluster_factory(folder_of(tmp_path, "plugins", "hello"), count=2)
    r1, r2 = cluster.replicas["r1"], cluster.replicas["r2"]
    session = open_session(r1)
    headers = session_headers(session)
    newer = json.dumps({"v": 99, "id": session, "version": {"revision": "2027-01-01"}, "quorum": ["r9"]})
    psql(cluster.postgres.url, f"UPDATE wasm_mcp_sessions SET record = '{newer}' WHERE id = '{session}'")
    greet = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "v"}}}
    assert post(r2.authority, greet, headers)[0] == 404
    assert cluster.metric("wasm_mcp_cluster_unknown_records_total", "r2", 'record="session"') >= 1
    # r1 holds its copy: a change it saves leaves the newer row as it is.
    set_level = {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "error"}}
    post(r1.authority, set_level, headers)
    stored = psql(cluster.postgres.url, f"SELECT record FROM wasm_mcp_sessions WHERE id = '{session}'")
    assert json.loads(stored) == json.loads(newer)
