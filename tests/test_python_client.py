"""The real Python `mcp` client over stdio, in its legacy (initialize) mode
and its stateless 2026-07-28 mode."""

import os
import shutil

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import BINARY, PLUGINS

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]


def client(plugins, env, mode, args=(), **kwargs) -> Client:
    params = StdioServerParameters(command=str(BINARY), args=["serve", "--plugins", str(plugins), *args], env=env)
    return Client(params, mode=mode, read_timeout_seconds=120, **kwargs)


@pytest.mark.parametrize("mode", MODES)
async def test_tools_in_rust_python_and_javascript(all_plugins, host_env, mode):
    async with client(all_plugins, host_env, mode) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        for expected in ("greet", "add", "countdown", "word_count", "reverse", "shout", "char_count"):
            assert expected in names
        add = next(t for t in (await c.list_tools()).tools if t.name == "add")
        assert add.input_schema["required"] == ["a", "b"]
        result = await c.call_tool("add", {"a": 1.5, "b": 2})
        assert result.structured_content == {"sum": 3.5}
        greet = await c.call_tool("greet", {"name": "wasm"})
        assert greet.content[0].text == "Hello, wasm!"
        words = await c.call_tool("word_count", {"text": "the quick brown fox"})
        assert words.content[0].text == "4"
        reverse = await c.call_tool("reverse", {"text": "stressed"})
        assert reverse.content[0].text == "desserts"
        shout = await c.call_tool("shout", {"text": "wasm"})
        assert shout.content[0].text == "WASM!"
        chars = await c.call_tool("char_count", {"text": "héllo 🌍"})
        assert chars.content[0].text == "7"


@pytest.mark.parametrize("mode", MODES)
async def test_tools_in_c_and_go(all_plugins, host_env, mode):
    async with client(all_plugins, host_env, mode) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        # C, against the contract (plugins/stats-c).
        assert tools["stats"].input_schema["required"] == ["numbers"]
        stats = await c.call_tool("stats", {"numbers": [1, 2, 3.5, -4000]})
        assert stats.structured_content == {"count": 4, "mean": -998.375, "min": -4000, "max": 3.5}
        assert stats.content[0].text == "count 4, mean -998.375, min -4000, max 3.5"
        # Arguments that break the schema: a tool error (2025-11-25 on).
        empty = await c.call_tool("stats", {"numbers": []})
        assert empty.is_error and "less than 1 item" in empty.content[0].text, empty
        # Go, a plain component (plugins/lines-go), with its WIT docs.
        assert tools["title-case"].description == "Capitalises the first letter of every word."
        titled = await c.call_tool("title-case", {"text": "go and c"})
        assert titled.content[0].text == "Go And C"
        assert titled.structured_content == {"result": "Go And C"}


