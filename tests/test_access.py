"""Who may call what, against the real binary: tokens from an identity
provider whose keys rotate (its JWKS served by a small loopback server),
scopes and claims per plugin and tool deciding what each caller sees and
may call on both wires, calls per second per principal, and the audit log
read back."""

import base64
import http.client
import json
import shutil
import threading
import time

import pytest

from conftest import PLUGINS, modern_meta
from identity import IdentityProvider
from test_http_transport import BASE_HEADERS, call, modern, open_session, post, request


@pytest.fixture
def idp():
    provider = IdentityProvider()
    yield provider
    provider.close()


@pytest.fixture
def two_plugins(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name in ("hello", "notes"):
        shutil.copy(PLUGINS / f"{name}.wasm", folder / f"{name}.wasm")
    return folder


def start(http_host_factory, folder, host_env, tmp_path, idp, jwt_extra="", rest="", server=""):
    config = tmp_path / "access.toml"
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    config.write_text(
        f'[server]\ncache_dir = "{cache}"\n{server}\n'
        f"{rest}\n"
        '[http.auth]\nauthorization_servers = ["' + idp.issuer + '"]\n'
        f'[http.auth.jwt]\nissuer = "{idp.issuer}"\naudience = "wasm-mcp-test"\n{jwt_extra}\n'
    )
    env = dict(host_env, WASM_MCP_CONFIG=str(config))
    return http_host_factory(folder, env=env)


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


POLICY = """
[plugins.hello]
scopes = ["hello:use"]
[plugins.hello.tools.countdown]
scopes = ["hello:count"]
[plugins.notes]
claims = { "realm_access.roles" = ["notes-reader", "admin"] }
[plugins.notes.resources."notes://note/{id}"]
scopes = ["notes:read"]
"""


def test_keys_from_a_jwks_rotate(http_host_factory, two_plugins, host_env, tmp_path, idp):
    first = idp.add("k1", "RS256")
    host = start(http_host_factory, two_plugins, host_env, tmp_path, idp,
                 f'jwks_url = "{idp.issuer}/jwks"\njwks_min_refresh_secs = 0\n')
    assert post(host, {"jsonrpc": "2.0", "id": 1, "method": "ping"}).status == 401
    ping = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
    assert post(host, ping, **headers, **bearer(idp.token(first))).status == 200

    # New keys of every kind the host reads: a token naming one not held
    # yet fetches the set again.
    second, ec_key, ed_key = idp.add("k2", "RS256"), idp.add("e1", "ES256"), idp.add("d1", "EdDSA")
    for key in (second, ec_key, ed_key):
        reply = post(host, ping, **headers, **bearer(idp.token(key)))
        assert reply.status == 200, reply.raw

    # The first key leaves the set: once the set is fetched again (for a
    # token naming a key it does not hold), tokens signed with it are refused.
    idp.keys.remove(first)
    third = idp.add("k3", "RS256")
    assert post(host, ping, **headers, **bearer(idp.token(third))).status == 200
    refused = post(host, ping, **headers, **bearer(idp.token(first)))
    assert refused.status == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]

    # A key that signs for another audience, or a token with alg "none",
    # changes nothing.
    assert post(host, ping, **headers, **bearer(idp.token(third, audience="other"))).status == 401
    payload = idp.token(third).split(".")[1]
    none_header = base64.urlsafe_b64encode(b'{"alg":"none","kid":"k3"}').rstrip(b"=").decode()
    unsigned = f"{none_header}.{payload}."
    assert post(host, ping, **headers, **bearer(unsigned)).status == 401


def test_discovery_finds_the_jwks(http_host_factory, two_plugins, host_env, tmp_path, idp):
    key = idp.add("only", "ES256")
    host = start(http_host_factory, two_plugins, host_env, tmp_path, idp, "discovery = true\n", rest=POLICY)
    session = open_session(host, **bearer(idp.token(key, scope="hello:use")))
    listed = call(host, session, 2, "tools/list", **bearer(idp.token(key, scope="hello:use")))
    assert listed.status == 200
    assert {t["name"] for t in listed.json()["result"]["tools"]} == {"greet", "add"}


