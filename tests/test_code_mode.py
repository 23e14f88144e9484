"""Code mode: plugins that call tools through the host (the contract's
`tool-calls`), against the real binary. `caller` (a Rust fixture) calls
one tool a number of times and says how it went, so each rule is checked
exactly: only what `call_tools` grants, only what the caller may use (the
same refusal, audited, naming the call that made it), a bound on calls, no
plugin reaching itself, a bound on nesting, cancellation passed on. The
code plugins (`code`, Python) run scripts that call tools as functions:
the word-count task against direct calls, an endless loop, a memory bomb,
a script calling code again, a long script as a task on both task wires."""

import json
import shutil
import time

from conftest import FIXTURES, PLUGINS, RawHost, modern_meta
from test_access import bearer, idp, start  # noqa: F401 (idp is a fixture)
from test_http_transport import BASE_HEADERS, modern, request
from test_tasks import modern_post, modern_result


def folder_with(tmp_path, *names, extra=()):
    """A plugin folder with the example plugins `names`, `caller` and the
    fixtures `extra` (each a file name under dist/fixtures, or a pair of it
    and the name to give it)."""
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(PLUGINS / f"{name}.wasm", folder / f"{name}.wasm")
        manifest = PLUGINS / f"{name}.toml"
        if manifest.exists():
            shutil.copy(manifest, folder / f"{name}.toml")
    for item in extra:
        source, name = item if isinstance(item, tuple) else (item, item)
        shutil.copy(FIXTURES / f"{source}.wasm", folder / f"{name}.wasm")
    return folder


def stdio_host(tmp_path, host_env, folder, config: str) -> RawHost:
    path = tmp_path / "config.toml"
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    path.write_text(f'[server]\ncache_dir = "{cache}"\n{config}')
    host = RawHost(folder, dict(host_env, WASM_MCP_CONFIG=str(path)))
    host.initialize()
    return host


def text_of(response: dict) -> str:
    result = response.get("result")
    assert result is not None, response
    return "".join(c.get("text", "") for c in result["content"])


def via(host, tool="call", **arguments) -> dict:
    """What `caller`'s `tool` reported, as JSON."""
    response = host.request("tools/call", {"name": tool, "arguments": arguments}, timeout=120)
    assert not response["result"].get("isError"), response
    return json.loads(text_of(response))


def test_a_plugin_calls_the_tools_its_grant_names_and_no_other(tmp_path, host_env):
    folder = folder_with(tmp_path, "hello", "notes", extra=["caller"])
    host = stdio_host(tmp_path, host_env, folder, '[plugins.caller]\ncall_tools = ["hello.*"]\n')
    try:
        greeted = via(host, name="greet", arguments={"name": "Ada"})
        assert greeted["ok"] == 1 and greeted["error"] is None, greeted
        assert greeted["last"]["content"][0]["text"] == "Hello, Ada!"
        added = via(host, name="add", arguments={"a": 2, "b": 3})
        assert added["last"]["structuredContent"] == {"sum": 5}
        # The tool's schema is checked as for a client: a tool error.
        bad = via(host, name="add", arguments={"a": "two"})
        assert bad["last"]["isError"] is True and "Invalid arguments for tool add" in json.dumps(bad)
        unknown = via(host, name="no_such_tool")
        assert unknown["error"] == {"code": -32602, "message": "Unknown tool: no_such_tool"}, unknown
        # What it may call: hello's tools, not its own, not notes'.
        found = via(host, "search", query="")
        assert {(t["plugin"], t["name"]) for t in found["tools"]} == {
            ("hello", "greet"), ("hello", "add"), ("hello", "countdown")}, found
        assert all(t["inputSchema"]["type"] == "object" for t in found["tools"])
        ranked = via(host, "search", query="add two numbers", limit=1)
        assert [t["name"] for t in ranked["tools"]] == ["add"], ranked
    finally:
        host.close()


