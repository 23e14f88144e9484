"""The Streamable HTTP transport, spoken raw: sessions, SSE and resumption,
the stateless revision's headers, DNS-rebinding protection, limits, CORS
and bearer authentication."""

import base64
import hashlib
import hmac
import http.client
import json
import shutil
import socket
import time

import pytest

from conftest import PLUGINS, modern_meta

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
BASE_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def hello_folder(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    return folder


class Reply:
    def __init__(self, response: http.client.HTTPResponse):
        self.status = response.status
        self.headers = {k.lower(): v for k, v in response.getheaders()}
        self.raw = response.read()
        self.events = []
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            self.events = parse_sse(self.raw.decode())

    def json(self):
        if self.events:
            return [json.loads(e["data"]) for e in self.events if e.get("data")]
        return json.loads(self.raw)


def parse_sse(text: str) -> list[dict]:
    events, current = [], {}
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line:
            if current:
                events.append(current)
                current = {}
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        current[key] = current[key] + "\n" + value if key == "data" and key in current else value
    if current:
        events.append(current)
    return events


def request(host, method: str, body=None, headers=None, path=None, conn=None) -> Reply:
    own = conn is None
    conn = conn or http.client.HTTPConnection(host.authority, timeout=120)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn.request(method, path or "/" + host.url.split("/", 3)[3], body=data, headers=headers or {})
    reply = Reply(conn.getresponse())
    if own:
        conn.close()
    return reply


def post(host, body, **headers) -> Reply:
    return request(host, "POST", body, dict(BASE_HEADERS, **headers))


def open_session(host, **headers) -> str:
    reply = post(host, INIT, **headers)
    assert reply.status == 200, reply.raw
    session = reply.headers["mcp-session-id"]
    done = post(
        host,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25", **headers},
    )
    assert done.status == 202
    return session


def call(host, session, id_, method, params=None, **headers) -> Reply:
    body = {"jsonrpc": "2.0", "id": id_, "method": method, "params": params or {}}
    return post(host, body, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25", **headers})


def modern(host, id_, method, params=None, **headers) -> Reply:
    params = dict(params or {}, _meta=modern_meta())
    name = params.get("name") or params.get("uri")
    defaults = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if name:
        defaults["Mcp-Name"] = name
    defaults.update(headers)
    return post(host, {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}, **defaults)


def test_a_session_is_opened_used_and_ended(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder)
    session = open_session(host)
    assert len(session) == 32 and int(session, 16) >= 0
    other = open_session(host)
    assert other != session

    greet = call(host, session, 2, "tools/call", {"name": "greet", "arguments": {"name": "http"}})
    assert greet.status == 200
    assert greet.json()["result"]["content"][0]["text"] == "Hello, http!"

    missing = post(host, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert missing.status == 400 and missing.json()["id"] == 3
    unknown = call(host, "0" * 32, 4, "tools/list")
    assert unknown.status == 404

    ended = request(host, "DELETE", headers={"Mcp-Session-Id": session})
    assert ended.status == 200
    assert call(host, session, 5, "tools/list").status == 404
    assert request(host, "DELETE", headers={"Mcp-Session-Id": session}).status == 404
    # The other session is untouched.
    assert call(host, other, 6, "tools/list").status == 200


def test_protocol_version_header_is_checked(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder)
    session = open_session(host)
    bad = call(host, session, 2, "tools/list", **{"MCP-Protocol-Version": "1999-01-01"})
    assert bad.status == 400
    error = bad.json()["error"]
    assert error["code"] == -32022 and "2025-11-25" in error["data"]["supported"]
    assert call(host, session, 3, "tools/list").status == 200


def test_bad_input_gets_a_clear_error_and_costs_nothing(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder, args=[])
    session = open_session(host)
    garbage = request(host, "POST", b"{not json", dict(BASE_HEADERS, **{"Mcp-Session-Id": session}))
    assert garbage.status == 400 and garbage.json()["error"]["code"] == -32700
    wrong_type = request(host, "POST", json.dumps(INIT).encode(), {"Content-Type": "text/plain"})
    assert wrong_type.status == 415
    batch = request(host, "POST", b"[]", BASE_HEADERS)
    assert batch.status == 400 and batch.json()["error"]["code"] == -32600
    assert call(host, session, 2, "tools/list").status == 200


def test_request_bodies_are_limited(http_host_factory, hello_folder, cache_dir, host_env, tmp_path):
    config = tmp_path / "small.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[http]\nmax_body_mb = 1\n')
    host = http_host_factory(hello_folder, env=dict(host_env, WASM_MCP_CONFIG=str(config)))
    session = open_session(host)
    big = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "greet", "arguments": {"name": "x" * (2 << 20)}}}
    reply = post(host, big, **{"Mcp-Session-Id": session})
    assert reply.status == 413
    assert call(host, session, 3, "tools/list").status == 200


def test_dns_rebinding_is_refused(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder)
    assert post(host, INIT, Host="evil.example.com").status == 403
    assert post(host, INIT, Origin="http://evil.example.com").status == 403
    assert post(host, INIT, Origin="http://localhost:5173").status == 200
    assert post(host, INIT, Host=f"localhost:{host.authority.split(':')[1]}").status == 200


def test_cors_allows_configured_browser_origins(http_host_factory, hello_folder, cache_dir, host_env, tmp_path):
    config = tmp_path / "cors.toml"
    config.write_text(
        f'[server]\ncache_dir = "{cache_dir}"\n[http]\nallowed_origins = ["https://app.example"]\n'
    )
    host = http_host_factory(hello_folder, env=dict(host_env, WASM_MCP_CONFIG=str(config)))
    preflight = request(host, "OPTIONS", headers={
        "Origin": "https://app.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, mcp-session-id, mcp-protocol-version",
    })
    assert preflight.headers.get("access-control-allow-origin") == "https://app.example"
    assert "mcp-session-id" in preflight.headers.get("access-control-allow-headers", "").lower()
    ok = post(host, INIT, Origin="https://app.example")
    assert ok.status == 200
    assert ok.headers.get("access-control-allow-origin") == "https://app.example"
    assert "mcp-session-id" in ok.headers.get("access-control-expose-headers", "").lower()
    assert post(host, INIT, Origin="https://other.example").status == 403


def test_stateless_headers_must_match_the_body(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder)
    ok = modern(host, 1, "tools/call", {"name": "greet", "arguments": {"name": "x"}})
    assert ok.status == 200, ok.raw
    assert ok.json()["result"]["content"][0]["text"] == "Hello, x!"
    assert "mcp-session-id" not in ok.headers

    encoded = "=?base64?" + base64.b64encode(b"greet").decode() + "?="
    assert modern(host, 2, "tools/call", {"name": "greet", "arguments": {"name": "x"}}, **{"Mcp-Name": encoded}).status == 200
    for headers in ({"Mcp-Method": "tools/list"}, {"Mcp-Name": "add"}, {"Mcp-Name": "=?base64?!!?="},
                    {"MCP-Protocol-Version": "2025-11-25"}):
        bad = modern(host, 3, "tools/call", {"name": "greet", "arguments": {"name": "x"}}, **headers)
        assert bad.status == 400, headers
        assert bad.json()["error"]["code"] == -32020 and bad.json()["id"] == 3

    unknown = modern(host, 4, "no/such/method")
    assert unknown.status == 404 and unknown.json()["error"]["code"] == -32601
    removed = modern(host, 5, "initialize")
    assert removed.status == 404
    for method in ("GET", "DELETE"):
        reply = request(host, method, headers={"MCP-Protocol-Version": "2026-07-28"})
        assert reply.status == 405 and reply.headers["allow"] == "POST"


def read_events(response, count: int, timeout: float = 120.0) -> list[dict]:
    """Reads `count` SSE events with data from an open streaming response."""
    events, lines = [], []
    deadline = time.monotonic() + timeout
    while len(events) < count:
        assert time.monotonic() < deadline, f"only {len(events)} events arrived"
        line = response.fp.readline().decode()
        assert line, "the stream ended"
        line = line.rstrip("\r\n")
        if line:
            lines.append(line)
            continue
        event = parse_sse("\n".join(lines) + "\n")
        lines = []
        if event and event[0].get("data"):
            events.append(event[0])
    return events


def open_stream(host, session, last_event_id=None):
    conn = http.client.HTTPConnection(host.authority, timeout=120)
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    if last_event_id:
        headers["Last-Event-ID"] = last_event_id
    conn.request("GET", "/mcp", headers=headers)
    response = conn.getresponse()
    assert response.status == 200
    assert response.getheader("content-type").startswith("text/event-stream")
    return conn, response


def test_the_get_stream_carries_changes_and_resumes(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder)
    session = open_session(host)
    conn, stream = open_stream(host, session)
    shutil.copy(PLUGINS / "notes.wasm", hello_folder / "notes.wasm")
    first = read_events(stream, 2)
    methods = sorted(json.loads(e["data"])["method"] for e in first)
    assert methods == ["notifications/prompts/list_changed", "notifications/resources/list_changed"]
    last_seen = first[-1]["id"]
    conn.close()

    # Missed while disconnected, replayed after the last event seen.
    (hello_folder / "notes.wasm").unlink()
    host.wait_for_log('plugin removed')
    conn, stream = open_stream(host, session, last_event_id=last_seen)
    again = read_events(stream, 2)
    assert sorted(json.loads(e["data"])["method"] for e in again) == methods
    conn.close()


def test_a_dropped_response_stream_resumes_with_last_event_id(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder)
    session = open_session(host)
    conn = http.client.HTTPConnection(host.authority, timeout=120)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "countdown", "arguments": {"steps": 3, "delay_ms": 300},
                       "_meta": {"progressToken": "p"}}}
    conn.request("POST", "/mcp", body=json.dumps(body),
                 headers=dict(BASE_HEADERS, **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}))
    response = conn.getresponse()
    assert response.getheader("content-type").startswith("text/event-stream")
    first = read_events(response, 1)[0]
    assert json.loads(first["data"])["method"] == "notifications/progress"
    conn.close()  # the client lost the connection mid-call

    conn, stream = open_stream(host, session, last_event_id=first["id"])
    # Then the logs of the steps, the progress after the first, and the response.
    rest = [json.loads(e["data"]) for e in read_events(stream, 6)]
    progress = [m["params"]["progress"] for m in rest if m.get("method") == "notifications/progress"]
    assert progress == [2, 3]
    logs = [m["params"]["data"] for m in rest if m.get("method") == "notifications/message"]
    assert logs == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
    assert rest[-1]["id"] == 7 and rest[-1]["result"]["content"][0]["text"] == "counted down from 3"
    conn.close()


