"""A client can harm nothing but its own requests: the parts of the client
hardening built so far (connections, sessions, subscriptions, the plugin
slot while waiting for an answer, guard and auth edges). Time appears only
as generous liveness bounds."""

import http.client
import json
import os
import shutil
import socket
import subprocess
import time

from conftest import BINARY, PLUGINS, MODERN, RawHost, modern_meta
from test_http_transport import jwt


def post(host, body, headers=None, path="/mcp", timeout=10):
    conn = http.client.HTTPConnection(host.authority, timeout=timeout)
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    conn.request("POST", path, body=json.dumps(body), headers=dict(base, **(headers or {})))
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), data


def discover(host):
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}
    return post(host, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"})


def initialize(host):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    status, headers, _ = post(host, body)
    assert status == 200, status
    return {k.lower(): v for k, v in headers.items()}["mcp-session-id"]


def session_ping(host, session):
    body = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    return post(host, body, {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"})[0]


def hello_folder(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    return folder


def config_env(host_env, tmp_path, cache_dir, text):
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n{text}')
    return dict(host_env, WASM_MCP_CONFIG=str(config))


def closed_by_server(s, timeout) -> bool:
    """Whether the server closes `s` within `timeout` (whatever it sends first)."""
    s.settimeout(timeout)
    try:
        while s.recv(4096):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    finally:
        s.close()


def open_fds(host) -> int:
    return len(os.listdir(f"/proc/{host.proc.pid}/fd"))


def test_slow_and_idle_connections_never_lock_out_a_well_behaved_client(tmp_path, cache_dir, host_env, http_host_factory):
    env = config_env(host_env, tmp_path, cache_dir,
                     "[http]\nmax_connections = 64\nheader_timeout_secs = 2\nidle_timeout_secs = 3\n")
    host = http_host_factory(hello_folder(tmp_path), env=env)
    assert discover(host)[0] == 200
    baseline = host.rss_kib()
    slow = []
    for i in range(400):
        s = socket.create_connection(("127.0.0.1", int(host.authority.split(":")[1])), timeout=10)
        if i % 2:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")  # half-sent headers
        slow.append(s)
    # A well-behaved client is served all along.
    for _ in range(20):
        started = time.monotonic()
        assert discover(host)[0] == 200
        assert time.monotonic() - started < 10
    assert open_fds(host) < 64 + 40, open_fds(host)
    # Every slow or idle connection is closed by the server soon.
    deadline = time.monotonic() + 30
    still_open = sum(not closed_by_server(s, max(0.1, deadline - time.monotonic())) for s in slow)
    assert still_open == 0, f"{still_open} connections still open"
    assert host.rss_kib() < baseline + 64 * 1024


def test_a_slow_body_is_cut_off(tmp_path, cache_dir, host_env, http_host_factory):
    env = config_env(host_env, tmp_path, cache_dir, "[http]\nbody_timeout_secs = 1\n")
    host = http_host_factory(hello_folder(tmp_path), env=env)
    s = socket.create_connection(("127.0.0.1", int(host.authority.split(":")[1])), timeout=20)
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{")
    answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 4"), answer[:100]
    s.close()
    assert discover(host)[0] == 200


def test_sessions_are_capped_per_principal_evicting_the_longest_idle(tmp_path, cache_dir, host_env, http_host_factory):
    env = config_env(host_env, tmp_path, cache_dir, "[http]\nmax_sessions_per_principal = 10\n")
    host = http_host_factory(hello_folder(tmp_path), env=env)
    busy = initialize(host)
    # A session with its GET stream open has something in progress.
    stream = http.client.HTTPConnection(host.authority, timeout=30)
    stream.request("GET", "/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": busy,
                                           "MCP-Protocol-Version": "2025-06-18"})
    assert stream.getresponse().status == 200
    sessions = [initialize(host) for _ in range(50)]
    assert session_ping(host, sessions[-1]) == 200
    assert session_ping(host, sessions[0]) == 404
    assert session_ping(host, busy) == 200
    stream.close()


def test_subscriptions_are_capped(tmp_path, cache_dir, host_env):
    folder = tmp_path / "plugins"
    folder.mkdir()
    host = RawHost(folder, host_env)
    try:
        host.initialize()
        for start in range(0, 1024, 128):
            for i in range(start, start + 128):
                host.send({"jsonrpc": "2.0", "id": f"s{i}", "method": "resources/subscribe",
                           "params": {"uri": f"x://{i}"}})
            for i in range(start, start + 128):
                assert "result" in host.response(f"s{i}")
        over = host.request("resources/subscribe", {"uri": "x://one-more"})
        assert over["error"]["code"] == -32602 and "at most 1024" in over["error"]["message"]
        huge = host.request("resources/subscribe", {"uri": "x://" + "a" * 10_000})
        assert huge["error"]["code"] == -32602
        # An error quotes a client's input only in part.
        unknown = host.request("tools/call", {"name": "n" * 100_000, "arguments": {}})
        assert len(unknown["error"]["message"]) < 1000
    finally:
        host.close()


def test_waiting_for_the_client_holds_no_plugin_slot(conformance_folder, cache_dir, host_env, tmp_path):
    env = config_env(host_env, tmp_path, cache_dir,
                     "max_waiting_per_principal = 2\n[plugins.conformance.limits]\nmax_concurrent_calls = 1\n")
    host = RawHost(conformance_folder, env)
    try:
        host.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                    "clientInfo": {"name": "raw", "version": "1"}})
        host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        # Two calls that ask the user and are never answered ...
        for id_ in (1, 2):
            host.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                       "params": {"name": "test_elicitation", "arguments": {"message": "never answered"}}})
        asked = 0
        while asked < 2:
            message = host.read(timeout=30)
            if message.get("method") == "elicitation/create":
                asked += 1
            else:
                host.pending.append(message)
        # ... leave the plugin's only slot free for another call.
        started = time.monotonic()
        result = host.request("tools/call", {"name": "test_simple_text", "arguments": {}}, timeout=10)
        assert not result["result"].get("isError"), result
        assert time.monotonic() - started < 10
        # Waiting calls are capped per principal: a third question fails at once.
        third = host.request("tools/call", {"name": "test_elicitation", "arguments": {"message": "one too many"}},
                             timeout=10)
        assert "too many calls are waiting" in json.dumps(third), third
    finally:
        host.proc.kill()
        host.proc.wait()