def test_a_tool_outside_the_grant_or_a_plugin_not_granted_is_refused(tmp_path, host_env):
    folder = folder_with(tmp_path, "hello", "time", extra=["caller"])
    host = stdio_host(tmp_path, host_env, folder, '[plugins.caller]\ncall_tools = ["hello.greet"]\n')
    try:
        refused = via(host, name="add", arguments={"a": 1, "b": 2})
        assert refused["error"]["code"] == -32600, refused
        assert refused["error"]["message"] == (
            "plugin caller may not call tool add: [plugins.caller] call_tools names no pattern "
            "that matches hello.add"), refused
        assert via(host, name="greet", arguments={"name": "x"})["ok"] == 1
    finally:
        host.close()
    host = stdio_host(tmp_path, host_env, folder, "")
    try:
        refused = via(host, name="greet", arguments={"name": "x"})
        assert refused["ok"] == 0, refused
        assert refused["error"]["message"].startswith(
            "plugin caller may not call tools: the operator has not granted it"), refused
        assert via(host, "search", query="")["tools"] == []
    finally:
        host.close()


def test_calls_stop_at_the_bound_and_a_plugin_never_reaches_itself(tmp_path, host_env):
    folder = folder_with(tmp_path, "hello", extra=["caller", ("caller", "relay")])
    audit = tmp_path / "audit.jsonl"
    config = ('[plugins.caller]\ncall_tools = ["*"]\n'
              '[plugins.relay]\ncall_tools = ["*"]\n[plugins.relay.limits]\ntool_calls = 7\n'
              f'[audit]\nfile = "{audit}"\n')
    host = stdio_host(tmp_path, host_env, folder, config)
    try:
        many = via(host, name="greet", arguments={"name": "x"}, times=10_000)
        assert many["ok"] == 100, {k: many[k] for k in ("ok", "error")}
        assert many["error"]["message"] == "this call has called 100 tools, its limit (tool_calls)"
        # relay's own tools, as the catalogue names them (caller came first).
        names = {t["name"] for t in host.request("tools/list")["result"]["tools"]}
        assert {"relay.call", "relay.search"} <= names, names
        # Through relay, whose own bound is 7.
        nested = via(host, name="relay.call", arguments={"name": "greet", "arguments": {"name": "x"},
                                                       "times": 50})
        inner = json.loads(nested["last"]["content"][0]["text"])
        assert inner["ok"] == 7 and "its limit (tool_calls)" in inner["error"]["message"], inner
        # Itself, directly and through relay.
        itself = via(host, name="call", arguments={"name": "greet"})
        assert itself["error"]["code"] == -32600
        assert itself["error"]["message"] == (
            "tool call is plugin caller's, which is already on the way here (caller → caller): "
            "a plugin never reaches itself"), itself
        # Refused by the grant's rules: audited as a refusal, naming the parent.
        mine = lambda ls: [l for l in ls if (l.get("plugin"), l.get("target"), l.get("parent"))
                           == ("caller", "call", "caller.call")]
        refused = mine(audit_lines(audit, mine))
        assert refused and refused[0]["event"] == "refused" and refused[0]["outcome"] == "forbidden", lines
        around = via(host, name="relay.call", arguments={"name": "search", "arguments": {"query": ""}})
        inner = json.loads(around["last"]["content"][0]["text"])
        assert "(caller → relay → caller): a plugin never reaches itself" in inner["error"]["message"], inner
        # relay sees hello's tools and caller's... but never its own.
        seen = json.loads(via(host, name="relay.search", arguments={"query": ""})["last"]["content"][0]["text"])
        assert {t["plugin"] for t in seen["tools"]} == {"hello"}, seen
    finally:
        host.close()


