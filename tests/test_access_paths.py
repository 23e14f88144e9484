"""Who may call what holds on every path, and fails closed: against the real
binary, with tokens from a loopback identity provider. Each test attacks
one side path: a skill's other files, the legacy HTTP+SSE transport's
messages, a profile claim on another profile's path, a typo in a section's
name, tools a "read-only" rule did not name, and the audit log's account
of what was called."""

import json
import shutil
import socket
import time

import pytest

from conftest import PLUGINS, modern_meta
from test_access import bearer, idp, start, tool_names  # noqa: F401 (idp is a fixture)
from test_cluster import postgres  # noqa: F401 (a fixture)
from test_http_transport import BASE_HEADERS, call, modern, open_session, request


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name in ("hello", "notes"):
        shutil.copy(PLUGINS / f"{name}.wasm", folder / f"{name}.wasm")
    return folder


def jwks(idp):
    return f'jwks_url = "{idp.issuer}/jwks"\n'


def add_skill(folder, plugin, name, files):
    skill = folder / f"{plugin}.skills" / name
    for path, text in files.items():
        (skill / path).parent.mkdir(parents=True, exist_ok=True)
        (skill / path).write_text(text)


SKILL = "---\nname: deploy\ndescription: How to deploy\n---\nSee references/runbook.md.\n"


@pytest.mark.parametrize("protected", ["SKILL.md", "references/runbook.md"])
def test_a_rule_on_any_file_of_a_skill_covers_all_of_it(
        http_host_factory, folder, host_env, tmp_path, idp, protected):
    add_skill(folder, "hello", "deploy", {"SKILL.md": SKILL, "references/runbook.md": "secret runbook",
                                          "scripts/go.sh": "echo go"})
    key = idp.add("k", "RS256")
    rules = ('[plugins.hello]\n[plugins.notes]\n'
             f'[plugins.hello.resources."skill://hello/deploy/{protected}"]\nscopes = ["ops"]\n')
    host = start(http_host_factory, folder, host_env, tmp_path, idp, jwks(idp), rest=rules)
    nobody = bearer(idp.token(key, subject="nobody"))
    ops = bearer(idp.token(key, subject="ops", scope="ops"))
    files = ["SKILL.md", "references/runbook.md", "scripts/go.sh"]
    for path in files:
        uri = f"skill://hello/deploy/{path}"
        refused = modern(host, 1, "resources/read", {"uri": uri}, **nobody)
        assert refused.status == 403, (path, refused.raw)
        assert "secret runbook" not in refused.raw.decode()
        assert modern(host, 2, "resources/read", {"uri": uri}, **ops).status == 200, path
    # Not listed, not followed, not browsed.
    listed = modern(host, 3, "resources/list", **nobody).json()["result"]["resources"]
    assert not [r for r in listed if r["uri"].startswith("skill://hello/deploy")]
    seen = modern(host, 4, "resources/list", **ops).json()["result"]["resources"]
    assert {f"skill://hello/deploy/{p}" for p in files} <= {r["uri"] for r in seen}
    assert modern(host, 5, "skills/list", **nobody).json()["result"]["skills"] == []
    for uri in ("skill://hello/deploy", "skill://hello/deploy/references"):
        assert modern(host, 6, "resources/directory/read", {"uri": uri}, **nobody).status == 403, uri
        assert modern(host, 7, "resources/directory/read", {"uri": uri}, **ops).status == 200, uri
    # On the handshake wire, subscribing is refused too.
    session = open_session(host, **nobody)
    subscribed = call(host, session, 8, "resources/subscribe",
                      {"uri": "skill://hello/deploy/scripts/go.sh"}, **nobody)
    assert subscribed.status == 403


