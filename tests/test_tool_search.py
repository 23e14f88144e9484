"""Tool search ([server] tool_search): the host's search_tools and call_tool,
driven by the real Python `mcp` client on both of its modes and by the
TypeScript SDK; over HTTP, search sees only what the caller may call."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from conftest import BINARY

pytestmark = pytest.mark.anyio

TS = Path(__file__).resolve().parent / "ts"


def config(tmp_path, host_env, mode: str) -> dict:
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    path = tmp_path / "search.toml"
    path.write_text(f'[server]\ncache_dir = "{cache}"\ntool_search = {mode}\n')
    return dict(host_env, WASM_MCP_CONFIG=str(path))


def client(plugins, env, mode) -> Client:
    params = StdioServerParameters(command=str(BINARY), args=["serve", "--plugins", str(plugins)], env=env)
    return Client(params, mode=mode, read_timeout_seconds=120)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_only_the_search_tools_are_listed_and_they_find_and_call(all_plugins, host_env, tmp_path, mode):
    env = config(tmp_path, host_env, '"only"')
    async with client(all_plugins, env, mode) as c:
        tools = (await c.list_tools()).tools
        assert [t.name for t in tools] == ["search_tools", "call_tool"]
        assert "search" in tools[0].name and tools[0].input_schema["required"] == ["query"]

        found = await c.call_tool("search_tools", {"query": "add two numbers", "limit": 3})
        assert not found.is_error
        hits = found.structured_content["tools"]
        assert 1 <= len(hits) <= 3 and hits[0]["name"] == "add"
        assert hits[0]["inputSchema"]["required"] == ["a", "b"]
        assert json.loads(found.content[0].text) == found.structured_content
        words = await c.call_tool("search_tools", {"query": "count the words in a text"})
        assert words.structured_content["tools"][0]["name"] == "word_count"
        nothing = await c.call_tool("search_tools", {"query": "zzzqqq"})
        assert nothing.structured_content == {"tools": []}

        total = await c.call_tool("call_tool", {"name": "add", "arguments": {"a": 1.5, "b": 2}})
        assert total.structured_content == {"sum": 3.5}
        # The called tool's own checks still hold.
        wrong = await c.call_tool("call_tool", {"name": "add", "arguments": {"a": "one"}})
        assert wrong.is_error
        bad = await c.call_tool("search_tools", {"limit": 3})
        assert bad.is_error and "query" in bad.content[0].text
        itself = await c.call_tool("call_tool", {"name": "call_tool", "arguments": {}})
        assert itself.is_error
        # Tools stay callable by name.
        greet = await c.call_tool("greet", {"name": "search"})
        assert greet.content[0].text == "Hello, search!"


async def test_offered_beside_every_tool(all_plugins, host_env, tmp_path):
    env = config(tmp_path, host_env, "true")
    async with client(all_plugins, env, "legacy") as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert names[:2] == ["search_tools", "call_tool"]
        assert {"add", "greet", "word_count"} <= set(names[2:])
        assert len(names) == len(set(names))


def test_typescript_sdk_searches_and_calls(all_plugins, host_env, tmp_path):
    node = shutil.which("node", path=host_env.get("PATH"))
    assert node, "node is not on PATH (scripts/test installs it)"
    env = dict(config(tmp_path, host_env, '"only"'), WASM_MCP_BINARY=str(BINARY),
               WASM_MCP_PLUGINS=str(all_plugins))
    run = subprocess.run(
        [node, "--test", "--test-reporter=spec", "tool_search.test.mjs"],
        cwd=TS, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "fail 0" in run.stdout, run.stdout[-2000:]


def test_inspect_estimates_what_a_listing_costs(host_env):
    from conftest import PLUGINS
    run = subprocess.run([str(BINARY), "inspect", str(PLUGINS / "hello.wasm")],
                         env=host_env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    line = next(l for l in run.stdout.splitlines() if l.strip().startswith("listing costs"))
    tokens = int(line.split("~")[1].split()[0])
    listed = int(line.split("(")[1].split()[0])
    assert tokens == (listed + 3) // 4 and tokens > 50, line