def test_calls_nest_no_deeper_than_every_plugin_on_the_way_allows(tmp_path, host_env):
    folder = folder_with(tmp_path, "hello", extra=["caller", ("caller", "relay")])
    config = ('[plugins.caller]\ncall_tools = ["relay.*"]\n[plugins.caller.limits]\ntool_call_depth = 1\n'
              '[plugins.relay]\ncall_tools = ["hello.*"]\n')
    host = stdio_host(tmp_path, host_env, folder, config)
    try:
        nested = via(host, name="relay.call", arguments={"name": "greet", "arguments": {"name": "x"}})
        assert nested["ok"] == 1, nested
        inner = json.loads(nested["last"]["content"][0]["text"])
        assert inner["ok"] == 0, inner
        assert inner["error"]["message"] == (
            "calling tool greet from caller → relay would nest calls 2 deep: the plugins on the "
            "way allow 1 (tool_call_depth)"), inner
    finally:
        host.close()
    # The outermost plugin's bound counts every call made for the request:
    # relay's own calls spend caller's budget of 5 (relay.call was one).
    host = stdio_host(tmp_path, host_env, folder,
                      config.replace("tool_call_depth = 1", "tool_calls = 5"))
    try:
        nested = via(host, name="relay.call", arguments={"name": "greet", "arguments": {"name": "x"},
                                                       "times": 50})
        inner = json.loads(nested["last"]["content"][0]["text"])
        assert inner["ok"] == 4, inner
        assert inner["error"]["message"] == (
            "this request's tool calls reached their limit (5 calls, tool_calls), counting those "
            "of the tools it called"), inner
    finally:
        host.close()
    # With the default (2), the same call goes through.
    host = stdio_host(tmp_path, host_env, folder, config.replace("tool_call_depth = 1", ""))
    try:
        nested = via(host, name="relay.call", arguments={"name": "greet", "arguments": {"name": "x"}})
        inner = json.loads(nested["last"]["content"][0]["text"])
        assert inner["ok"] == 1 and inner["last"]["content"][0]["text"] == "Hello, x!", inner
    finally:
        host.close()


def test_a_tool_that_runs_only_as_a_task_is_refused_inside(tmp_path, host_env):
    folder = folder_with(tmp_path, extra=["caller"])
    shutil.copy(FIXTURES.parent / "conformance" / "conformance.wasm", folder / "conformance.wasm")
    host = stdio_host(tmp_path, host_env, folder, '[plugins.caller]\ncall_tools = ["conformance.*"]\n')
    try:
        refused = via(host, name="failing_job")
        assert refused["ok"] == 0, refused
        assert refused["error"]["message"] == (
            "tool failing_job runs only as a task, which a tool called from a plugin never becomes"), refused
    finally:
        host.close()


def audit_lines(path, want, timeout=10.0):
    """The audit log's lines once `want(lines)` holds (waiting up to
    `timeout` for the writer thread)."""
    deadline = time.time() + timeout
    while True:
        lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        if want(lines) or time.time() > deadline:
            return lines
        time.sleep(0.05)


