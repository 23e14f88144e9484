"""A plugin asks the client (elicitation, sampling) and gets the answer back:
with the Python `mcp` client over stdio and HTTP, and raw, for timeouts,
cancellation and the deadline that pauses while the client answers. The
questions come from the conformance fixture plugin (dist/conformance)."""

import json
import shutil
import subprocess
import time
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from conftest import BINARY, RawHost

pytestmark = pytest.mark.anyio


async def answer_elicitation(context, params):
    assert params.message == "Who are you?"
    assert params.requested_schema["required"] == ["username", "email"]
    return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})


async def answer_sampling(context, params):
    assert params.max_tokens == 100
    assert params.messages[0].content.text == "Say hi"
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="hi there"), model="test-model"
    )


def stdio(folder, env):
    return StdioServerParameters(command=str(BINARY), args=["serve", "--plugins", str(folder)], env=env)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("transport", ["stdio", "http", "http --json-response"])
async def test_python_client_answers_the_plugins_questions(conformance_folder, host_env, http_host_factory, transport, mode):
    if transport == "stdio":
        server = stdio(conformance_folder, host_env)
    else:
        server = http_host_factory(conformance_folder, args=transport.split()[1:]).url
    async with Client(server, mode=mode, read_timeout_seconds=120,
                      elicitation_callback=answer_elicitation, sampling_callback=answer_sampling) as c:
        elicited = await c.call_tool("test_elicitation", {"message": "Who are you?"})
        assert not elicited.is_error, elicited
        text = elicited.content[0].text
        assert text.startswith("User response: action=accept, content=")
        assert json.loads(text.split("content=", 1)[1]) == {"username": "ada", "email": "ada@example.com"}
        sampled = await c.call_tool("test_sampling", {"prompt": "Say hi"})
        assert sampled.content[0].text == "LLM response: hi there"


async def test_a_declined_or_failed_answer_reaches_the_plugin(conformance_folder, host_env):
    async def decline(context, params):
        return types.ElicitResult(action="decline")

    async def fail(context, params):
        return types.ErrorData(code=-1, message="no model here")

    async with Client(stdio(conformance_folder, host_env), mode="legacy", read_timeout_seconds=120,
                      elicitation_callback=decline, sampling_callback=fail) as c:
        declined = await c.call_tool("test_elicitation", {"message": "Who are you?"})
        assert declined.content[0].text == "User response: action=decline, content={}"
        failed = await c.call_tool("test_sampling", {"prompt": "Say hi"})
        assert failed.is_error and "no model here" in failed.content[0].text


async def test_no_question_without_the_capability(conformance_folder, host_env):
    async with Client(stdio(conformance_folder, host_env), mode="legacy", read_timeout_seconds=120) as c:
        result = await c.call_tool("test_sampling", {"prompt": "Say hi"})
        assert result.is_error
        assert "did not declare the sampling capability" in result.content[0].text


def raw_host(folder, env, config_text, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(config_text)
    host = RawHost(folder, dict(env, WASM_MCP_CONFIG=str(config)))
    host.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
                                "clientInfo": {"name": "raw", "version": "1"}})
    host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return host


def next_request(host, method):
    while True:
        message = host.read()
        if message.get("method") == method and "id" in message:
            return message
        host.pending.append(message)


def test_an_unanswered_question_times_out_and_is_withdrawn(conformance_folder, host_env, cache_dir, tmp_path):
    host = raw_host(conformance_folder, host_env, f'[server]\ncache_dir = "{cache_dir}"\ninput_timeout_ms = 300\n', tmp_path)
    try:
        host.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                   "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}})
        asked = next_request(host, "sampling/createMessage")
        result = host.response(5)["result"]
        assert result["isError"] and "Timeout" in result["content"][0]["text"]
        withdrawn = [m for m in host.pending if m.get("method") == "notifications/cancelled"]
        assert withdrawn and withdrawn[0]["params"]["requestId"] == asked["id"]
        # A late answer is ignored; the connection keeps working.
        host.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"role": "assistant", "model": "m",
                                                                   "content": {"type": "text", "text": "late"}}})
        assert host.request("ping")["result"] == {}
    finally:
        host.close()


def test_cancelling_the_call_withdraws_its_question(conformance_folder, host_env, cache_dir, tmp_path):
    host = raw_host(conformance_folder, host_env, f'[server]\ncache_dir = "{cache_dir}"\n', tmp_path)
    try:
        host.send({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                   "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}})
        asked = next_request(host, "sampling/createMessage")
        host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6}})
        while True:
            message = host.read()
            assert message.get("id") != 6, "a cancelled request gets no response"
            if message.get("method") == "notifications/cancelled":
                assert message["params"]["requestId"] == asked["id"]
                break
        assert host.request("ping")["result"] == {}
    finally:
        host.close()


def test_the_deadline_pauses_while_the_client_answers(conformance_folder, host_env, cache_dir, tmp_path):
    config = f'[server]\ncache_dir = "{cache_dir}"\n[limits]\ncall_timeout_ms = 300\n'
    host = raw_host(conformance_folder, host_env, config, tmp_path)
    try:
        host.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": "test_sampling", "arguments": {"prompt": "Say hi"}}})
        asked = next_request(host, "sampling/createMessage")
        time.sleep(1.0)  # the client takes longer than the whole call may
        host.send({"jsonrpc": "2.0", "id": asked["id"], "result": {
            "role": "assistant", "model": "m", "content": {"type": "text", "text": "slow but fine"}}})
        result = host.response(7)["result"]
        assert result["content"][0]["text"] == "LLM response: slow but fine", result
    finally:
        host.close()