def jwt(secret: bytes, claims: dict) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    signature = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(signature)}"


def test_bearer_authentication(http_host_factory, hello_folder, cache_dir, host_env, tmp_path):
    config = tmp_path / "auth.toml"
    config.write_text(
        f'[server]\ncache_dir = "{cache_dir}"\n'
        '[http.auth]\ntokens = ["static-token"]\nauthorization_servers = ["https://auth.example"]\n'
        '[http.auth.jwt]\nissuer = "https://auth.example"\naudience = "wasm-mcp-test"\nsecret_env = "TEST_JWT_SECRET"\n'
    )
    env = dict(host_env, WASM_MCP_CONFIG=str(config), TEST_JWT_SECRET="shh")
    host = http_host_factory(hello_folder, env=env)

    refused = post(host, INIT)
    assert refused.status == 401
    challenge = refused.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and "resource_metadata=" in challenge
    metadata_url = challenge.split('resource_metadata="')[1].split('"')[0]
    metadata = request(host, "GET", path="/" + metadata_url.split("/", 3)[3])
    assert metadata.status == 200
    assert metadata.json()["resource"] == host.url
    assert metadata.json()["authorization_servers"] == ["https://auth.example"]

    wrong = post(host, INIT, Authorization="Bearer nope")
    assert wrong.status == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]

    static = post(host, INIT, Authorization="Bearer static-token")
    assert static.status == 200
    session = static.headers["mcp-session-id"]
    exp = int(time.time()) + 600
    ada = jwt(b"shh", {"iss": "https://auth.example", "aud": "wasm-mcp-test", "sub": "ada", "exp": exp})
    assert post(host, INIT, Authorization=f"Bearer {ada}").status == 200
    expired = jwt(b"shh", {"iss": "https://auth.example", "aud": "wasm-mcp-test", "sub": "ada", "exp": 1000})
    assert post(host, INIT, Authorization=f"Bearer {expired}").status == 401
    forged = jwt(b"guess", {"iss": "https://auth.example", "aud": "wasm-mcp-test", "sub": "ada", "exp": exp})
    assert post(host, INIT, Authorization=f"Bearer {forged}").status == 401
    other_audience = jwt(b"shh", {"iss": "https://auth.example", "aud": "elsewhere", "sub": "ada", "exp": exp})
    assert post(host, INIT, Authorization=f"Bearer {other_audience}").status == 401

    # A session belongs to the principal that opened it.
    assert call(host, session, 2, "tools/list", Authorization="Bearer static-token").status == 200
    assert call(host, session, 3, "tools/list", Authorization=f"Bearer {ada}").status == 404


