"""What the host declares does not depend on when it is asked: the
capabilities of `initialize` (every handshake revision) and of
`server/discover` are the same before the plugins have loaded, once they
have, and after a hot reload has removed and added plugins, over stdio and
over HTTP; and a real client that read them at startup can complete a
prompt's argument."""

import shutil
import time

import anyio
import pytest
from mcp import Client, StdioServerParameters

from conftest import BINARY, PLUGINS, HttpHost, RawHost, modern_meta
from test_http_transport import post

HANDSHAKE_REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]

# Everything a plugin may bring is declared, whatever is served.
EXPECTED = {
    "2024-11-05": {"logging", "tools", "resources", "prompts", "completions", "extensions"},
    "2025-11-25": {"logging", "tools", "resources", "prompts", "completions", "extensions", "tasks"},
    "2026-07-28": {"tools", "resources", "prompts", "completions", "extensions"},
}


def cold_env(tmp_path, host_env, wait_ms=0):
    """A compile cache of its own (empty: plugins load slowly), a watched
    folder, and requests that do not wait for the first load."""
    cache = tmp_path / "cache"
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache}"\nwatch = true\n')
    return dict(host_env, WASM_MCP_CONFIG=str(config), WASM_MCP_STARTUP_WAIT_MS=str(wait_ms))


def plugin_folder(tmp_path, *names):
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name in names:
        shutil.copy(PLUGINS / f"{name}.wasm", folder / f"{name}.wasm")
    return folder


def check_promise(by_revision: dict) -> None:
    """The capabilities hold everything plugins may bring, and `initialize`
    and `server/discover` agree on what they share."""
    for revision, caps in by_revision.items():
        expected = EXPECTED.get(revision, EXPECTED["2024-11-05"])
        assert set(caps) == expected, (revision, caps)
        assert caps["completions"] == {}
        assert caps["resources"] == {"subscribe": True, "listChanged": True}
        assert caps["prompts"] == {"listChanged": True}
        assert caps["tools"] == {"listChanged": True}
        assert "io.modelcontextprotocol/skills" in caps["extensions"]
        # Views too (MCP Apps): a plugin may bring one after the client came.
        assert caps["extensions"]["io.modelcontextprotocol/ui"] == {"mimeTypes": ["text/html;profile=mcp-app"]}


def stdio_discover(host: RawHost) -> dict:
    return host.request("server/discover", {"_meta": modern_meta()})["result"]["capabilities"]


def stdio_capabilities(folder, env, revision) -> dict:
    """What a fresh stdio host answers at once, before it has loaded anything."""
    host = RawHost(folder, env)
    try:
        if revision == "2026-07-28":
            return stdio_discover(host)
        return host.initialize(revision, timeout=30)["result"]["capabilities"]
    finally:
        host.close()


def test_stdio_declares_the_same_before_and_after_the_plugins_load(tmp_path, host_env):
    env = cold_env(tmp_path, host_env)
    folder = plugin_folder(tmp_path, "notes", "hello")
    host = RawHost(folder, env)
    try:
        # Asked at once: nothing can have compiled from an empty cache.
        first = host.initialize("2025-06-18", timeout=30)["result"]["capabilities"]
        first_discover = stdio_discover(host)
        assert "summarize" not in str(host.request("prompts/list")), "notes loaded before the first answer"
        host.wait_for_log("plugin added", timeout=300)
        deadline = time.monotonic() + 300
        while "summarize" not in str(host.request("prompts/list")):
            assert time.monotonic() < deadline, host.log()[-3000:]
            time.sleep(0.2)
        assert stdio_discover(host) == first_discover
        # A prompt loaded later completes.
        done = host.request("completion/complete", {
            "ref": {"type": "ref/prompt", "name": "summarize"}, "argument": {"name": "id", "value": "i"}})
        assert done["result"]["completion"]["values"] == ["ideas"], done

        # Hot reload: notes leaves (no completions left), then comes back.
        (folder / "notes.wasm").unlink()
        host.wait_for_log("plugin removed", timeout=120)
        assert stdio_discover(host) == first_discover
        gone = host.request("completion/complete", {
            "ref": {"type": "ref/prompt", "name": "summarize"}, "argument": {"name": "id", "value": "i"}})
        assert gone["error"]["code"] == -32602, gone
        shutil.copy(PLUGINS / "notes.wasm", folder / "notes.wasm")
        deadline = time.monotonic() + 300
        while "summarize" not in str(host.request("prompts/list")):
            assert time.monotonic() < deadline, host.log()[-3000:]
            time.sleep(0.2)
        assert stdio_discover(host) == first_discover
    finally:
        host.close()

    # Every handshake revision: a host asked before it loaded anything (an
    # empty folder, and the same folder from a cold cache) answers what a
    # host that has loaded everything answers.
    empty = tmp_path / "empty"
    empty.mkdir()
    asked = {}
    for revision in HANDSHAKE_REVISIONS + ["2026-07-28"]:
        before = stdio_capabilities(empty, env, revision)
        loaded = RawHost(folder, env)
        try:
            # Asked statelessly, which needs no handshake first.
            deadline = time.monotonic() + 300
            while "summarize" not in str(loaded.request("prompts/list", {"_meta": modern_meta()})):
                assert time.monotonic() < deadline, loaded.log()[-3000:]
                time.sleep(0.2)
            if revision == "2026-07-28":
                after = stdio_discover(loaded)
            else:
                after = loaded.initialize(revision)["result"]["capabilities"]
        finally:
            loaded.close()
        assert before == after, (revision, before, after)
        asked[revision] = after
    assert asked["2025-06-18"] == first
    assert asked["2026-07-28"] == first_discover
    check_promise(asked)