def test_typescript_sdk_answers_the_plugins_questions(conformance_folder, host_env, http_host_factory):
    host = http_host_factory(conformance_folder)
    node = shutil.which("node", path=host_env.get("PATH"))
    assert node, "node is not on PATH (scripts/test installs it)"
    env = dict(host_env, WASM_MCP_BINARY=str(BINARY), WASM_MCP_PLUGINS=str(conformance_folder), WASM_MCP_URL=host.url)
    run = subprocess.run(
        [node, "--test", "--test-reporter=spec", "round_trips.test.mjs"],
        cwd=Path(__file__).resolve().parent / "ts", env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "fail 0" in run.stdout, run.stdout[-2000:]


async def test_stateless_questions_take_rounds_and_resume_the_same_call(conformance_folder, host_env, http_host_factory):
    """Two questions asked one after the other: two input-required rounds,
    one call (the plugin keeps its state between them)."""
    asked = []

    values = {"name": "Ada", "color": "green", "context": "a library"}

    async def answer(context, params):
        asked.append(params.message)
        field = next(iter(params.requested_schema["properties"]))
        return types.ElicitResult(action="accept", content={field: values[field]})

    host = http_host_factory(conformance_folder)
    async with Client(host.url, mode="2026-07-28", read_timeout_seconds=120, elicitation_callback=answer) as c:
        result = await c.call_tool("test_input_required_result_multi_round", {})
        assert result.content[0].text == "Ada likes green"
        assert asked == ["Step 1: What is your name?", "Step 2: What is your favorite color?"]
        prompt = await c.get_prompt("test_input_required_result_prompt", {})
        assert prompt.messages[0].content.text == "Use this context: a library"


def modern_call(host, id_, params):
    import http.client
    from conftest import modern_meta

    params = dict(params, _meta=modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}))
    conn = http.client.HTTPConnection(host.authority, timeout=120)
    conn.request("POST", "/mcp", body=json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}),
                 headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                          "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": params["name"]})
    reply = json.loads(conn.getresponse().read())
    conn.close()
    return reply


def test_parked_calls_expire_and_their_state_is_refused(conformance_folder, host_env, http_host_factory, cache_dir, tmp_path):
    config = tmp_path / "short.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\ninput_timeout_ms = 1500\n')
    env = dict(host_env, WASM_MCP_CONFIG=str(config), RUST_LOG="info,wasm_mcp::server=debug")
    host = http_host_factory(conformance_folder, env=env)
    first = modern_call(host, 1, {"name": "test_input_required_result_elicitation", "arguments": {}})["result"]
    assert first["resultType"] == "input_required" and "user_name" in first["inputRequests"]
    state = first["requestState"]

    # Bound to its request: other arguments or another tool are refused.
    other = modern_call(host, 2, {"name": "test_input_required_result_request_state", "arguments": {},
                                  "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
                                  "requestState": state})
    assert other["error"]["code"] == -32602 and "requestState" in other["error"]["message"]

    # An abandoned call is dropped (its instance freed) when its time is up;
    # its state is refused from then on.
    host.wait_for_log("abandoned input-required calls dropped", timeout=60)
    time.sleep(0.5)
    late = modern_call(host, 3, {"name": "test_input_required_result_elicitation", "arguments": {},
                                 "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Bo"}}},
                                 "requestState": state})
    assert late["error"]["code"] == -32602 and "expired" in late["error"]["message"]

    # Answers given up front need no round at all.
    direct = modern_call(host, 4, {"name": "test_input_required_result_elicitation", "arguments": {},
                                   "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Cy"}}}})
    assert direct["result"]["content"][0]["text"] == "Hello, Cy!"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_python_plugin_asks_too(tmp_path, host_env, mode):
    from conftest import FIXTURES

    folder = tmp_path / "python"
    folder.mkdir()
    shutil.copy(FIXTURES / "ask.wasm", folder / "ask.wasm")

    async def answer(context, params):
        assert params.message == "What is your name?"
        return types.ElicitResult(action="accept", content={"name": "Guido"})

    async with Client(stdio(folder, host_env), mode=mode, read_timeout_seconds=300,
                      elicitation_callback=answer) as c:
        result = await c.call_tool("ask_name", {})
        assert result.content[0].text == "Hello from Python, Guido!"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_url_elicitation(conformance_folder, host_env, mode):
    seen = []

    async def answer(context, params):
        seen.append((params.mode, params.url, params.elicitation_id))
        return types.ElicitResult(action="accept")

    async with Client(stdio(conformance_folder, host_env), mode=mode, read_timeout_seconds=120,
                      elicitation_callback=answer) as c:
        result = await c.call_tool("test_url_elicitation", {})
        assert result.content[0].text == "action=accept, content={}"
    [(kind, url, elicitation_id)] = seen
    assert kind == "url" and url == "https://example.com/sign-in" and elicitation_id