def test_only_loopback_by_default(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder)
    assert host.authority.startswith("127.0.0.1:")
    port = int(host.authority.split(":")[1])
    addresses = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    for address in addresses - {"127.0.0.1"}:
        with pytest.raises(OSError):
            socket.create_connection((address, port), timeout=2).close()


def test_idle_sessions_expire(http_host_factory, hello_folder, cache_dir, host_env, tmp_path):
    config = tmp_path / "idle.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n[http]\nsession_idle_secs = 1\n')
    env = dict(host_env, WASM_MCP_CONFIG=str(config), RUST_LOG="info,wasm_mcp::transport=debug")
    host = http_host_factory(hello_folder, env=env)
    session = open_session(host)
    host.wait_for_log("sessions expired", timeout=60)
    assert call(host, session, 2, "tools/list").status == 404


def test_json_response_mode_never_streams(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder, args=["--json-response"])
    session = open_session(host)
    reply = call(host, session, 2, "tools/call",
                 {"name": "countdown", "arguments": {"steps": 2, "delay_ms": 10}, "_meta": {"progressToken": 1}})
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.json()["result"]["content"][0]["text"] == "counted down from 2"


def test_sse_answers_when_notifications_come_first(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder)
    session = open_session(host)
    reply = call(host, session, 2, "tools/call",
                 {"name": "countdown", "arguments": {"steps": 2, "delay_ms": 10}, "_meta": {"progressToken": 1}})
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert reply.headers.get("x-accel-buffering") == "no"
    # A priming event (id, empty data) opens the stream for 2025-11-25.
    assert reply.events[0]["id"] and reply.events[0].get("data", "") == ""
    messages = reply.json()
    assert [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"] == [1, 2]
    assert messages[-1]["id"] == 2
    ids = [e["id"] for e in reply.events]
    assert len(set(ids)) == len(ids)


def test_closing_a_stateless_request_cancels_it(http_host_factory, hello_folder, host_env):
    host = http_host_factory(hello_folder, env=dict(host_env, RUST_LOG="info,wasm_mcp::server=debug"))
    conn = http.client.HTTPConnection(host.authority, timeout=120)
    params = {"name": "countdown", "arguments": {"steps": 100, "delay_ms": 100}, "_meta": modern_meta()}
    conn.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
                 headers=dict(BASE_HEADERS, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                               "Mcp-Name": "countdown"}))
    host.wait_for_log("step 2 of 100")  # the call runs (a 10 s countdown)
    conn.close()  # and the client goes away
    log = host.wait_for_log("request cancelled", timeout=60)
    assert "step 100 of 100" not in log