def test_a_misbehaving_jwks_never_stalls_tokens_it_does_not_need(
        http_host_factory, two_plugins, host_env, tmp_path, idp):
    known = idp.add("known", "RS256")
    host = start(http_host_factory, two_plugins, host_env, tmp_path, idp,
                 f'jwks_url = "{idp.issuer}/jwks"\njwks_min_refresh_secs = 0\njwks_timeout_ms = 30000\n'
                 "jwks_max_kb = 64\n")
    ping = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
    assert post(host, ping, **headers, **bearer(idp.token(known))).status == 200
    stranger = idp.add("stranger", "RS256")
    idp.keys.remove(stranger)

    # A slow JWKS: the token naming an unknown key waits for it, and the
    # tokens whose key is held are served meanwhile.
    idp.mode, idp.fetched = "slow", threading.Event()
    waiting = {}
    thread = threading.Thread(target=lambda: waiting.update(
        reply=post(host, ping, **headers, **bearer(idp.token(stranger)))))
    thread.start()
    assert idp.fetched.wait(20)
    for _ in range(5):
        assert post(host, ping, **headers, **bearer(idp.token(known))).status == 200
    assert thread.is_alive()
    idp.release.set()
    thread.join(60)
    assert waiting["reply"].status == 401

    # Huge and malformed sets are refused; the keys held stay.
    for mode in ("huge", "malformed"):
        idp.mode = mode
        assert post(host, ping, **headers, **bearer(idp.token(stranger))).status == 401
        assert post(host, ping, **headers, **bearer(idp.token(known))).status == 200
    log = host.log()
    assert "over the limit of 65536 bytes" in log
    assert "is not JSON" in log


def tool_names(reply) -> list[str]:
    assert reply.status == 200, reply.raw
    body = reply.json()
    body = body[-1] if isinstance(body, list) else body
    return [t["name"] for t in body["result"]["tools"]]


def test_each_caller_sees_and_calls_what_its_token_allows(
        http_host_factory, two_plugins, host_env, tmp_path, idp):
    key = idp.add("k", "RS256")
    host = start(http_host_factory, two_plugins, host_env, tmp_path, idp, "jwks_url = \"" + idp.issuer + "/jwks\"",
                 rest=POLICY)
    tokens = {
        "nobody": idp.token(key, subject="nobody"),
        "user": idp.token(key, subject="user", scope="hello:use"),
        "counter": idp.token(key, subject="counter", scp=["hello:use", "hello:count"]),
        "reader": idp.token(key, subject="reader", realm_access={"roles": ["notes-reader"]}),
    }
    expected = {"nobody": [], "user": ["greet", "add"], "counter": ["greet", "add", "countdown"], "reader": []}

    # The handshake wire: a session per caller.
    for who, token in tokens.items():
        session = open_session(host, **bearer(token))
        first = call(host, session, 2, "tools/list", **bearer(token))
        again = call(host, session, 3, "tools/list", **bearer(token))
        assert sorted(tool_names(first)) == sorted(expected[who]), who
        # The same principal and plugin set get the same bytes (but the id).
        assert first.raw.replace(b'"id":2', b'"id":3') == again.raw
    # The stateless wire: the same views, and the lists say they are private.
    for who, token in tokens.items():
        reply = modern(host, 4, "tools/list", **bearer(token))
        assert sorted(tool_names(reply)) == sorted(expected[who]), who
        assert reply.json()["result"]["cacheScope"] == "private"

    # Resources follow the claim, and the template its own scope.
    reader = tokens["reader"]
    resources = modern(host, 5, "resources/list", **bearer(reader)).json()["result"]["resources"]
    assert [r["uri"] for r in resources] == ["notes://index"]
    templates = modern(host, 6, "resources/templates/list", **bearer(reader)).json()["result"]
    assert templates["resourceTemplates"] == []
    assert modern(host, 7, "resources/list", **bearer(tokens["user"])).json()["result"]["resources"] == []
    prompts = modern(host, 8, "prompts/list", **bearer(reader)).json()["result"]["prompts"]
    assert [p["name"] for p in prompts] == ["summarize"]

    # A call without the scope: 403 and a challenge naming what it needs,
    # on both wires; the body is a JSON-RPC error.
    user = tokens["user"]
    refused = modern(host, 9, "tools/call", {"name": "countdown", "arguments": {"steps": 1}}, **bearer(user))
    assert refused.status == 403
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'error="insufficient_scope"' in challenge
    assert 'scope="hello:count hello:use"' in challenge and "resource_metadata=" in challenge
    assert refused.json()["error"]["code"] == -32003
    assert "hello:count" in refused.json()["error"]["message"]
    session = open_session(host, **bearer(user))
    refused = call(host, session, 10, "tools/call", {"name": "countdown", "arguments": {"steps": 1}}, **bearer(user))
    assert refused.status == 403 and 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    # Stepping up: the same session, a token with more scopes.
    counter = idp.token(key, subject="user", scope="hello:use hello:count")
    stepped = call(host, session, 11, "tools/call", {"name": "countdown", "arguments": {"steps": 1}}, **bearer(counter))
    assert stepped.status == 200
    # Without the claim, reading a resource or getting a prompt is refused.
    read = modern(host, 12, "resources/read", {"uri": "notes://index"}, **bearer(user))
    assert read.status == 403 and "scope=" not in read.headers["www-authenticate"]
    note = modern(host, 13, "resources/read", {"uri": "notes://note/1"}, **bearer(reader))
    assert note.status == 403 and 'scope="notes:read"' in note.headers["www-authenticate"]
    got = modern(host, 14, "prompts/get", {"name": "summarize", "arguments": {"id": "1"}}, **bearer(user))
    assert got.status == 403
    done = modern(host, 15, "completion/complete",
                  {"ref": {"type": "ref/prompt", "name": "summarize"}, "argument": {"name": "id", "value": ""}},
                  **bearer(user))
    assert done.status == 403
    # The caller allowed gets its answers.
    greet = modern(host, 16, "tools/call", {"name": "greet", "arguments": {"name": "ada"}}, **bearer(user))
    assert greet.status == 200 and "ada" in json.dumps(greet.json())
    refusals = [line for line in metrics(host, user).splitlines()
                if line.startswith('wasm_mcp_requests_refused_total{reason="scope"}')]
    assert refusals and float(refusals[0].split()[-1]) >= 6


