"""The host over stdio, driven with raw JSON-RPC: bad input of every kind gets
the right error, and the next request still works."""

import shutil

from conftest import RawHost, modern_meta


def test_malformed_json_then_next_request_works(raw_host):
    raw_host.send_line("{this is not json")
    error = raw_host.read()
    assert error["id"] is None and error["error"]["code"] == -32700
    assert raw_host.request("ping")["result"] == {}


def test_batch_array_is_rejected(raw_host):
    raw_host.send_line('[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
    error = raw_host.read()
    assert error["error"]["code"] == -32600
    assert "batch" in error["error"]["message"]
    assert raw_host.request("ping")["result"] == {}


def test_requests_before_initialize_are_refused(raw_host):
    reply = raw_host.request("tools/list")
    assert reply["error"]["code"] == -32600
    assert "initialize" in reply["error"]["message"]
    assert raw_host.initialize()["result"]["protocolVersion"] == "2025-11-25"
    assert raw_host.request("tools/list")["result"]["tools"]


def test_version_negotiation(raw_host):
    result = raw_host.initialize("1999-01-01")["result"]
    assert result["protocolVersion"] == "2025-11-25"
    assert "tools" in result["capabilities"] and "logging" in result["capabilities"]


def test_unknown_methods_and_wrong_params(raw_host):
    raw_host.initialize()
    assert raw_host.request("no/such/method")["error"]["code"] == -32601
    assert raw_host.request("tools/call", {"name": 42})["error"]["code"] == -32602
    assert raw_host.request("tools/call", {"name": "nope"})["error"]["code"] == -32602
    assert raw_host.request("tools/call", {"name": "greet", "arguments": [1]})["error"]["code"] == -32602
    assert raw_host.request("logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    assert raw_host.request("tools/list", {"cursor": "garbage"})["error"]["code"] == -32602
    assert raw_host.request("prompts/get", {"name": "summarize"})["error"]["code"] == -32602


def test_arguments_are_validated_against_the_schema_and_name_the_field(raw_host):
    # 2025-11-25 on: a tool execution error, for the model to correct its
    # call.
    raw_host.initialize()
    wrong = raw_host.request("tools/call", {"name": "add", "arguments": {"a": "one", "b": 2}})["result"]
    assert wrong["isError"] is True, wrong
    assert "/a" in wrong["content"][0]["text"] and "number" in wrong["content"][0]["text"], wrong
    missing = raw_host.request("tools/call", {"name": "add", "arguments": {"a": 1}})["result"]
    assert missing["isError"] is True and '"b"' in missing["content"][0]["text"], missing
    # A malformed call and an unknown tool stay protocol errors.
    assert raw_host.request("tools/call", {"name": "add", "arguments": "1"})["error"]["code"] == -32602
    assert raw_host.request("tools/call", {"name": "nope", "arguments": {}})["error"]["code"] == -32602
    # The stateless revision too.
    modern = raw_host.request("tools/call", {"name": "add", "arguments": {"a": 1},
                                             "_meta": modern_meta()})["result"]
    assert modern["isError"] is True and '"b"' in modern["content"][0]["text"], modern


def test_arguments_that_break_the_schema_are_a_protocol_error_before_2025_11_25(raw_host):
    raw_host.initialize("2025-06-18")
    error = raw_host.request("tools/call", {"name": "add", "arguments": {"a": "one", "b": 2}})["error"]
    assert error["code"] == -32602
    assert "/a" in error["message"] and "number" in error["message"]
    missing = raw_host.request("tools/call", {"name": "add", "arguments": {"a": 1}})["error"]
    assert missing["code"] == -32602 and '"b"' in missing["message"]


def test_trapping_plugin_is_an_error_result_for_that_call_only(raw_host):
    raw_host.initialize()
    for tool in ("trap", "panic"):
        result = raw_host.request("tools/call", {"name": tool, "arguments": {}})["result"]
        assert result["isError"] is True
        assert "failed" in result["content"][0]["text"]
        if tool == "panic":
            # The client sees why: the panic message the plugin wrote.
            assert "the plugin panicked on purpose" in result["content"][0]["text"], result
            assert "RUST_BACKTRACE" not in result["content"][0]["text"]
    ok = raw_host.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})["result"]
    assert ok["structuredContent"] == {"sum": 5}