def test_tasks_requests_may_leave_out_mcp_name_but_never_get_it_wrong(http_host_factory, hello_folder):
    host = http_host_factory(hello_folder)
    meta = modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {
        "extensions": {"io.modelcontextprotocol/tasks": {}}}})
    body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
            "params": {"taskId": "no-such-task", "_meta": meta}}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tasks/get"}
    # Without Mcp-Name (clients in the field): served, here as an unknown task.
    missing = post(host, body, **headers)
    assert missing.status == 200 and missing.json()["error"]["code"] != -32020, missing.raw
    assert "no-such-task" in missing.json()["error"]["message"]
    # A wrong one: refused as a header mismatch.
    wrong = post(host, body, **headers, **{"Mcp-Name": "another-task"})
    assert wrong.status == 400 and wrong.json()["error"]["code"] == -32020
    # Other methods still need it.
    call_body = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                 "params": {"name": "greet", "arguments": {"name": "x"}, "_meta": modern_meta()}}
    refused = post(host, call_body, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"})
    assert refused.status == 400 and refused.json()["error"]["code"] == -32020
    metrics = request(host, "GET", path="/metrics", headers={}).raw.decode()
    assert 'wasm_mcp_lenient_requests_total{reason="task_without_mcp_name"} 1' in metrics