def modern_call(host, id_, params):
    params = dict(params, _meta=modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}))
    body = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}
    _, _, data = post(host, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                                   "Mcp-Name": params["name"]}, timeout=60)
    return json.loads(data)


def test_a_request_state_resumes_its_call_once(conformance_folder, http_host_factory):
    host = http_host_factory(conformance_folder)
    first = modern_call(host, 1, {"name": "test_input_required_result_elicitation", "arguments": {}})["result"]
    state = first["requestState"]
    answer = {"user_name": {"action": "accept", "content": {"name": "Bo"}}}
    resumed = modern_call(host, 2, {"name": "test_input_required_result_elicitation", "arguments": {},
                                    "inputResponses": answer, "requestState": state})
    assert resumed["result"]["content"][0]["text"] == "Hello, Bo!"
    replayed = modern_call(host, 3, {"name": "test_input_required_result_elicitation", "arguments": {},
                                     "inputResponses": answer, "requestState": state})
    assert replayed["error"]["code"] == -32602 and "used already" in replayed["error"]["message"]


def test_guard_and_auth_edges(tmp_path, cache_dir, host_env, http_host_factory):
    env = config_env(host_env, tmp_path, cache_dir,
                     '[http.auth]\n[http.auth.jwt]\nissuer = "https://auth.example"\naudience = "aud"\n'
                     'secret_env = "TEST_JWT_SECRET"\n')
    env["TEST_JWT_SECRET"] = "s3cret"
    host = http_host_factory(hello_folder(tmp_path), env=env)
    port = int(host.authority.split(":")[1])

    def raw(request: bytes) -> bytes:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(request)
        answer = s.recv(4096)
        s.close()
        return answer

    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    length = b"Content-Length: %d\r\n" % len(body)
    common = b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" + length
    assert raw(b"POST /mcp HTTP/1.1\r\n" + common + b"\r\n" + body).startswith(b"HTTP/1.1 400")
    for bad_host in (b"[::1]evil.example", b"127.0.0.1@evil.example", b"localhost:99999"):
        answer = raw(b"POST /mcp HTTP/1.1\r\nHost: " + bad_host + b"\r\n" + common + b"\r\n" + body)
        assert answer.startswith(b"HTTP/1.1 400"), (bad_host, answer[:80])
    now = int(time.time())
    claims = {"iss": "https://auth.example", "aud": "aud", "sub": "ada", "exp": now + 7200}
    ok = {"Authorization": "Bearer " + jwt(b"s3cret", claims)}
    early = {"Authorization": "Bearer " + jwt(b"s3cret", dict(claims, nbf=now + 3600))}
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"}
    assert post(host, body, dict(headers, **ok))[0] == 200
    assert post(host, body, dict(headers, **early))[0] == 401