def metrics(host, token: str) -> str:
    conn = http.client.HTTPConnection(host.authority, timeout=30)
    conn.request("GET", "/metrics", headers=bearer(token))
    body = conn.getresponse().read().decode()
    conn.close()
    return body


def test_calls_per_second_and_the_audit_log(http_host_factory, two_plugins, host_env, tmp_path, idp):
    key = idp.add("k", "EdDSA")
    audit = tmp_path / "audit.jsonl"
    rest = POLICY + '[plugins.hello.tools.add]\ncalls_per_sec = 0.2\n' + f'[audit]\nfile = "{audit}"\n'
    host = start(http_host_factory, two_plugins, host_env, tmp_path, idp,
                 "jwks_url = \"" + idp.issuer + "/jwks\"", rest=rest,
                 server="calls_per_sec_per_principal = 1")
    token = {who: idp.token(key, subject=who, scope="hello:use") for who in ("ada", "bob", "carol", "dave")}

    greet = {"name": "greet", "arguments": {"name": "secret-value-1234"}}
    replies = [modern(host, i, "tools/call", greet, **bearer(token["ada"])) for i in range(12)]
    codes = [r.status for r in replies]
    assert codes[0] == 200 and 429 in codes and set(codes) == {200, 429}, codes
    limited = next(r for r in replies if r.status == 429)
    assert int(limited.headers["retry-after"]) >= 1
    assert limited.json()["error"]["data"]["retryAfterMs"] >= 1
    assert "this client's" in limited.json()["error"]["message"]
    # Another principal has a bucket of its own.
    assert modern(host, 20, "tools/call", greet, **bearer(token["bob"])).status == 200
    # A tool's own rate: one call, then refused for the tool.
    add = {"name": "add", "arguments": {"a": 1, "b": 2}}
    assert modern(host, 21, "tools/call", add, **bearer(token["dave"])).status == 200
    again = modern(host, 22, "tools/call", add, **bearer(token["dave"]))
    assert again.status == 429 and "this tool's" in again.json()["error"]["message"]
    # Refusals of the other kinds: no token, and a token without the scope
    # (checked before the rate).
    assert modern(host, 23, "tools/call", greet).status == 401
    countdown = {"name": "countdown", "arguments": {"steps": 1}}
    assert modern(host, 24, "tools/call", countdown, **bearer(token["bob"])).status == 403
    # A call with a W3C trace context: its trace id is in its line.
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    params = dict(greet, _meta=dict(modern_meta(), traceparent=f"00-{trace_id}-00f067aa0ba902b7-01"))
    body = {"jsonrpc": "2.0", "id": 25, "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "greet"}
    assert post(host, body, **headers, **bearer(token["carol"])).status == 200

    lines = []
    deadline = time.time() + 20
    while time.time() < deadline:
        lines = [json.loads(line) for line in audit.read_text().splitlines()] if audit.exists() else []
        if len(lines) >= 18:
            break
        time.sleep(0.2)
    assert len(lines) == 18, lines
    assert "secret-value-1234" not in audit.read_text()
    calls = [line for line in lines if line["event"] == "call"]
    refused = [line for line in lines if line["event"] == "refused"]
    assert {line["outcome"] for line in refused} == {"rate_limited", "unauthenticated", "forbidden"}
    ada = [line for line in lines if line.get("principal") == f"jwt:{idp.issuer}#ada"]
    assert [line["outcome"] == "ok" for line in ada] == [c == 200 for c in codes]
    for line in ada:
        assert line["plugin"] == "hello" and line["target"] == "greet" and line["method"] == "tools/call"
        assert line["duration_ms"] >= 0 and line["time"].endswith("Z")
        assert line["arguments_sha256"].startswith("sha256:")
    assert len({line["arguments_sha256"] for line in ada}) == 1
    assert any(line.get("trace_id") == trace_id for line in calls)
    forbidden = next(line for line in refused if line["outcome"] == "forbidden")
    assert forbidden["target"] == "countdown" and forbidden["code"] == -32003
    rated = [line for line in metrics(host, token["carol"]).splitlines()
             if line.startswith('wasm_mcp_requests_refused_total{reason="rate"}')]
    assert rated and float(rated[0].split()[-1]) >= 2


def test_tool_search_finds_only_what_the_caller_may_call(
        http_host_factory, two_plugins, host_env, tmp_path, idp):
    key = idp.add("k", "ES256")
    host = start(http_host_factory, two_plugins, host_env, tmp_path, idp, "jwks_url = \"" + idp.issuer + "/jwks\"",
                 rest=POLICY, server="tool_search = true")
    user = idp.token(key, subject="user", scope="hello:use")
    counter = idp.token(key, subject="counter", scope="hello:use hello:count")
    nobody = idp.token(key, subject="nobody")
    assert tool_names(modern(host, 1, "tools/list", **bearer(nobody))) == ["search_tools", "call_tool"]
    assert tool_names(modern(host, 2, "tools/list", **bearer(user))) == ["search_tools", "call_tool", "greet", "add"]

    def search(token, query):
        reply = modern(host, 3, "tools/call", {"name": "search_tools", "arguments": {"query": query}}, **bearer(token))
        assert reply.status == 200, reply.raw
        return [t["name"] for t in reply.json()["result"]["structuredContent"]["tools"]]

    assert "countdown" not in search(user, "count down with progress")
    assert search(counter, "count down with progress")[0] == "countdown"
    assert search(nobody, "say hello") == []
    # Calling through call_tool is checked as a call of the tool itself.
    through = {"name": "call_tool", "arguments": {"name": "countdown", "arguments": {"steps": 1}}}
    refused = modern(host, 4, "tools/call", through, **bearer(user))
    assert refused.status == 403 and 'scope="hello:count hello:use"' in refused.headers["www-authenticate"]
    allowed = modern(host, 5, "tools/call", through, **bearer(counter))
    assert allowed.status == 200 and "counted down from 1" in json.dumps(allowed.json())


def test_profiles_at_their_own_paths_and_by_claim(http_host_factory, two_plugins, host_env, tmp_path, idp):
    key = idp.add("k", "RS256")
    rest = ('[profiles.greeter]\ninclude = ["hello.greet", "notes.*"]\n'
            '[profiles.quiet]\nexclude = ["notes.*", "hello.countdown"]\npath = "/quiet"\n')
    host = start(http_host_factory, two_plugins, host_env, tmp_path, idp,
                 "jwks_url = \"" + idp.issuer + "/jwks\"\n", rest=rest)
    # profile_claim sits in [http.auth], written by start(): add it there.
    host.close()
    config = tmp_path / "access.toml"
    config.write_text(config.read_text().replace("[http.auth]\n", '[http.auth]\nprofile_claim = "mcp_profile"\n'))
    host = http_host_factory(two_plugins, env=dict(host_env, WASM_MCP_CONFIG=str(config)))
    plain = bearer(idp.token(key))

    def at(path, id_, method, params=None, headers=plain):
        params = dict(params or {}, _meta=modern_meta())
        extra = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if "name" in params or "uri" in params:
            extra["Mcp-Name"] = params.get("name") or params.get("uri")
        body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}
        return request(host, "POST", body, dict(BASE_HEADERS, **extra, **headers), path=path)

    assert tool_names(at("/mcp", 1, "tools/list")) == ["greet", "add", "countdown"]
    assert tool_names(at("/mcp/greeter", 2, "tools/list")) == ["greet"]
    assert tool_names(at("/quiet", 3, "tools/list")) == ["greet", "add"]
    assert at("/quiet", 4, "resources/list").json()["result"]["resources"] == []
    assert [r["uri"] for r in at("/mcp/greeter", 5, "resources/list").json()["result"]["resources"]] == \
        ["notes://index"]
    refused = at("/mcp/greeter", 6, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert refused.json()["error"]["code"] == -32602
    assert "not offered here (profile greeter)" in refused.json()["error"]["message"]
    assert at("/mcp/greeter", 7, "tools/call", {"name": "greet", "arguments": {"name": "p"}}).status == 200
    # A session opened on a profile's path is served that profile.
    session = open_session(host, **plain)
    listed = request(host, "POST", {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}},
                     dict(BASE_HEADERS, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
                          **plain), path="/quiet")
    assert tool_names(listed) == ["greet", "add"]

    # Chosen by the token's claim on the main path.
    greeter = bearer(idp.token(key, mcp_profile="greeter"))
    assert tool_names(at("/mcp", 9, "tools/list", headers=greeter)) == ["greet"]
    unknown = bearer(idp.token(key, mcp_profile="no-such-profile"))
    assert tool_names(at("/mcp", 10, "tools/list", headers=unknown)) == []