def http_capabilities(host: HttpHost) -> dict:
    """Every revision's capabilities, asked over HTTP now (a new session for
    each handshake revision)."""
    asked = {}
    for revision in HANDSHAKE_REVISIONS:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "caps", "version": "1"}}}
        reply = post(host, init)
        assert reply.status == 200, reply.raw
        asked[revision] = reply.json()["result"]["capabilities"]
    discover = {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": modern_meta()}}
    reply = post(host, discover, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
    assert reply.status == 200, reply.raw
    asked["2026-07-28"] = reply.json()["result"]["capabilities"]
    return asked


def served_prompts(host: HttpHost) -> str:
    listing = {"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": {"_meta": modern_meta()}}
    return post(host, listing, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "prompts/list"}).raw.decode()


def until_served(host: HttpHost, present: bool) -> None:
    deadline = time.monotonic() + 300
    while ("summarize" in served_prompts(host)) != present:
        assert time.monotonic() < deadline, host.log()[-3000:]
        time.sleep(0.2)


def test_http_declares_the_same_before_and_after_the_plugins_load_and_reload(tmp_path, host_env):
    env = cold_env(tmp_path, host_env)
    folder = plugin_folder(tmp_path, "notes", "hello")
    host = HttpHost(folder, env)
    try:
        first = http_capabilities(host)
        assert "summarize" not in served_prompts(host), "notes loaded before the first answer"
        until_served(host, True)
        assert http_capabilities(host) == first
        (folder / "notes.wasm").unlink()
        until_served(host, False)
        assert http_capabilities(host) == first
        shutil.copy(PLUGINS / "notes.wasm", folder / "notes.wasm")
        until_served(host, True)
        assert http_capabilities(host) == first
    finally:
        host.close()
    check_promise(first)

    # A host with nothing to serve declares the same.
    empty = tmp_path / "empty"
    empty.mkdir()
    bare = HttpHost(empty, env)
    try:
        assert http_capabilities(bare) == first
    finally:
        bare.close()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_real_client_that_asked_at_once_completes_a_prompt(tmp_path, host_env, mode):
    # The client reads the capabilities before notes has compiled (an empty
    # cache, no wait), then completes the prompt once it is served: the
    # completion waits for nothing the client was not promised.
    env = cold_env(tmp_path, host_env)
    folder = plugin_folder(tmp_path, "notes")
    params = StdioServerParameters(command=str(BINARY), args=["serve", "--plugins", str(folder)], env=env)
    async with Client(params, mode=mode, read_timeout_seconds=300) as c:
        assert c.server_capabilities.completions is not None
        from mcp_types import PromptReference

        deadline = time.monotonic() + 300
        while "summarize" not in [p.name for p in (await c.list_prompts()).prompts]:
            assert time.monotonic() < deadline
            await anyio.sleep(0.2)
        done = await c.complete(PromptReference(type="ref/prompt", name="summarize"), {"name": "id", "value": "g"})
        assert done.completion.values == ["groceries"]