def test_unsafe_listening_is_warned_about_or_refused(tmp_path, cache_dir, host_env):
    folder = hello_folder(tmp_path)
    proc = subprocess.Popen([str(BINARY), "serve", "--plugins", str(folder), "--http", "0.0.0.0:0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=host_env)
    try:
        assert proc.stdout.readline().startswith(b"http://")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert b"without authentication" in err
    env = config_env(host_env, tmp_path, cache_dir, '[http.auth]\ntokens = ["t"]\n')
    run = subprocess.run([str(BINARY), "serve", "--plugins", str(folder), "--http", "0.0.0.0:0"],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode != 0 and "public_url" in run.stderr


def test_reload_errors_reach_clients_without_host_paths(tmp_path, host_env):
    folder = hello_folder(tmp_path)
    host = RawHost(folder, host_env)
    try:
        host.initialize()
        host.request("logging/setLevel", {"level": "error"})
        # Listing waits for the first load: what follows is a reload.
        assert host.request("tools/list")["result"]["tools"]
        (folder / "hello.wasm").write_bytes(b"garbage")
        while True:
            message = host.read(timeout=60)
            if message.get("method") == "notifications/message":
                break
        data = message["params"]["data"]
        assert "not reloaded" in data and str(tmp_path) not in data, data
        assert str(tmp_path) in host.wait_for_log("not reloaded")
    finally:
        host.close()


def evil_folder(tmp_path):
    from conftest import FIXTURES

    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(FIXTURES / "evil.wasm", folder / "evil.wasm")
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    return folder


def test_a_stdio_client_that_never_reads_is_disconnected(tmp_path, host_env):
    proc = subprocess.Popen([str(BINARY), "serve", "--plugins", str(evil_folder(tmp_path))],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=host_env)
    try:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
        lines = [json.dumps(init), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
        lines += [json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                              "params": {"name": "huge", "arguments": {"megabytes": 1}}}) for i in range(400)]
        try:
            proc.stdin.write(("\n".join(lines) + "\n").encode())
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        peak = 0
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                for line in open(f"/proc/{proc.pid}/status"):
                    if line.startswith("VmRSS:"):
                        peak = max(peak, int(line.split()[1]))
            except OSError:
                break
            time.sleep(0.05)
        assert proc.poll() is not None, "the host kept a client that never reads"
        assert peak < 400 * 1024, peak
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_requests_in_progress_are_capped_and_refused_at_once(tmp_path, cache_dir, host_env, http_host_factory):
    from conftest import FIXTURES

    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(FIXTURES / "crashy.wasm", folder / "crashy.wasm")
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    env = config_env(host_env, tmp_path, cache_dir,
                     "max_requests_per_connection = 3\nmax_requests_per_principal = 5\n"
                     "[plugins.crashy.limits]\ncall_timeout_ms = 5000\n")
    # Over stdio: a connection's fourth spinning call is refused at once.
    host = RawHost(folder, env)
    try:
        host.initialize()
        for i in range(6):
            host.send({"jsonrpc": "2.0", "id": f"spin{i}", "method": "tools/call",
                       "params": {"name": "spin", "arguments": {}}})
        refused = [host.response(f"spin{i}", timeout=10) for i in range(3, 6)]
        for response in refused:
            assert response["error"]["data"]["retryAfterMs"] > 0, response
            assert "at most 3" in response["error"]["message"]
        for i in range(3):
            assert host.response(f"spin{i}", timeout=60)["result"]["isError"]
        assert call_ok(host)
    finally:
        host.close()
    # Over HTTP: one principal's sixth call in progress gets 429 and Retry-After.
    http_host = http_host_factory(folder, env=env)
    import threading

    def spin():
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "spin", "arguments": {}, "_meta": modern_meta()}}
        post(http_host, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "spin"}, timeout=60)

    spinners = [threading.Thread(target=spin) for _ in range(5)]
    for t in spinners:
        t.start()
    time.sleep(1.5)
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "greet", "arguments": {"name": "x"}, "_meta": modern_meta()}}
    status, headers, data = post(http_host, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "greet"})
    assert status == 429, (status, data)
    assert int({k.lower(): v for k, v in headers.items()}["retry-after"]) >= 1
    for t in spinners:
        t.join(timeout=60)
    status, _, data = post(http_host, body, {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "greet"})
    assert status == 200 and b"Hello, x!" in data