def test_inside_a_call_the_callers_own_access_profile_and_rates_hold(
        http_host_factory, tmp_path, host_env, idp):
    folder = folder_with(tmp_path, "hello", extra=["caller"])
    audit = tmp_path / "audit.jsonl"
    key = idp.add("k", "RS256")
    rules = ('[plugins.caller]\ncall_tools = ["*"]\n'
             '[plugins.hello]\n[plugins.hello.tools.countdown]\nscopes = ["hello:count"]\n'
             '[plugins.hello.tools.add]\ncalls_per_sec = 0.001\n'
             '[profiles.greeter]\ninclude = ["caller.*", "hello.greet"]\n'
             f'[audit]\nfile = "{audit}"\n')
    host = start(http_host_factory, folder, host_env, tmp_path, idp,
                 f'jwks_url = "{idp.issuer}/jwks"\n', rest=rules)
    token = bearer(idp.token(key, subject="ada"))

    def direct(name, arguments):
        return modern(host, 1, "tools/call", {"name": name, "arguments": arguments}, **token).json()

    def at(path, params):
        params = dict(params, _meta=modern_meta())
        headers = dict(BASE_HEADERS, **token, **{"MCP-Protocol-Version": "2026-07-28",
                                                 "Mcp-Method": "tools/call", "Mcp-Name": params["name"]})
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        return request(host, "POST", body, headers, path=path).json()

    def inside(name, arguments, path="/mcp", times=1):
        reply = at(path, {"name": "call", "arguments": {"name": name, "arguments": arguments,
                                                        "times": times}})
        return json.loads(reply["result"]["content"][0]["text"])

    # A scope the token lacks: the same error as outside, and audited.
    outside = direct("countdown", {"steps": 1})["error"]
    refused = inside("countdown", {"steps": 1})
    assert refused["ok"] == 0
    assert refused["error"] == {"code": outside["code"], "message": outside["message"]}, (refused, outside)
    lines = audit_lines(audit, lambda ls: any(l.get("parent") for l in ls))
    nested = [l for l in lines if l.get("parent") == "caller.call"]
    assert nested and nested[0]["event"] == "refused" and nested[0]["target"] == "countdown", lines
    assert nested[0]["principal"].endswith("#ada"), nested
    # Rates count calls made inside: the first add passes, the next is refused.
    rated = inside("add", {"a": 1, "b": 2}, times=3)
    assert rated["ok"] == 1, rated
    outside = direct("add", {"a": 1, "b": 2})["error"]
    # The same refusal (its retry time aside).
    assert rated["error"]["code"] == outside["code"], (rated, outside)
    assert rated["error"]["message"].split("; retry")[0] == outside["message"].split("; retry")[0], rated
    assert "Too many calls" in outside["message"]
    # A profile confines what is called inside as it confines the caller.
    assert inside("greet", {"name": "x"}, path="/mcp/greeter")["ok"] == 1
    confined = inside("add", {"a": 1, "b": 2}, path="/mcp/greeter")
    outside = at("/mcp/greeter", {"name": "add", "arguments": {"a": 1, "b": 2}})["error"]
    assert "not offered here (profile greeter)" in outside["message"], outside
    assert confined["error"] == {"code": outside["code"], "message": outside["message"]}, (confined, outside)
    lines = audit_lines(audit, lambda ls: sum(1 for l in ls if l.get("parent")) >= 6)
    calls = [l for l in lines if l.get("parent") == "caller.call" and l["event"] == "call"]
    assert {l["target"] for l in calls} >= {"add", "greet"}, lines


def test_cancelling_a_call_cancels_the_tool_it_is_calling(tmp_path, host_env):
    folder = folder_with(tmp_path, "hello", extra=["caller"])
    audit = tmp_path / "audit.jsonl"
    host = stdio_host(tmp_path, host_env, folder,
                      f'[plugins.caller]\ncall_tools = ["hello.*"]\n[audit]\nfile = "{audit}"\n')
    try:
        host.next_id += 1
        outer = host.next_id
        host.send({"jsonrpc": "2.0", "id": outer, "method": "tools/call", "params": {
            "name": "call", "arguments": {"name": "countdown",
                                          "arguments": {"steps": 1000, "delay_ms": 100}}}})
        # The tool runs: its log reaches the client through the call.
        while True:
            message = host.read(timeout=60)
            assert message.get("id") != outer, message
            if "step 3 of 1000" in json.dumps(message.get("params", {})):
                break
        cancelled_at = time.time()
        host.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": outer, "reason": "enough"}})
        lines = audit_lines(audit, lambda ls: any(l.get("target") == "countdown" for l in ls), timeout=10)
        ended = [l for l in lines if l.get("target") == "countdown"]
        assert ended and ended[0]["parent"] == "caller.call", lines
        # It ended because it was cancelled, long before its 100 s.
        assert time.time() - cancelled_at < 10
        assert ended[0]["duration_ms"] < 30_000, ended
        # The host goes on serving.
        assert via(host, name="greet", arguments={"name": "x"})["ok"] == 1
    finally:
        host.close()


# The code plugins: scripts that call tools as functions.