def test_plugin_stdout_never_reaches_the_transport(raw_host):
    raw_host.initialize()
    result = raw_host.request("tools/call", {"name": "stdout", "arguments": {}})["result"]
    assert result["content"][0]["text"] == "wrote to stdout and stderr"
    # The plugin printed a fake response with id 999 to its stdout; it must
    # not appear on ours.
    assert raw_host.request("ping")["result"] == {}
    assert all(m.get("id") != 999 for m in raw_host.pending)
    assert '"id":999' in raw_host.close()


def test_cancellation_stops_a_runaway_call_and_others_keep_working(raw_host):
    raw_host.initialize()
    raw_host.send({"jsonrpc": "2.0", "id": "spin", "method": "tools/call", "params": {"name": "spin", "arguments": {}}})
    # A slow tool never blocks other requests.
    assert raw_host.request("tools/call", {"name": "greet", "arguments": {"name": "x"}})["result"]["content"]
    raw_host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "spin"}})
    assert raw_host.request("ping")["result"] == {}
    # The cancelled request gets no response, and the host keeps serving.
    assert raw_host.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})["result"]["structuredContent"] == {"sum": 2}
    assert all(m.get("id") != "spin" for m in raw_host.pending)


def test_resource_not_found_codes_per_revision(raw_host):
    raw_host.initialize()
    legacy = raw_host.request("resources/read", {"uri": "notes://nope"})["error"]
    assert legacy["code"] == -32002
    modern = raw_host.request("resources/read", {"uri": "notes://nope", "_meta": modern_meta()})["error"]
    assert modern["code"] == -32602


def test_stateless_requests_errors(raw_host):
    bad_version = raw_host.request("tools/list", {"_meta": modern_meta(**{"io.modelcontextprotocol/protocolVersion": "1999-01-01"})})
    assert bad_version["error"]["code"] == -32022
    assert "2026-07-28" in bad_version["error"]["data"]["supported"]
    assert bad_version["error"]["data"]["requested"] == "1999-01-01"
    no_caps = raw_host.request("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
    assert no_caps["error"]["code"] == -32602
    for removed in ("ping", "logging/setLevel", "initialize", "resources/subscribe"):
        assert raw_host.request(removed, {"_meta": modern_meta()})["error"]["code"] == -32601


def test_stateless_results_carry_result_type_and_cache_hints(raw_host):
    discover = raw_host.request("server/discover", {"_meta": modern_meta()})["result"]
    assert discover["resultType"] == "complete"
    assert "2026-07-28" in discover["supportedVersions"]
    assert discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "wasm-mcp"
    for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
        result = raw_host.request(method, {"_meta": modern_meta()})["result"]
        assert result["resultType"] == "complete" and result["ttlMs"] >= 0 and result["cacheScope"] in ("public", "private")
    read = raw_host.request("resources/read", {"uri": "notes://index", "_meta": modern_meta()})["result"]
    assert read["ttlMs"] == 0 and "groceries" in read["contents"][0]["text"]


def test_stateless_logs_only_when_the_request_opts_in(raw_host):
    quiet = raw_host.request("tools/call", {"name": "countdown", "arguments": {"steps": 2}, "_meta": modern_meta()})
    assert quiet["result"]["content"][0]["text"] == "counted down from 2"
    assert not [m for m in raw_host.pending if m.get("method") == "notifications/message"]
    loud = raw_host.request(
        "tools/call",
        {"name": "countdown", "arguments": {"steps": 2}, "_meta": modern_meta(**{"io.modelcontextprotocol/logLevel": "info"})},
    )
    assert loud["result"]
    logs = [m for m in raw_host.pending if m.get("method") == "notifications/message"]
    assert [m["params"]["data"] for m in logs] == ["step 1 of 2", "step 2 of 2"]


def test_subscriptions_listen_acknowledges_and_ends_on_cancel(raw_host):
    raw_host.send({
        "jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": True, "bogus": True}},
    })
    ack = raw_host.read()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    raw_host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
    assert raw_host.request("server/discover", {"_meta": modern_meta()})["result"]
    assert all(m.get("id") != 7 for m in raw_host.pending)