def call_ok(host) -> bool:
    result = host.request("tools/call", {"name": "greet", "arguments": {"name": "y"}}, timeout=10)
    return result["result"]["content"][0]["text"] == "Hello, y!"



def session_headers(session, version="2025-11-25"):
    return {"Mcp-Session-Id": session, "MCP-Protocol-Version": version}


def ping_until(host, session, wanted, within=20) -> int:
    """Pings in the session until the answer's status is `wanted` (or time
    is up); the last status."""
    deadline = time.monotonic() + within
    while True:
        status = post(host, {"jsonrpc": "2.0", "id": "p", "method": "ping"}, session_headers(session))[0]
        if status == wanted or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


def initialize_session(host, capabilities=None):
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": capabilities or {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    status, headers, _ = post(host, body)
    assert status == 200, status
    session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    post(host, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_headers(session))
    return session


def early_answer(conn) -> str:
    """What a call that should still be running answered, for a failure
    message."""
    try:
        conn.sock.settimeout(5)
        response = conn.getresponse()
        return f"it answered {response.status}: {response.read()[:500]!r}"
    except Exception as error:  # noqa: BLE001 - only describes a failure
        return f"it did not answer ({error!r})"


def start_call(host, session, id_, name, arguments):
    """POSTs a tools/call in the session without waiting for its answer."""
    conn = http.client.HTTPConnection(host.authority, timeout=30)
    body = {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    conn.request("POST", "/mcp", body=json.dumps(body),
                 headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                          **session_headers(session)})
    return conn


def start_spin(host, session, id_):
    """Starts crashy's spinning call in `session` (one request at a time)
    and returns its connection once a ping in the session is refused
    (429: the call is in progress). The call and the first ping travel on
    connections of their own, so the ping may reach the host first and
    take the session's one place, the call then being refused with 429:
    it is started again."""
    for _ in range(10):
        conn = start_call(host, session, id_, "spin", {})
        if ping_until(host, session, 429, within=10) == 429:
            return conn
        answer = early_answer(conn)
        conn.close()
        assert "answered 429" in answer, \
            f"the spinning call is not in progress; {answer}; host log: {host.log()[-3000:]}"
    raise AssertionError(f"the spinning call never got its place: {host.log()[-3000:]}")