def code_host(tmp_path, host_env, config="", plugins=("code", "filesystem", "time"), files=None):
    """The host over stdio serving `plugins` (and the folder /data, with
    `files`, granted to filesystem), once `code`'s tool is served."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    for name, text in (files or {}).items():
        (data / name).write_text(text)
    folder = folder_with(tmp_path, *plugins)
    host = stdio_host(tmp_path, host_env, folder,
                      f'[roots.data]\npath = "{data}"\n[plugins.filesystem]\nroots = ["data"]\n{config}')
    wanted = {"code": "run_python", "code-js": "run_javascript"}
    deadline = time.time() + 600  # a first compile of CPython on a busy machine
    while True:
        names = {t["name"] for t in host.request("tools/list")["result"]["tools"]}
        if all(wanted[p] in names for p in plugins if p in wanted):
            return host
        assert time.time() < deadline, names
        time.sleep(0.5)


def run(host, script, tool="run_python", task=None):
    params = {"name": tool, "arguments": {"script": script}}
    if task is not None:
        params["task"] = task
    return host.request("tools/call", params, timeout=120)


def returned(host, script, tool="run_python"):
    response = run(host, script, tool)
    result = response.get("result")
    assert result and not result.get("isError"), response
    return result["structuredContent"]["result"]


WORDS = {f"note{i}.txt": " ".join(["lorem"] * (i + 1) + ["ipsum"] * i) + "\n" for i in range(12)}

COUNT_SCRIPT = """
listing = tools.filesystem.list_directory(path="/data")
listing = listing["content"] if isinstance(listing, dict) else listing
files = [l[7:] for l in listing.splitlines() if l.startswith("[FILE] ")]
counts = {}
for f in files:
    body = tools.filesystem.read_text_file(path=f"/data/{f}")
    body = body["content"] if isinstance(body, dict) else body
    counts[f] = len(body.split())
return {"files": len(counts), "words": sum(counts.values()), "most": max(counts, key=counts.get)}
"""


def test_a_script_reads_every_file_and_returns_one_small_object(tmp_path, host_env):
    host = code_host(tmp_path, host_env, '[plugins.code]\ncall_tools = ["filesystem.*"]\n', files=WORDS)
    try:
        def exchange(name, arguments):
            """A tools/call's response, and the bytes of it and its request."""
            response = host.request("tools/call", {"name": name, "arguments": arguments}, timeout=120)
            sent = {"jsonrpc": "2.0", "id": host.next_id, "method": "tools/call",
                    "params": {"name": name, "arguments": arguments}}
            return response, len(json.dumps(sent)) + len(json.dumps(response))

        response, code_bytes = exchange("run_python", {"script": COUNT_SCRIPT})
        got = response["result"]["structuredContent"]["result"]
        assert got == {"files": 12, "words": sum(2 * i + 1 for i in range(12)), "most": "note11.txt"}, response
        # The same, one direct call at a time, as a client without code mode.
        _, direct_bytes = exchange("list_directory", {"path": "/data"})
        for name in WORDS:
            _, more = exchange("read_text_file", {"path": f"/data/{name}"})
            direct_bytes += more
        print(f"\ncode mode: {code_bytes} bytes in 1 round trip; direct calls: {direct_bytes} bytes "
              f"in {len(WORDS) + 1} round trips")
    finally:
        host.close()


def test_inside_a_script_tools_are_refused_as_the_grant_says(tmp_path, host_env):
    host = code_host(tmp_path, host_env, '[plugins.code]\ncall_tools = ["filesystem.*", "code.*"]\n',
                     files={"a.txt": "hello"})
    try:
        got = returned(host, """
caught = {}
for name, args in [("get_current_time", {"timezone": "UTC"}), ("run_python", {"script": "return 1"})]:
    try:
        tools.call(name, args)
    except ToolError as e:
        caught[name] = [e.code, e.message]
return {"caught": caught, "plugins": sorted(p for p in dir(tools) if not p.startswith("_"))}
""")
        assert got["caught"]["get_current_time"] == [
            -32600, "plugin code may not call tool get_current_time: [plugins.code] call_tools names no "
                    "pattern that matches time.get_current_time"], got
        code, message = got["caught"]["run_python"]
        assert code == -32600 and message.endswith("(code → code): a plugin never reaches itself"), got
        assert "filesystem" in got["plugins"] and "time" not in got["plugins"], got
        # An error the script does not catch is the tool's error, with its traceback.
        failed = run(host, "print('before')\nraise ValueError('no good')")
        text = text_of(failed)
        assert failed["result"]["isError"] is True
        assert "ValueError: no good" in text and "before" in text, text
    finally:
        host.close()