def test_a_file_that_is_not_a_component_is_skipped_with_a_clear_log(tmp_path, host_env):
    shutil.copy(next(p for p in __import__("conftest").PLUGINS.glob("hello.wasm")), tmp_path / "hello.wasm")
    (tmp_path / "broken.wasm").write_bytes(b"\0asm\x01\0\0\0 definitely not a component")
    (tmp_path / "text.wasm").write_text("hello")
    host = RawHost(tmp_path, host_env)
    host.initialize()
    names = [t["name"] for t in host.request("tools/list")["result"]["tools"]]
    assert names == ["greet", "add", "countdown"]
    log = host.close()
    assert "broken.wasm" in log and "text.wasm" in log and "plugin not loaded" in log
    assert "a core WebAssembly module, not a component" in log  # broken.wasm's header
    assert "not a WebAssembly file" in log  # text.wasm


def test_every_request_read_before_stdin_closes_is_answered(all_plugins, host_env, tmp_path):
    """`printf ... | wasm-mcp serve`: the requests sent before the end of
    stdin all get their answers (a quick call runs to its result; one still
    running after the grace is cancelled and answered saying so), in the
    order of a normal exit, within the grace and a second."""
    import json as json_
    import subprocess
    import time

    from conftest import BINARY

    config = tmp_path / "grace.toml"
    cache = host_env["WASM_MCP_CONFIG"]
    cache_dir = [l for l in open(cache).read().splitlines() if l.startswith("cache_dir")][0]
    config.write_text(f"[server]\n{cache_dir}\nstdin_eof_grace_ms = 1500\n")
    env = dict(host_env, WASM_MCP_CONFIG=str(config))
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "p", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "eof"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
         "params": {"name": "countdown", "arguments": {"steps": 2, "delay_ms": 200}}},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
         "params": {"name": "countdown", "arguments": {"steps": 600, "delay_ms": 100}}},
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
         "params": {"name": "greet", "arguments": {"name": "modern"}, "_meta": modern_meta()}},
    ]
    stdin = "".join(json_.dumps(line) + "\n" for line in lines).encode()
    started = time.monotonic()
    done = subprocess.run([str(BINARY), "serve", "--plugins", str(all_plugins)], input=stdin,
                          capture_output=True, env=env, timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    answers = {}
    for line in done.stdout.decode().splitlines():
        message = json_.loads(line)
        if "id" in message and "method" not in message:
            answers[message["id"]] = message
    assert sorted(answers) == [1, 2, 3, 4, 5, 6, 7], done.stdout.decode()[-3000:]
    assert answers[2]["result"] == {}
    assert any(t["name"] == "greet" for t in answers[3]["result"]["tools"])
    assert "eof" in answers[4]["result"]["content"][0]["text"]
    assert not answers[5]["result"].get("isError"), answers[5]
    assert "closed its input" in answers[6]["error"]["message"]
    assert "modern" in answers[7]["result"]["content"][0]["text"]
    # A generous liveness bound: the grace, then a second, plus loading.
    assert elapsed < 30, elapsed


def test_an_empty_plugin_folder_is_reported(tmp_path, host_env):
    """`serve` of a folder with no component in it says so, and still serves
    (a component added later is loaded)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a plugin")
    host = RawHost(empty, host_env)
    try:
        host.initialize()
        assert host.request("tools/list")["result"]["tools"] == []
        log = host.wait_for_log("holds no plugin component", timeout=30)
        assert str(empty) in log
    finally:
        host.close()