@pytest.mark.parametrize("mode", MODES)
async def test_resources_templates_prompts_and_completions(all_plugins, host_env, mode):
    async with client(all_plugins, host_env, mode) as c:
        resources = (await c.list_resources()).resources
        assert [str(r.uri) for r in resources] == ["notes://index"]
        templates = (await c.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["notes://note/{id}"]
        index = await c.read_resource("notes://index")
        assert index.contents[0].text.split("\n") == ["groceries", "ideas", "todo"]
        note = await c.read_resource("notes://note/ideas")
        assert note.contents[0].text == "a wasm host for MCP tools"
        assert note.contents[0].mime_type == "text/plain"
        prompts = (await c.list_prompts()).prompts
        summarize = next(p for p in prompts if p.name == "summarize")
        assert {a.name: a.required for a in summarize.arguments} == {"id": True, "style": False}
        got = await c.get_prompt("summarize", {"id": "todo", "style": "detailed"})
        assert "detailed summary" in got.messages[0].content.text
        assert "write the README" in got.messages[0].content.text
        assert got.messages[1].role == "assistant"
        from mcp_types import PromptReference, ResourceTemplateReference

        done = await c.complete(PromptReference(type="ref/prompt", name="summarize"), {"name": "id", "value": "i"})
        assert done.completion.values == ["ideas"]
        done = await c.complete(
            ResourceTemplateReference(type="ref/resource", uri="notes://note/{id}"), {"name": "id", "value": "t"}
        )
        assert done.completion.values == ["todo"]


@pytest.mark.parametrize("mode", MODES)
async def test_progress_and_log_notifications(all_plugins, host_env, mode):
    logs = []

    async def on_log(params):
        logs.append(params)

    extra = {"logging_callback": on_log}
    if mode != "legacy":
        extra["log_level"] = "info"
    async with client(all_plugins, host_env, mode, **extra) as c:
        if mode == "legacy":
            await c.set_logging_level("info")
        progress = []

        async def on_progress(value, total, message):
            progress.append((value, total, message))

        result = await c.call_tool("countdown", {"steps": 3}, progress_callback=on_progress)
        assert result.content[0].text == "counted down from 3"
        assert progress == [(1.0, 3.0, "counting"), (2.0, 3.0, "counting"), (3.0, 3.0, "counting")]
        assert [l.data for l in logs] == ["step 1 of 3", "step 2 of 3", "step 3 of 3"]
        assert all(l.level == "info" and l.logger == "hello" for l in logs)


async def test_auto_mode_discovers_the_stateless_revision(all_plugins, host_env):
    async with client(all_plugins, host_env, "auto") as c:
        assert c.session.discover_result is not None
        assert "2026-07-28" in c.session.discover_result.supported_versions
        assert (await c.call_tool("greet", {"name": "auto"})).content[0].text == "Hello, auto!"


@pytest.mark.parametrize("mode", MODES)
async def test_tool_errors_reach_the_client(all_plugins, host_env, mode):
    async with client(all_plugins, host_env, mode) as c:
        trapped = await c.call_tool("trap", {})
        assert trapped.is_error
        panicked = await c.call_tool("panic", {})
        assert panicked.is_error and "the plugin panicked on purpose" in panicked.content[0].text
        after = await c.call_tool("add", {"a": 1, "b": 1})
        assert after.structured_content == {"sum": 2}


def _folder_with(tmp_path, *names):
    for name in names:
        shutil.copy(PLUGINS / f"{name}.wasm", tmp_path / f"{name}.wasm")
    return tmp_path


def _replace(path, source):
    tmp = path.parent / f".{path.name}.tmp"
    shutil.copy(source, tmp)
    os.replace(tmp, path)


def _list_changes():
    """A message handler that passes on `*list_changed` methods, and where
    they arrive."""
    send, heard = anyio.create_memory_object_stream(100)

    async def on_message(message):
        method = getattr(message, "method", None)
        if method and method.endswith("list_changed"):
            await send.send(method)

    return on_message, heard


async def test_legacy_client_hears_add_replace_and_remove(tmp_path, host_env):
    folder = _folder_with(tmp_path, "hello")
    on_message, heard = _list_changes()

    async def next_changes(count):
        with anyio.fail_after(120):
            return sorted([await heard.receive() for _ in range(count)])

    async with client(folder, host_env, "legacy", message_handler=on_message) as c:
        shutil.copy(PLUGINS / "notes.wasm", folder / "notes.wasm")
        assert await next_changes(2) == ["notifications/prompts/list_changed", "notifications/resources/list_changed"]
        assert [str(r.uri) for r in (await c.list_resources()).resources] == ["notes://index"]

        _replace(folder / "hello.wasm", PLUGINS / "wordcount.wasm")
        assert await next_changes(1) == ["notifications/tools/list_changed"]
        assert [t.name for t in (await c.list_tools()).tools] == ["word_count", "reverse"]

        (folder / "notes.wasm").unlink()
        assert await next_changes(2) == ["notifications/prompts/list_changed", "notifications/resources/list_changed"]
        assert (await c.list_resources()).resources == []


async def test_stateless_client_listens_and_refetches_after_a_reload(tmp_path, host_env):
    folder = _folder_with(tmp_path, "hello")
    async with client(folder, host_env, "2026-07-28") as c:
        assert "greet" in [t.name for t in (await c.list_tools()).tools]
        async with c.listen(tools_list_changed=True) as sub:
            _replace(folder / "hello.wasm", PLUGINS / "wordcount.wasm")
            with anyio.fail_after(120):
                event = await sub.__anext__()
            assert type(event).__name__ == "ToolsListChanged"
            # The client cached tools/list (ttlMs); the event made it refetch.
            assert [t.name for t in (await c.list_tools()).tools] == ["word_count", "reverse"]


async def test_auto_mode_falls_back_to_the_handshake_and_hears_reloads_when_offered_only_that(tmp_path, host_env):
    folder = _folder_with(tmp_path, "hello")
    on_message, heard = _list_changes()

    async with client(folder, host_env, "auto", args=["--handshake-only"], message_handler=on_message) as c:
        assert c.session.discover_result is None, "server/discover is refused: the client used initialize"
        assert "greet" in [t.name for t in (await c.list_tools()).tools]
        _replace(folder / "hello.wasm", PLUGINS / "wordcount.wasm")
        with anyio.fail_after(120):
            assert await heard.receive() == "notifications/tools/list_changed"
        assert [t.name for t in (await c.list_tools()).tools] == ["word_count", "reverse"]


@pytest.mark.parametrize("mode", MODES)
async def test_rust_prompt_arguments_that_are_not_strings(tmp_path, host_env, mode):
    from conftest import CONFORMANCE

    shutil.copy(CONFORMANCE / "conformance.wasm", tmp_path / "conformance.wasm")
    async with client(tmp_path, host_env, mode) as c:
        typed = next(p for p in (await c.list_prompts()).prompts if p.name == "typed_prompt")
        assert {a.name: a.required for a in typed.arguments} == {"times": False, "loud": True}
        got = await c.get_prompt("typed_prompt", {"times": "3", "loud": "true"})
        assert got.messages[0].content.text == "HEY HEY HEY"
        got = await c.get_prompt("typed_prompt", {"loud": "false"})
        assert got.messages[0].content.text == "hey"