def legacy_stream(host, token):
    """Opens GET /sse with `token`; the socket and the messages URL."""
    port = int(host.authority.split(":")[1])
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
              + f"Authorization: Bearer {token}\r\n\r\n".encode())
    opening = b""
    while b"sessionId=" not in opening or b"\n" not in opening.split(b"sessionId=")[1]:
        chunk = s.recv(4096)
        assert chunk, opening
        opening += chunk
    target = "/messages?sessionId=" + opening.split(b"sessionId=")[1].split(b"\n")[0].decode().strip()
    return s, target


def legacy_answer(s, id_, buffered=b"", timeout=30):
    """Reads the stream until the answer to request `id_` arrives."""
    deadline = time.time() + timeout
    data = buffered
    while time.time() < deadline:
        for line in data.split(b"\n"):
            if line.startswith(b"data: {"):
                message = json.loads(line[6:])
                if message.get("id") == id_:
                    return message
        s.settimeout(max(0.1, deadline - time.time()))
        chunk = s.recv(65536)
        assert chunk, "the stream ended"
        data += chunk
    raise AssertionError(f"no answer to {id_}")


def test_each_legacy_sse_message_acts_with_its_own_token(http_host_factory, folder, host_env, tmp_path, idp):
    key = idp.add("k", "RS256")
    rules = '[plugins.hello]\nscopes = ["hello:use"]\n[plugins.hello.tools.countdown]\nscopes = ["hello:count"]\n' \
            '[plugins.notes]\n'
    host = start(http_host_factory, folder, host_env, tmp_path, idp, jwks(idp), rest=rules,
                 server="")
    host.close()
    host = http_host_factory(folder, env=dict(host_env, WASM_MCP_CONFIG=str(tmp_path / "access.toml")),
                             args=["--legacy-sse"])
    strong = idp.token(key, subject="ada", scope="hello:use hello:count")
    weak = idp.token(key, subject="ada", scope="hello:use")
    other = idp.token(key, subject="bob", scope="hello:use hello:count")
    s, target = legacy_stream(host, strong)

    def send(token, body):
        return request(host, "POST", body, dict(BASE_HEADERS, Authorization=f"Bearer {token}"), path=target)

    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    assert send(strong, init).status == 202
    legacy_answer(s, 0)
    countdown = {"name": "countdown", "arguments": {"steps": 1}}
    # The stream was opened with the scope; this message's token lacks it.
    assert send(weak, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": countdown}).status == 202
    refused = legacy_answer(s, 1)
    assert refused["error"]["code"] == -32003 and "hello:count" in refused["error"]["message"]
    listed = send(weak, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert listed.status == 202
    assert "countdown" not in [t["name"] for t in legacy_answer(s, 2)["result"]["tools"]]
    # With the scope, it runs.
    assert send(strong, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": countdown}).status == 202
    assert "counted down" in json.dumps(legacy_answer(s, 3))
    # Another principal's token cannot post to this stream at all, and no
    # token is a 401.
    assert send(other, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).status == 404
    assert request(host, "POST", {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, BASE_HEADERS,
                   path=target).status == 401
    s.close()


def test_a_profile_claim_confines_its_token_on_every_path(http_host_factory, folder, host_env, tmp_path, idp):
    key = idp.add("k", "RS256")
    rest = ('[profiles.greeter]\ninclude = ["hello.greet", "notes.*"]\n'
            '[profiles.adder]\ninclude = ["hello.add", "hello.greet"]\npath = "/adder"\n'
            '[profiles.wide]\n')
    host = start(http_host_factory, folder, host_env, tmp_path, idp, jwks(idp), rest=rest)
    host.close()
    config = tmp_path / "access.toml"
    config.write_text(config.read_text().replace("[http.auth]\n", '[http.auth]\nprofile_claim = "mcp_profile"\n'))
    host = http_host_factory(folder, env=dict(host_env, WASM_MCP_CONFIG=str(config)))

    def at(path, id_, method, params=None, token=None):
        params = dict(params or {}, _meta=modern_meta())
        extra = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if "name" in params:
            extra["Mcp-Name"] = params["name"]
        body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
        return request(host, "POST", body, dict(BASE_HEADERS, **extra, **bearer(token)), path=path)

    greeter = idp.token(key, mcp_profile="greeter")
    # On its own path it gets its profile; on another profile's path, what
    # both offer; never the other profile's whole set.
    assert tool_names(at("/mcp", 1, "tools/list", token=greeter)) == ["greet"]
    assert tool_names(at("/adder", 2, "tools/list", token=greeter)) == ["greet"]
    assert tool_names(at("/mcp/wide", 3, "tools/list", token=greeter)) == ["greet"]
    add = at("/adder", 4, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, token=greeter)
    assert "not offered here (profile greeter)" in add.json()["error"]["message"]
    # A session opened on another profile's path keeps the claim's bounds.
    session = open_session(host, **bearer(greeter))
    listed = request(host, "POST", {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}},
                     dict(BASE_HEADERS, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
                          **bearer(greeter)), path="/adder")
    assert tool_names(listed) == ["greet"]
    # A claim that is not a name confines to nothing, on every path.
    for odd in (["greeter", "wide"], {"name": "wide"}, 7, True):
        token = idp.token(key, mcp_profile=odd)
        for path in ("/mcp", "/adder", "/mcp/wide"):
            assert tool_names(at(path, 6, "tools/list", token=token)) == [], (odd, path)
        got = at("/mcp", 7, "tools/call", {"name": "greet", "arguments": {"name": "x"}}, token=token)
        assert "error" in got.json(), odd
    # Without the claim, the path decides.
    plain = idp.token(key)
    assert tool_names(at("/adder", 8, "tools/list", token=plain)) == ["greet", "add"]


def test_a_plugin_no_section_names_is_closed_once_rules_exist(
        http_host_factory, folder, host_env, tmp_path, idp):
    key = idp.add("k", "RS256")
    # A typo: the real plugin is "hello".
    typo = '[plugins.helo]\nscopes = ["hello:use"]\n[plugins.notes]\n'
    host = start(http_host_factory, folder, host_env, tmp_path, idp, jwks(idp), rest=typo)
    user = bearer(idp.token(key, subject="user", scope="hello:use"))
    nobody = bearer(idp.token(key, subject="nobody"))
    for who in (user, nobody):
        assert tool_names(modern(host, 1, "tools/list", **who)) == []
        refused = modern(host, 2, "tools/call", {"name": "greet", "arguments": {"name": "x"}}, **who)
        assert refused.status == 403 and "unnamed_plugins" in refused.json()["error"]["message"]
    # notes is named (with no rule of its own): open.
    assert modern(host, 4, "resources/read", {"uri": "notes://index"}, **nobody).status == 200
    # The host says which section matches nothing, and which plugin no
    # section names.
    log = host.wait_for_log("plugin hello is loaded but no section plugins.hello names it", timeout=60)
    assert "it is served to no caller" in log
    assert "plugins.helo: no plugin of that name is loaded" in log and 'did you mean "hello"' in log
    host.close()

    # Opened on purpose.
    config = tmp_path / "access.toml"
    config.write_text(config.read_text() + '\n[access]\nunnamed_plugins = "open"\n')
    host = http_host_factory(folder, env=dict(host_env, WASM_MCP_CONFIG=str(config)))
    assert "greet" in tool_names(modern(host, 5, "tools/list", **nobody))


READ_ONLY = """
[roots.work]
path = "{root}"
mode = "read-write"
[plugins.filesystem]
roots = ["work"]
scopes = ["files:read"]
[[plugins.filesystem.tool_rules]]
unless_annotated = {{ readOnlyHint = true }}
scopes = ["files:write"]
"""


def test_a_read_only_rule_holds_for_every_tool_that_may_write(http_host_factory, host_env, tmp_path, idp):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "filesystem.wasm", folder / "filesystem.wasm")
    shutil.copy(PLUGINS / "filesystem.toml", folder / "filesystem.toml")
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("original")
    key = idp.add("k", "RS256")
    host = start(http_host_factory, folder, host_env, tmp_path, idp, jwks(idp),
                 rest=READ_ONLY.format(root=root))
    reader = bearer(idp.token(key, subject="reader", scope="files:read"))
    writer = bearer(idp.token(key, subject="writer", scope="files:read files:write"))
    listed = tool_names(modern(host, 1, "tools/list", **reader))
    everything = tool_names(modern(host, 2, "tools/list", **writer))
    assert "read_text_file" in listed and "list_directory" in listed
    writes = set(everything) - set(listed)
    assert {"write_file", "edit_file", "move_file", "create_directory"} <= writes
    attempts = {
        "write_file": {"path": "/work/a.txt", "content": "changed"},
        "edit_file": {"path": "/work/a.txt", "edits": [{"oldText": "original", "newText": "changed"}]},
        "move_file": {"source": "/work/a.txt", "destination": "/work/b.txt"},
        "create_directory": {"path": "/work/new"},
    }
    for tool in sorted(writes):
        arguments = attempts.get(tool, {"path": "/work/a.txt"})
        refused = modern(host, 3, "tools/call", {"name": tool, "arguments": arguments}, **reader)
        assert refused.status == 403, (tool, refused.raw)
        assert "files:write" in refused.headers["www-authenticate"], tool
    assert (root / "a.txt").read_text() == "original"
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]
    read = modern(host, 4, "tools/call", {"name": "read_text_file", "arguments": {"path": "/work/a.txt"}}, **reader)
    assert read.status == 200 and "original" in json.dumps(read.json())
    made = modern(host, 5, "tools/call", {"name": "create_directory", "arguments": {"path": "/work/new"}}, **writer)
    assert made.status == 200 and (root / "new").is_dir()


def test_the_audit_log_names_what_was_really_called(http_host_factory, folder, host_env, tmp_path, idp):
    key = idp.add("k", "RS256")
    audit = tmp_path / "audit.jsonl"
    rules = ('[plugins.hello]\nscopes = ["hello:use"]\n[plugins.hello.tools.countdown]\nscopes = ["hello:count"]\n'
             '[plugins.notes]\n' f'[audit]\nfile = "{audit}"\n')
    host = start(http_host_factory, folder, host_env, tmp_path, idp, jwks(idp), rest=rules)
    user = bearer(idp.token(key, subject="user", scope="hello:use"))
    # Tool search is off: "call_tool" is an unknown tool, whatever it names.
    unknown = modern(host, 1, "tools/call", {"name": "call_tool", "arguments": {"name": "greet",
                                                                               "arguments": {"name": "x"}}}, **user)
    assert "error" in unknown.json() or unknown.json()["result"].get("isError")
    assert modern(host, 2, "tools/call", {"name": "greet", "arguments": {"name": "x"}}, **user).status == 200
    done = modern(host, 3, "completion/complete", {"ref": {"type": "ref/prompt", "name": "summarize"},
                                                   "argument": {"name": "id", "value": ""}}, **user)
    assert done.status == 200, done.raw
    assert modern(host, 4, "tools/call", {"name": "countdown", "arguments": {"steps": 1}}, **user).status == 403
    expired = bearer(idp.token(key, subject="late", exp=int(time.time()) - 3600))
    assert modern(host, 5, "tools/call", {"name": "greet", "arguments": {"name": "x"}}, **expired).status == 401
    lines = []
    deadline = time.time() + 20
    while time.time() < deadline:
        lines = [json.loads(line) for line in audit.read_text().splitlines()] if audit.exists() else []
        if len(lines) >= 4:
            break
        time.sleep(0.2)
    time.sleep(0.5)
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    calls = [line for line in lines if line["event"] == "call"]
    assert [(c["method"], c["plugin"], c["target"]) for c in calls] == [
        ("tools/call", "hello", "greet"), ("completion/complete", "notes", "summarize")], lines
    refused = [line for line in lines if line["event"] == "refused"]
    assert len(refused) == 2, lines
    forbidden, unauthenticated = refused
    assert forbidden["target"] == "countdown" and forbidden["plugin"] == "hello"
    assert forbidden["outcome"] == "forbidden" and "hello:count" in forbidden["reason"]
    assert unauthenticated["outcome"] == "unauthenticated" and "expired" in unauthenticated["reason"]
    assert unauthenticated["principal"].endswith("#late")


def with_custom_section(wasm: bytes, name: str) -> bytes:
    """`wasm` with one more custom section: the same component, another
    digest."""

    def leb(n: int) -> bytes:
        out = bytearray()
        while True:
            byte = n & 0x7F
            n >>= 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    payload = leb(len(name)) + name.encode() + b"another build"
    return wasm + b"\x00" + leb(len(payload)) + payload


def test_a_task_run_again_is_resolved_by_identity_and_audited(tmp_path, postgres, host_env):
    from cluster import Cluster
    from conftest import CONFORMANCE
    from test_cluster import modern as cluster_modern, until
    import signal

    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(CONFORMANCE / "conformance.wasm", folder / "conformance.wasm")
    (tmp_path / "c").mkdir()
    cluster = Cluster(tmp_path / "c", postgres, folder, host_env,
                      config='[tasks]\nafter_ms = 300\n[audit]\nfile = "-"\n', cluster="rerun_idempotent = true")
    try:
        r1, r2, r3 = (cluster.replicas[n] for n in ("r1", "r2", "r3"))
        task = cluster_modern(r1.authority, 1, "tools/call", {
            "name": "idempotent_compute", "arguments": {"seconds": 3, "label": "again"}})["result"]
        assert task["resultType"] == "task"
        r1.proc.send_signal(signal.SIGKILL)
        r1.proc.wait(timeout=20)
        done = until(lambda: (lambda r: r if r["status"] == "completed" else None)(
            cluster_modern(r2.authority, 2, "tasks/get", {"taskId": task["taskId"]})["result"]),
            "the task to run again", timeout=90)
        assert done["status"] == "completed"

        def rerun_lines(replica):
            lines = [json.loads(line) for line in replica.log().splitlines() if line.startswith('{"time"')]
            return [line for line in lines if line.get("rerun")]

        ran = until(lambda: [line for r in (r2, r3) for line in rerun_lines(r)], "the rerun's audit line", timeout=30)
        assert len(ran) == 1, ran
        assert (ran[0]["event"], ran[0]["plugin"], ran[0]["target"], ran[0]["outcome"]) == \
            ("call", "conformance", "idempotent_compute", "ok")

        # Another build of the plugin replaces it while a task runs on r2;
        # r2 stops. The task is not run again with code it did not start
        # with: it fails, saying why.
        task = cluster_modern(r2.authority, 3, "tools/call", {
            "name": "idempotent_compute", "arguments": {"seconds": 20, "label": "swapped"}})["result"]
        assert task["resultType"] == "task"
        other = with_custom_section((folder / "conformance.wasm").read_bytes(), "rebuilt")
        (tmp_path / "next.wasm").write_bytes(other)
        (tmp_path / "next.wasm").replace(folder / "conformance.wasm")
        r3.wait_for_log("plugin reloaded", timeout=60)
        r2.proc.send_signal(signal.SIGKILL)
        r2.proc.wait(timeout=20)
        failed = until(lambda: (lambda r: r if r["status"] == "failed" else None)(
            cluster_modern(r3.authority, 4, "tasks/get", {"taskId": task["taskId"]})["result"]),
            "the swapped task to fail", timeout=90)
        assert "another version" in json.dumps(failed), failed
    finally:
        cluster.close()