def test_a_call_whose_client_went_away_is_cancelled(conformance_folder, tmp_path, cache_dir, host_env, http_host_factory):
    from conftest import FIXTURES

    # One request in progress per session: while a call lives, a ping in the
    # same session is refused with 429; once it is cancelled, one is admitted.
    shutil.copy(FIXTURES / "crashy.wasm", conformance_folder / "crashy.wasm")
    env = config_env(host_env, tmp_path, cache_dir,
                     "max_requests_per_connection = 1\n"
                     "[http]\nresume_grace_secs = 1\n"
                     "[plugins.crashy.limits]\ncall_timeout_ms = 600000\n")
    host = http_host_factory(conformance_folder, env=env)

    # A call that has sent nothing yet: its client hangs up.
    session = initialize_session(host)
    conn = start_spin(host, session, 5)
    conn.close()
    assert ping_until(host, session, 200) == 200, "the call of a client that hung up is cancelled"

    # A call whose stream is open (it asked the user), then lost and never
    # resumed: cancelled after the grace.
    session = initialize_session(host, capabilities={"elicitation": {}})
    conn = start_call(host, session, 6, "test_elicitation", {"message": "?"})
    response = conn.getresponse()
    assert response.status == 200
    seen = b""
    while b"elicitation/create" not in seen:
        line = response.fp.readline()
        assert line, "the stream ended before the question"
        seen += line
    assert ping_until(host, session, 429) == 429
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    assert ping_until(host, session, 200) == 200, "an abandoned stream's call is cancelled"

    # A session deleted while its call runs: the call ends without an answer.
    session = initialize_session(host)
    conn = start_spin(host, session, 7)
    delete = http.client.HTTPConnection(host.authority, timeout=10)
    delete.request("DELETE", "/mcp", headers=session_headers(session))
    assert delete.getresponse().status == 200
    response = conn.getresponse()
    assert response.status == 202, "a cancelled request gets no response"
    conn.close()


def test_bytes_of_requests_in_progress_are_capped(tmp_path, cache_dir, host_env):
    from conftest import FIXTURES

    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(FIXTURES / "crashy.wasm", folder / "crashy.wasm")
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    env = config_env(host_env, tmp_path, cache_dir,
                     "max_requests_mb_per_principal = 8\n"
                     "[plugins.crashy.limits]\ncall_timeout_ms = 5000\nmax_concurrent_calls = 1\n")
    host = RawHost(folder, env)
    try:
        host.initialize()
        padding = "x" * (3 << 20)
        # Calls queued behind a spinning one keep their arguments: the third
        # 3 MiB call is over the principal's 8 MiB and refused at once.
        for i in range(3):
            host.send({"jsonrpc": "2.0", "id": f"big{i}", "method": "tools/call",
                       "params": {"name": "spin", "arguments": {"padding": padding}}})
        refused = host.response("big2", timeout=10)
        assert refused["error"]["data"]["retryAfterMs"] > 0, refused
        assert "bytes" in refused["error"]["message"] and "8 MiB" in refused["error"]["message"]
        # Small requests still fit, and everything is given back afterwards.
        assert call_ok(host)
        for i in range(2):
            assert host.response(f"big{i}", timeout=60)["result"]["isError"]
        host.send({"jsonrpc": "2.0", "id": "again", "method": "tools/call",
                   "params": {"name": "spin", "arguments": {"padding": padding}}})
        assert host.response("again", timeout=60)["result"]["isError"], "admitted again (it timed out)"
    finally:
        host.close()


def test_a_legacy_sse_reader_that_never_reads_costs_a_bounded_amount(tmp_path, host_env, http_host_factory):
    host = http_host_factory(evil_folder(tmp_path), args=["--legacy-sse"])
    s = socket.create_connection(("127.0.0.1", int(host.authority.split(":")[1])), timeout=30)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    opening = b""
    while b"sessionId=" not in opening:
        opening += s.recv(1024)
    target = "/messages?sessionId=" + opening.split(b"sessionId=")[1].split(b"\n")[0].decode().strip()
    baseline = host.rss_kib()
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    assert post(host, init, path=target)[0] == 202
    # 300 MiB of answers to a reader that never reads: the host keeps a
    # bounded part of them, then closes that stream.
    for i in range(300):
        body = {"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                "params": {"name": "huge", "arguments": {"megabytes": 1}}}
        assert post(host, body, path=target)[0] in (202, 404)
    host.wait_for_log("does not read its messages", timeout=60)
    assert host.rss_kib() < baseline + 200 * 1024, (baseline, host.rss_kib())
    s.close()
