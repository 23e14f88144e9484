"""Real clients over Streamable HTTP: the Python `mcp` client (legacy and
2026-07-28 modes, and the deprecated HTTP+SSE transport), the MCP Inspector
CLI, and the TypeScript SDKs v1 and v2 (tests/ts/http.test.mjs). Each
lists, calls, reads, gets, and hears list_changed after a hot reload."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from conftest import BINARY, PLUGINS

pytestmark = pytest.mark.anyio
TS = Path(__file__).resolve().parent / "ts"
MODES = ["legacy", "2026-07-28"]


@pytest.fixture
def folder(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for name in ("hello", "notes"):
        shutil.copy(PLUGINS / f"{name}.wasm", plugins / f"{name}.wasm")
    return plugins


def replace(path: Path, source: Path) -> None:
    tmp = path.parent / f".{path.name}.tmp"
    shutil.copy(source, tmp)
    os.replace(tmp, path)


async def exercise(c: Client) -> None:
    assert "greet" in [t.name for t in (await c.list_tools()).tools]
    greet = await c.call_tool("greet", {"name": "http"})
    assert greet.content[0].text == "Hello, http!"
    note = await c.read_resource("notes://note/ideas")
    assert note.contents[0].text == "a wasm host for MCP tools"
    got = await c.get_prompt("summarize", {"id": "todo"})
    assert "write the README" in got.messages[0].content.text


@pytest.mark.parametrize("mode", MODES)
async def test_python_client_over_http(http_host_factory, folder, mode):
    host = http_host_factory(folder)
    progress = []

    async def on_progress(value, total, message):
        progress.append(value)

    async with Client(host.url, mode=mode, read_timeout_seconds=120) as c:
        await exercise(c)
        done = await c.call_tool("countdown", {"steps": 2, "delay_ms": 10}, progress_callback=on_progress)
        assert done.content[0].text == "counted down from 2"
        assert progress == [1.0, 2.0]


async def test_python_legacy_client_hears_list_changed_over_http(http_host_factory, folder):
    host = http_host_factory(folder)
    send, heard = anyio.create_memory_object_stream(100)

    async def on_message(message):
        method = getattr(message, "method", None)
        if method and method.endswith("list_changed"):
            await send.send(method)

    async with Client(host.url, mode="legacy", read_timeout_seconds=120, message_handler=on_message) as c:
        assert "greet" in [t.name for t in (await c.list_tools()).tools]
        replace(folder / "hello.wasm", PLUGINS / "wordcount.wasm")
        with anyio.fail_after(120):
            assert await heard.receive() == "notifications/tools/list_changed"
        assert [t.name for t in (await c.list_tools()).tools] == ["word_count", "reverse"]


async def test_python_stateless_client_listens_over_http(http_host_factory, folder):
    host = http_host_factory(folder)
    async with Client(host.url, mode="2026-07-28", read_timeout_seconds=120) as c:
        assert "greet" in [t.name for t in (await c.list_tools()).tools]
        async with c.listen(tools_list_changed=True) as sub:
            replace(folder / "hello.wasm", PLUGINS / "wordcount.wasm")
            with anyio.fail_after(120):
                event = await sub.__anext__()
            assert type(event).__name__ == "ToolsListChanged"
            assert [t.name for t in (await c.list_tools()).tools] == ["word_count", "reverse"]


async def test_python_client_over_the_deprecated_sse_transport(http_host_factory, folder):
    host = http_host_factory(folder, args=["--legacy-sse"])
    base = host.url.rsplit("/", 1)[0]
    async with Client(sse_client(f"{base}/sse"), mode="legacy", read_timeout_seconds=120) as c:
        await exercise(c)


def node_env(host_env: dict, **extra) -> dict:
    return dict(host_env, **extra)


def inspector(host_env, url, *args) -> dict:
    cli = TS / "node_modules" / ".bin" / "mcp-inspector"
    run = subprocess.run(
        [str(cli), "--cli", url, "--transport", "http", *args],
        cwd=TS, env=host_env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(run.stdout)


def test_inspector_cli_over_http(http_host_factory, folder, host_env):
    host = http_host_factory(folder)
    tools = inspector(host_env, host.url, "--method", "tools/list")
    assert "greet" in [t["name"] for t in tools["tools"]]
    called = inspector(host_env, host.url, "--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=inspector")
    assert called["content"][0]["text"] == "Hello, inspector!"
    read = inspector(host_env, host.url, "--method", "resources/read", "--uri", "notes://note/groceries")
    assert read["contents"][0]["text"] == "milk, eggs, bread"
    prompt = inspector(host_env, host.url, "--method", "prompts/get", "--prompt-name", "summarize", "--prompt-args", "id=ideas")
    assert "a wasm host for MCP tools" in prompt["messages"][0]["content"]["text"]
    # The CLI makes one request per run and cannot wait for a notification;
    # after a hot reload its next listing shows the new tools.
    replace(folder / "hello.wasm", PLUGINS / "wordcount.wasm")
    host.wait_for_log('plugin reloaded')
    tools = inspector(host_env, host.url, "--method", "tools/list")
    names = [t["name"] for t in tools["tools"]]
    assert "word_count" in names and "greet" not in names


def test_typescript_sdks_over_http(http_host_factory, folder, host_env):
    host = http_host_factory(folder)
    node = shutil.which("node", path=host_env.get("PATH"))
    assert node, "node is not on PATH (scripts/test installs it)"
    env = node_env(host_env, WASM_MCP_URL=host.url, WASM_MCP_FOLDER=str(folder), WASM_MCP_DIST=str(PLUGINS))
    run = subprocess.run(
        [node, "--test", "--test-concurrency=1", "--test-reporter=spec", "http.test.mjs"],
        cwd=TS, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "fail 0" in run.stdout, run.stdout[-2000:]
