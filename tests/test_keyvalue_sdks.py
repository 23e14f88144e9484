"""The key-value store (wasi:keyvalue) through each language's helper: one
small plugin per language (plugins/kv-rust, kv-js, kv-go, kv-c, built by
scripts/build into dist/fixtures) with the same tools, served together by
one host that grants each a store. Each must round-trip values between
calls (every call is a fresh instance), count atomically, append through a
compare-and-swap loop, list every key over several pages, delete, and run
the batch operations; a copy of each that is not granted gets the helper's
access-denied error."""

import shutil

import pytest

from conftest import FIXTURES, RawHost

# The tools of each plugin are named LANGUAGE_OP (put, get, count, append,
# keys, remove, batch; kv-c has no batch).
PLUGINS = {"rust": "kv-rust", "js": "kv-js", "go": "kv-go", "c": "kv-c"}


@pytest.fixture(scope="module")
def host(tmp_path_factory, host_env):
    folder = tmp_path_factory.mktemp("kv-plugins")
    config = [open(host_env["WASM_MCP_CONFIG"]).read()]
    for name in PLUGINS.values():
        shutil.copy(FIXTURES / f"{name}.wasm", folder / f"{name}.wasm")
        # The same component again, without the grant.
        shutil.copy(FIXTURES / f"{name}.wasm", folder / f"{name}-denied.wasm")
        # Pages of two keys, so that listing five takes three pages.
        config.append(f"[plugins.{name}]\nkeyvalue = true\n[plugins.{name}.limits]\nkeyvalue_page_keys = 2\n")
    config_file = folder.parent / "kv-config.toml"
    config_file.write_text("\n".join(config))
    # A state folder of its own: the store starts empty.
    state = tmp_path_factory.mktemp("kv-state")
    host = RawHost(folder, dict(host_env, WASM_MCP_CONFIG=str(config_file), XDG_STATE_HOME=str(state)))
    try:
        host.initialize(timeout=600)
        yield host
    finally:
        host.close()


def call(host, tool, **arguments):
    """The text of the tool's result, and whether it is a tool error."""
    answer = host.request("tools/call", {"name": tool, "arguments": arguments}, timeout=120)
    assert "result" in answer, answer
    result = answer["result"]
    return result["content"][0]["text"], result.get("isError", False)


def ok(host, tool, **arguments):
    text, failed = call(host, tool, **arguments)
    assert not failed, (tool, text)
    return text


@pytest.mark.parametrize("language", PLUGINS)
def test_each_helper_sets_gets_counts_swaps_lists_and_deletes(host, language):
    op = lambda name: f"{language}_{name}"  # noqa: E731
    assert ok(host, op("get"), key="greeting") == "(none)"
    assert ok(host, op("put"), key="greeting", value="hello é 🌍") == "ok"
    assert ok(host, op("get"), key="greeting") == "hello é 🌍"
    # Overwritten, read back by a fresh instance.
    ok(host, op("put"), key="greeting", value="hi")
    assert ok(host, op("get"), key="greeting") == "hi"

    assert [ok(host, op("count"), key="visits") for _ in range(3)] == ["1", "2", "3"]

    # Compare-and-swap: each append reads the value the last one wrote.
    assert ok(host, op("append"), key="log", value="a") == "a"
    assert ok(host, op("append"), key="log", value="b") == "ab"
    assert ok(host, op("append"), key="log", value="c") == "abc"
    assert ok(host, op("get"), key="log") == "abc"

    # Five keys in pages of two: the helper follows the cursor to the end.
    ok(host, op("put"), key="x/1", value="1")
    ok(host, op("put"), key="x/2", value="2")
    keys = ok(host, op("keys")).split("\n")
    assert sorted(keys) == ["greeting", "log", "visits", "x/1", "x/2"], keys

    assert ok(host, op("remove"), key="x/1") == "false"
    assert ok(host, op("get"), key="x/1") == "(none)"
    assert ok(host, op("remove"), key="never-set") == "false"
    assert sorted(ok(host, op("keys")).split("\n")) == ["greeting", "log", "visits", "x/2"]

    if language != "c":
        assert ok(host, op("batch"), key="p,q", value="v") == "p=v,q=v"
        # Deleted again by the same call.
        assert ok(host, op("get"), key="q") == "(none)"
        # A batch over the bound (a page's keys) fails with the host's own
        # text, whole: nothing of it written.
        text, failed = call(host, op("batch"), key="p,q,r", value="v")
        assert failed and "over this plugin's limit of 2 keys" in text, text
        assert ok(host, op("get"), key="p") == "(none)"


@pytest.mark.parametrize("language", PLUGINS)
def test_each_helper_says_access_denied_without_the_grant(host, language):
    for tool, arguments in [("put", {"key": "k", "value": "v"}), ("get", {"key": "k"}), ("count", {"key": "k"})]:
        text, failed = call(host, f"{PLUGINS[language]}-denied.{language}_{tool}", **arguments)
        assert failed, (language, tool, text)
        assert "access denied" in text, (language, tool, text)