def test_a_rule_naming_what_a_plugin_does_not_offer_is_pointed_out(http_host_factory, two_plugins, host_env, tmp_path):
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    config = tmp_path / "typo.toml"
    config.write_text(f'[server]\ncache_dir = "{cache}"\n'
                      '[plugins.hello.tools.gret]\nscopes = ["hello:use"]\n'
                      '[plugins.hello.tools.add]\ncalls_per_sec = 5\n'
                      '[plugins.notes.resources."notes://note/{id}"]\nscopes = ["notes:read"]\n')
    host = http_host_factory(two_plugins, env=dict(host_env, WASM_MCP_CONFIG=str(config)))
    log = host.wait_for_log("plugin hello offers no such tool", timeout=60)
    line = next(l for l in log.splitlines() if "offers no such" in l)
    assert 'plugins.hello.tools."gret"' in line and 'did you mean "greet"' in line
    assert '"add"' not in line
    # Names that match stay quiet, templates included.
    tool_names(modern(host, 1, "tools/list"))
    assert "plugin notes offers no such" not in host.log()


def test_skills_follow_their_plugins_rules(http_host_factory, two_plugins, host_env, tmp_path, idp):
    skill = two_plugins / "hello.skills" / "greeting"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greeting\ndescription: Greet well\n---\nCall greet.\n")
    key = idp.add("k", "RS256")
    host = start(http_host_factory, two_plugins, host_env, tmp_path, idp, "jwks_url = \"" + idp.issuer + "/jwks\"",
                 rest=POLICY)
    nobody = bearer(idp.token(key, subject="nobody"))
    user = bearer(idp.token(key, subject="user", scope="hello:use"))
    uri = "skill://hello/greeting/SKILL.md"
    listed = modern(host, 1, "skills/list", **user).json()["result"]
    assert [s["uri"] for s in listed["skills"]] == [uri] and listed["cacheScope"] == "private"
    assert modern(host, 2, "skills/list", **nobody).json()["result"]["skills"] == []
    for method, params in [("skills/get", {"uri": uri}), ("resources/read", {"uri": uri}),
                           ("resources/directory/read", {"uri": "skill://hello/greeting"})]:
        assert modern(host, 3, method, params, **user).status == 200, method
        refused = modern(host, 4, method, params, **nobody)
        assert refused.status == 403 and refused.json()["error"]["code"] == -32003, method
    # The plugin level lists only the skills the caller may read.
    level = modern(host, 5, "resources/directory/read", {"uri": "skill://hello"}, **user).json()["result"]
    assert [r["uri"] for r in level["resources"]] == ["skill://hello/greeting"]
    hidden = modern(host, 5, "resources/directory/read", {"uri": "skill://hello"}, **nobody).json()
    assert hidden["error"]["code"] == -32602
    resources = modern(host, 6, "resources/list", **nobody).json()["result"]["resources"]
    assert uri not in [r["uri"] for r in resources]
