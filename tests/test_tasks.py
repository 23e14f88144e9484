"""Tasks on both wires, spoken raw: the 2025-11-25 `task` param with
tasks/get, tasks/result, tasks/list and tasks/cancel over stdio and HTTP
sessions; the 2026-07-28 extension (server-directed tasks, tasks/update,
notifications/tasks on subscriptions/listen); cancellation freeing the
plugin; binding to sessions and principals; and durability across a host
killed mid-task. The conformance suite (test_conformance.py) checks the
extension's wire shapes; the TypeScript clients run tasks in
ts/tasks.test.mjs and ts/ext_tasks.test.mjs."""

import http.client
import json
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BINARY, HttpHost, RawHost, modern_meta
from test_http_transport import BASE_HEADERS, INIT, call, open_session, post, read_events

TASKS_EXT = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"
TS = Path(__file__).resolve().parent / "ts"


def config_env(host_env, cache_dir, tmp_path, extra: str = "") -> dict:
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n{extra}')
    return dict(host_env, WASM_MCP_CONFIG=str(config))


def until(check, what: str, timeout: float = 60.0, every: float = 0.1):
    """Polls `check` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def stdio_host(folder, env, capabilities=None) -> RawHost:
    host = RawHost(folder, env)
    init = host.request("initialize", {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities or {},
        "clientInfo": {"name": "raw", "version": "1"},
    })
    host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    host.init = init["result"]
    return host


def error_code(response: dict) -> int:
    assert "error" in response, response
    return response["error"]["code"]


def test_a_requested_task_runs_to_its_result_on_2025_11_25(conformance_folder, host_env, cache_dir, tmp_path):
    env = config_env(host_env, cache_dir, tmp_path, "page_size = 2\n")
    host = stdio_host(conformance_folder, env)
    try:
        assert host.init["capabilities"]["tasks"] == {
            "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        tools, listed = {}, {"nextCursor": None}
        while "nextCursor" in listed:
            listed = host.request("tools/list", {"cursor": listed["nextCursor"]})["result"]
            tools.update({t["name"]: t for t in listed["tools"]})
        assert tools["slow_compute"]["execution"] == {"taskSupport": "optional"}
        assert tools["failing_job"]["execution"] == {"taskSupport": "required"}
        assert "execution" not in tools["greet"]

        created = host.request("tools/call", {
            "name": "slow_compute", "arguments": {"seconds": 1, "label": "sum"},
            "task": {"ttl": 60000}, "_meta": {"progressToken": "p1"},
        })["result"]
        task = created["task"]
        assert re.fullmatch(r"[0-9a-f]{32}", task["taskId"])
        assert task["status"] == "working" and task["ttl"] == 60000 and task["pollInterval"] > 0
        assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", task["createdAt"])
        got = host.request("tasks/get", {"taskId": task["taskId"]})["result"]
        assert got["taskId"] == task["taskId"] and got["status"] in ("working", "completed")

        result = host.request("tasks/result", {"taskId": task["taskId"]})["result"]
        assert result["content"][0]["text"] == "Computed sum in 1s"
        assert result["_meta"][RELATED] == {"taskId": task["taskId"]}
        # Progress went on after the call was answered with the task, under
        # the request's token and tagged with the task.
        progress = [m for m in host.pending if m.get("method") == "notifications/progress"]
        assert progress and all(m["params"]["progressToken"] == "p1" for m in progress), host.pending
        assert all(m["params"]["_meta"][RELATED]["taskId"] == task["taskId"] for m in progress)
        statuses = [m["params"] for m in host.pending if m.get("method") == "notifications/tasks/status"]
        assert any(s["taskId"] == task["taskId"] and s["status"] == "completed" for s in statuses), statuses
        done = host.request("tasks/get", {"taskId": task["taskId"]})["result"]
        assert done["status"] == "completed" and "pollInterval" not in done
        assert error_code(host.request("tasks/cancel", {"taskId": task["taskId"]})) == -32602

        # A tool error fails a 2025-11-25 task; tasks/result still answers
        # what the call answered.
        failing = host.request("tools/call", {"name": "failing_job", "arguments": {}, "task": {}})["result"]["task"]
        failed = host.request("tasks/result", {"taskId": failing["taskId"]})["result"]
        assert failed["isError"] is True and "failed" in failed["content"][0]["text"]
        status = host.request("tasks/get", {"taskId": failing["taskId"]})["result"]
        assert status["status"] == "failed" and "failed" in status["statusMessage"]

        # tasks/list pages through the session's tasks, oldest first.
        third = host.request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {}})
        ids, cursor = [], None
        while True:
            page = host.request("tasks/list", {"cursor": cursor} if cursor else {})["result"]
            assert len(page["tasks"]) <= 2
            ids += [t["taskId"] for t in page["tasks"]]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        assert ids == [task["taskId"], failing["taskId"], third["result"]["task"]["taskId"]]
        assert error_code(host.request("tasks/list", {"cursor": "not-a-cursor"})) == -32602

        assert error_code(host.request("tools/call", {"name": "failing_job", "arguments": {}})) == -32601
        assert error_code(host.request("tools/call", {"name": "greet", "arguments": {"name": "x"}, "task": {}})) == -32601
        assert error_code(host.request("tasks/get", {"taskId": "f" * 32})) == -32602
        assert error_code(host.request("tasks/update", {"taskId": task["taskId"], "inputResponses": {}})) == -32601
    finally:
        host.close()


def test_older_sessions_have_no_tasks(conformance_folder, host_env):
    host = RawHost(conformance_folder, host_env)
    try:
        init = host.initialize("2025-06-18")["result"]
        assert "tasks" not in init["capabilities"]
        # The task param is ignored: the call is answered as usual.
        answer = host.request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}, "task": {}})
        assert answer["result"]["content"][0]["text"] == "Computed a result in 0s"
        assert error_code(host.request("tasks/get", {"taskId": "x"})) == -32601
    finally:
        host.close()


def test_an_expired_task_is_gone(conformance_folder, host_env):
    host = stdio_host(conformance_folder, host_env)
    try:
        # The shortest time to live is a second.
        task = host.request("tools/call", {
            "name": "slow_compute", "arguments": {"seconds": 0}, "task": {"ttl": 1}})["result"]["task"]
        assert task["ttl"] == 1000
        assert host.request("tasks/result", {"taskId": task["taskId"]})["result"]["content"]
        time.sleep(1.2)
        gone = host.request("tasks/get", {"taskId": task["taskId"]})
        assert error_code(gone) == -32602 and "expired" in gone["error"]["message"]
    finally:
        host.close()


def test_a_task_asks_for_input_through_tasks_result(conformance_folder, host_env):
    host = stdio_host(conformance_folder, host_env, {"elicitation": {}})
    try:
        task = host.request("tools/call", {
            "name": "confirm_delete", "arguments": {"filename": "f.txt"}, "task": {}})["result"]["task"]
        until(lambda: host.request("tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "input_required",
              "the task to wait for input")
        host.send({"jsonrpc": "2.0", "id": "r", "method": "tasks/result", "params": {"taskId": task["taskId"]}})
        asked = next((m for m in host.pending if m.get("method") == "elicitation/create"), None)
        while asked is None:
            message = host.read()
            if message.get("method") == "elicitation/create":
                asked = message
            else:
                host.pending.append(message)
        assert asked["params"]["_meta"][RELATED] == {"taskId": task["taskId"]}
        assert asked["params"]["message"] == "Delete f.txt?"
        host.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"confirm": True}}})
        result = host.response("r")["result"]
        assert result["content"][0]["text"] == "Deleted f.txt"
        assert result["_meta"][RELATED] == {"taskId": task["taskId"]}
        assert host.request("tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "completed"
    finally:
        host.close()


def test_cancelling_a_task_stops_its_plugin(conformance_folder, host_env, cache_dir, tmp_path):
    # One call of the plugin at a time: if the cancelled call kept running,
    # the next call would wait for its slot for a minute.
    env = config_env(host_env, cache_dir, tmp_path, "[plugins.conformance.limits]\nmax_concurrent_calls = 1\n")
    host = stdio_host(conformance_folder, env)
    try:
        task = host.request("tools/call", {
            "name": "slow_compute", "arguments": {"seconds": 60}, "task": {}})["result"]["task"]
        cancelled = host.request("tasks/cancel", {"taskId": task["taskId"]})["result"]
        assert cancelled["taskId"] == task["taskId"] and cancelled["status"] == "cancelled"
        assert error_code(host.request("tasks/cancel", {"taskId": task["taskId"]})) == -32602
        assert host.request("tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "cancelled"
        assert error_code(host.request("tasks/result", {"taskId": task["taskId"]})) == -32600
        greeted = host.request("tools/call", {"name": "greet", "arguments": {"name": "next"}}, timeout=30)
        assert greeted["result"]["content"][0]["text"] == "Hello, next!"
        # The cancelled task stays cancelled.
        time.sleep(0.5)
        assert host.request("tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "cancelled"
    finally:
        host.close()


def rpc(host, session, method, params=None, id_=1, **headers) -> dict:
    """The response to one request of a session (from JSON or SSE)."""
    messages = call(host, session, id_, method, params, **headers).json()
    if isinstance(messages, list):
        return next(m for m in messages if m.get("id") == id_)
    return messages


def test_tasks_are_bound_to_their_session(http_host_factory, conformance_folder):
    host = http_host_factory(conformance_folder)
    alice, bob = open_session(host), open_session(host)
    task = rpc(host, alice, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.2}, "task": {}})
    task_id = task["result"]["task"]["taskId"]
    assert rpc(host, alice, "tasks/get", {"taskId": task_id})["result"]["taskId"] == task_id
    assert rpc(host, bob, "tasks/get", {"taskId": task_id})["error"]["code"] == -32602
    assert rpc(host, bob, "tasks/result", {"taskId": task_id})["error"]["code"] == -32602
    assert rpc(host, bob, "tasks/cancel", {"taskId": task_id})["error"]["code"] == -32602
    assert rpc(host, bob, "tasks/list")["result"]["tasks"] == []
    assert [t["taskId"] for t in rpc(host, alice, "tasks/list")["result"]["tasks"]] == [task_id]


def modern_params(params: dict, extension: bool = True) -> dict:
    caps = {"elicitation": {}, "extensions": {TASKS_EXT: {}}} if extension else {}
    return dict(params, _meta=modern_meta(**{"io.modelcontextprotocol/clientCapabilities": caps}))


def modern_post(host, id_, method, params, extension=True, **headers):
    body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": modern_params(params, extension)}
    name = params.get("name") or params.get("taskId")
    defaults = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name:
        defaults["Mcp-Name"] = name
    return post(host, body, **dict(defaults, **headers))


def modern_result(reply) -> dict:
    messages = reply.json()
    if isinstance(messages, list):
        messages = next(m for m in messages if "id" in m)
    return messages


def test_extension_tasks_follow_the_policy_and_notify_listeners(http_host_factory, conformance_folder, host_env,
                                                                cache_dir, tmp_path):
    env = config_env(host_env, cache_dir, tmp_path, "[tasks]\nafter_ms = 1000\n")
    host = http_host_factory(conformance_folder, env=env)
    # A quick call is answered at once; a call still running after the
    # threshold becomes a task, even when the plugin does not ask for one.
    quick = modern_result(modern_post(host, 1, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}}))
    assert quick["result"]["resultType"] == "complete"
    slow = modern_result(modern_post(host, 2, "tools/call", {
        "name": "slow_compute", "arguments": {"seconds": 2.5, "detach": False, "label": "late"}}))["result"]
    assert slow["resultType"] == "task" and slow["status"] == "working"
    assert slow["ttlMs"] > 0 and slow["pollIntervalMs"] > 0 and "task" not in slow
    task_id = slow["taskId"]

    # subscriptions/listen with the task's id: acknowledged, then a
    # notifications/tasks when it completes, with the result inlined.
    body = {"jsonrpc": "2.0", "id": 3, "method": "subscriptions/listen",
            "params": modern_params({"notifications": {"taskIds": [task_id, "not-mine"]}})}
    conn = http.client.HTTPConnection(host.authority, timeout=120)
    conn.request("POST", "/mcp", body=json.dumps(body), headers=dict(
        BASE_HEADERS, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"}))
    stream = conn.getresponse()
    assert stream.status == 200
    acknowledged = json.loads(read_events(stream, 1)[0]["data"])
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    assert acknowledged["params"]["notifications"]["taskIds"] == [task_id]
    while True:
        event = json.loads(read_events(stream, 1)[0]["data"])
        assert event["method"] == "notifications/tasks", event
        if event["params"]["status"] == "completed":
            break
    assert event["params"]["taskId"] == task_id
    assert event["params"]["result"]["content"][0]["text"] == "Computed late in 2.5s"
    conn.close()

    # Without the extension: tasks are never created, a task-only tool is
    # refused with -32021, and so is listening for tasks.
    plain = modern_result(modern_post(host, 4, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.5}},
                                      extension=False))
    assert plain["result"]["resultType"] == "complete"
    refused = modern_result(modern_post(host, 5, "tools/call", {"name": "failing_job", "arguments": {}},
                                        extension=False))
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"]["requiredCapabilities"]["extensions"] == {TASKS_EXT: {}}
    listen = modern_result(modern_post(host, 6, "subscriptions/listen", {"notifications": {"taskIds": [task_id]}},
                                       extension=False))
    assert listen["error"]["code"] == -32021

    # tasks/update checks the answers it takes: a malformed one is refused
    # and the question stays open; a good one resumes the task.
    asking = modern_result(modern_post(host, 7, "tools/call", {
        "name": "confirm_delete", "arguments": {"filename": "a.txt"}}))["result"]
    until(lambda: modern_result(modern_post(host, 8, "tasks/get", {"taskId": asking["taskId"]}))
          ["result"]["status"] == "input_required", "the task to ask")
    bad = modern_result(modern_post(host, 9, "tasks/update", {
        "taskId": asking["taskId"], "inputResponses": {"confirm_delete": {"action": "maybe"}}}))
    assert bad["error"]["code"] == -32602
    still = modern_result(modern_post(host, 10, "tasks/get", {"taskId": asking["taskId"]}))["result"]
    assert list(still["inputRequests"]) == ["confirm_delete"]
    ok = modern_result(modern_post(host, 11, "tasks/update", {
        "taskId": asking["taskId"], "inputResponses": {"confirm_delete": {"action": "accept", "content": {"confirm": False}}}}))
    assert ok["result"]["resultType"] == "complete"
    done = until(lambda: (lambda r: r if r["status"] == "completed" else None)(
        modern_result(modern_post(host, 12, "tasks/get", {"taskId": asking["taskId"]}))["result"]), "the task to end")
    assert done["result"]["content"][0]["text"] == "Kept a.txt"


def kill_and_restart(host: HttpHost, plugins, env) -> HttpHost:
    host.proc.send_signal(signal.SIGKILL)
    host.proc.wait(timeout=20)
    host.log_reader.join(timeout=20)
    return HttpHost(plugins, env)


def test_a_killed_host_keeps_finished_tasks_and_fails_running_ones(conformance_folder, host_env, cache_dir, tmp_path):
    store = tmp_path / "state" / "tasks.db"
    env = config_env(host_env, cache_dir, tmp_path,
                     f'[tasks]\nstore = "{store}"\n[http.auth]\ntokens = ["tok"]\n')
    auth = {"Authorization": "Bearer tok"}
    host = HttpHost(conformance_folder, env)
    try:
        session = open_session(host, **auth)
        finished = rpc(host, session, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 0.2}, "task": {}},
                       **auth)["result"]["task"]["taskId"]
        answer = rpc(host, session, "tasks/result", {"taskId": finished}, **auth)["result"]
        running = rpc(host, session, "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}, "task": {}},
                      **auth)["result"]["task"]["taskId"]
        modern_running = modern_result(modern_post(host, 2, "tools/call", {
            "name": "slow_compute", "arguments": {"seconds": 60}}, **auth))["result"]["taskId"]
        host = kill_and_restart(host, conformance_folder, env)

        # A new session of the same principal sees the tasks of the old one.
        session = open_session(host, **auth)
        assert rpc(host, session, "tasks/get", {"taskId": finished}, **auth)["result"]["status"] == "completed"
        assert rpc(host, session, "tasks/result", {"taskId": finished}, **auth)["result"] == answer
        lost = rpc(host, session, "tasks/get", {"taskId": running}, **auth)["result"]
        assert lost["status"] == "failed" and "restarted or crashed" in lost["statusMessage"]
        error = rpc(host, session, "tasks/result", {"taskId": running}, **auth)["error"]
        assert error["code"] == -32603 and "did not finish" in error["message"]
        listed = [t["taskId"] for t in rpc(host, session, "tasks/list", **auth)["result"]["tasks"]]
        assert finished in listed and running in listed and modern_running in listed
        detailed = modern_result(modern_post(host, 3, "tasks/get", {"taskId": modern_running}, **auth))["result"]
        assert detailed["status"] == "failed" and detailed["error"]["code"] == -32603 and "result" not in detailed
        # Without the token, nothing.
        assert post(host, INIT).status == 401
    finally:
        host.close()


@pytest.mark.parametrize("script", ["tasks.test.mjs", "ext_tasks.test.mjs"])
def test_typescript_clients_run_tasks(http_host_factory, conformance_folder, host_env, script):
    """The TS SDK v1 client's experimental tasks API (stdio and HTTP), and
    the official ext-tasks client library over the v2 SDK (both wires)."""
    host = http_host_factory(conformance_folder)
    node = shutil.which("node", path=host_env.get("PATH"))
    assert node, "node is not on PATH (scripts/test installs it)"
    env = dict(host_env, WASM_MCP_BINARY=str(BINARY), WASM_MCP_PLUGINS=str(conformance_folder), WASM_MCP_URL=host.url)
    run = subprocess.run(
        [node, "--test", "--test-reporter=spec", script],
        cwd=TS, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "fail 0" in run.stdout and "pass 2" in run.stdout, run.stdout[-2000:]


def test_task_quotas_per_owner_and_result_size(conformance_folder, host_env, cache_dir, tmp_path):
    store = tmp_path / "tasks.db"
    env = config_env(host_env, cache_dir, tmp_path,
                     f'[tasks]\nstore = "{store}"\nmax_running_per_owner = 1\n'
                     "max_stored_per_owner = 3\nmax_result_mb = 1\n")
    host = stdio_host(conformance_folder, env)

    def start(arguments):
        return host.request("tools/call", {"name": "slow_compute", "arguments": arguments,
                                           "task": {"ttl": 60000}}, timeout=30)

    try:
        running = start({"seconds": 60})["result"]["task"]["taskId"]
        # One running task per owner.
        refused = start({"seconds": 1})
        assert error_code(refused) == -32603
        assert "already runs 1 tasks" in refused["error"]["message"], refused
        host.request("tasks/cancel", {"taskId": running})

        # A result over the size kept fails its task with the reason.
        def started_big():
            response = start({"seconds": 0, "label": "x" * (3 << 19)})
            return response.get("result", {}).get("task", {}).get("taskId")

        big = until(started_big, "room for a task once the running one was cancelled")

        def over(task_id):
            got = host.request("tasks/get", {"taskId": task_id})["result"]
            return got if got["status"] not in ("working", "input_required") else None

        failed = until(lambda: over(big), "the big task to end")
        assert failed["status"] == "failed", failed
        assert "too large to keep" in failed["statusMessage"], failed
        result = host.request("tasks/result", {"taskId": big}, timeout=30)
        assert "too large to keep" in result["error"]["message"], result

        # Three tasks kept per owner (the cancelled, the failed, this one).
        small = until(lambda: start({"seconds": 0}).get("result", {}).get("task", {}).get("taskId"),
                      "room for a third task")
        until(lambda: over(small), "the third task to end")
        refused = start({"seconds": 0})
        assert "already keeps 3 tasks" in refused["error"]["message"], refused
        assert store.stat().st_size < 8 << 20, "the big result was not stored"
    finally:
        host.close()


def test_a_sessions_tasks_end_with_it(conformance_folder, host_env, cache_dir, tmp_path):
    store = tmp_path / "tasks.db"
    env = config_env(host_env, cache_dir, tmp_path, f'[tasks]\nstore = "{store}"\n')
    host = stdio_host(conformance_folder, env)
    try:
        task = host.request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 600},
                                           "task": {"ttl": 600000}})["result"]["task"]["taskId"]
    finally:
        host.close()
    # Nobody else can see a session's task: it was cancelled at the
    # client's EOF, not left running for its time to live.
    import sqlite3

    row = sqlite3.connect(store).execute("SELECT status FROM tasks WHERE id = ?", (task,)).fetchone()
    assert row == ("cancelled",), row