def test_an_endless_loop_and_a_memory_bomb_end_at_their_bounds(tmp_path, host_env):
    host = code_host(tmp_path, host_env, '[plugins.code.limits]\ncall_timeout_ms = 4000\nmemory_mb = 192\n',
                     plugins=("code", "filesystem"))
    try:
        started = time.time()
        looped = run(host, "while True:\n    pass")
        assert time.time() - started < 60
        said = json.dumps(looped)
        assert "ran longer than 4s and was stopped" in said, looped
        bombed = run(host, "blocks = []\nwhile True:\n    blocks.append(bytearray(16 << 20))")
        said = json.dumps(bombed)
        assert ("MemoryError" in said or "memory" in said) and "blocks" not in json.dumps(
            bombed.get("result", {}).get("structuredContent")), bombed
        # Neither cost the host anything: the next script runs.
        assert returned(host, "return 6 * 7") == 42
    finally:
        host.close()


def test_a_long_script_runs_as_a_task_on_both_wires(tmp_path, host_env, http_host_factory):
    host = code_host(tmp_path, host_env, '[plugins.code]\ncall_tools = ["filesystem.*"]\n',
                     plugins=("code", "filesystem"), files={"a.txt": "one two three"})
    script = ("import time\ntime.sleep(1)\n"
              "body = tools.filesystem.read_text_file(path='/data/a.txt')\n"
              "return len((body['content'] if isinstance(body, dict) else body).split())")
    try:
        # 2025-11-25: the client asks for a task.
        created = run(host, script, task={"ttl": 60000})
        task = created["result"]["task"]
        deadline = time.time() + 60
        while task["status"] == "working":
            assert time.time() < deadline, task
            time.sleep(0.2)
            task = host.request("tasks/get", {"taskId": task["taskId"]})["result"]
        assert task["status"] == "completed", task
        result = host.request("tasks/result", {"taskId": task["taskId"]})["result"]
        assert result["structuredContent"]["result"] == 3, result
    finally:
        host.close()
    # 2026-07-28 (over HTTP): a call still running after [tasks] after_ms
    # becomes one.
    config = tmp_path / "config.toml"
    config.write_text(config.read_text() + "[tasks]\nafter_ms = 200\n")
    http = http_host_factory(tmp_path / "plugins", env=dict(host_env, WASM_MCP_CONFIG=str(config)))
    answer = modern_result(modern_post(http, 1, "tools/call", {
        "name": "run_python", "arguments": {"script": script}}))["result"]
    assert answer["resultType"] == "task" and answer["status"] == "working", answer
    deadline = time.time() + 60
    while True:
        got = modern_result(modern_post(http, 2, "tasks/get", {"taskId": answer["taskId"]}))["result"]
        if got["status"] != "working":
            break
        assert time.time() < deadline, got
        time.sleep(0.2)
    assert got["status"] == "completed", got
    assert got["result"]["structuredContent"]["result"] == 3, got


def test_a_javascript_script_calls_tools_and_returns_its_value(tmp_path, host_env):
    host = code_host(tmp_path, host_env, '[plugins.code-js]\ncall_tools = ["filesystem.*", "code-js.*"]\n',
                     plugins=("code-js", "filesystem"), files={"a.txt": "one two three"})
    try:
        got = returned(host, """
const body = await tools.filesystem.read_text_file({path: "/data/a.txt"});
console.log("read", typeof body);
let refused = null;
try { tools.call("run_javascript", {script: "return 1"}); } catch (e) { refused = e.message; }
return {words: (body.content ?? body).split(" ").length, refused};
""", tool="run_javascript")
        assert got["words"] == 3, got
        assert got["refused"].endswith("a plugin never reaches itself"), got
    finally:
        host.close()
