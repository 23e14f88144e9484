"""A hostile plugin against the key-value store (plugins/kv-evil-rust,
dist/fixtures/kv-evil.wasm): huge keys and values, a million keys, a tight
loop of writes, a batch over its bound, leaked bucket handles, keys with
`..`, `/` and NUL, bucket names meant to reach another plugin's data. Each
is refused at its bound with the interface's own error naming it, or
confined to the plugin's own namespace; the host's memory stays bounded
and another plugin is served meanwhile.

The stated memory bound: the host's RSS, sampled every 20 ms through all
the attacks, stays within 128 MiB of what it was before them. The largest
attacks hand the host a 32 MiB value and a 1 MiB key, which wasmtime
copies out of the plugin's memory before the host refuses them (the copy
is bounded by the plugin's own memory cap, 64 MiB here), and the plugin's
memory itself is the host's too; nothing else an attack sends is kept."""

import shutil
import threading
import time

import pytest

from conftest import FIXTURES, PLUGINS, RawHost

CONFIG = """
[plugins.kv-evil]
keyvalue = true
[plugins.kv-evil.limits]
memory_mb = 64
keyvalue_keys = 1500
keyvalue_ops_per_call = 2500

[plugins.kv-other]
keyvalue = true
"""

MIB = 1 << 20


@pytest.fixture(scope="module")
def host(tmp_path_factory, host_env):
    folder = tmp_path_factory.mktemp("kv-evil-plugins")
    shutil.copy(FIXTURES / "kv-evil.wasm", folder / "kv-evil.wasm")
    # The same component under two more names: one with a store of its own
    # (another namespace), one granted none.
    shutil.copy(FIXTURES / "kv-evil.wasm", folder / "kv-other.wasm")
    shutil.copy(FIXTURES / "kv-evil.wasm", folder / "kv-denied.wasm")
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    config = folder.parent / "kv-evil-config.toml"
    config.write_text(open(host_env["WASM_MCP_CONFIG"]).read() + CONFIG)
    state = tmp_path_factory.mktemp("kv-evil-state")
    host = RawHost(folder, dict(host_env, WASM_MCP_CONFIG=str(config), XDG_STATE_HOME=str(state)))
    try:
        host.initialize(timeout=600)
        host.tools = {t["name"] for t in host.request("tools/list", {})["result"]["tools"]}
        yield host
    finally:
        host.close()


def tool_name(host, tool):
    """The name `PLUGIN__TOOL` is offered under: the three copies of one
    component offer the same tools, the first loaded under their own names
    and the others as `PLUGIN.TOOL`."""
    plugin, tool = tool.split("__")
    return f"{plugin}.{tool}" if f"{plugin}.{tool}" in host.tools else tool


def call(host, tool, **arguments):
    """(failed, text) of a tool call; the call itself must be answered."""
    tool = tool_name(host, tool) if "__" in tool else tool
    answer = host.request("tools/call", {"name": tool, "arguments": arguments}, timeout=120)
    assert "result" in answer, answer
    result = answer["result"]
    return result.get("isError", False), "".join(c.get("text", "") for c in result["content"])


def refused(host, tool, bound, **arguments):
    failed, text = call(host, tool, **arguments)
    assert failed and bound in text, (tool, text)
    return text


def ok(host, tool, **arguments):
    failed, text = call(host, tool, **arguments)
    assert not failed, (tool, text)
    return text


class RssSampler:
    """The host's largest RSS while it runs, sampled every 20 ms."""

    def __init__(self, host):
        self.host, self.peak, self.stop = host, 0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, self.host.rss_kib())
            time.sleep(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        self.thread.join()


def test_every_attack_is_refused_at_its_bound_with_memory_bounded(host):
    # Warm up: each plugin compiled and instantiated once, the store open.
    ok(host, "kv-evil__put", bucket="warm", key="k", value="v")
    ok(host, "greet", name="warm")
    before = host.rss_kib()
    with RssSampler(host) as rss:
        # Keys: over the bound (a 1 MiB key, and one byte over), at it.
        refused(host, "kv-evil__huge_key", "keyvalue_key_bytes", bytes=MIB)
        text = refused(host, "kv-evil__huge_key", "keyvalue_key_bytes", bytes=513)
        assert "513 bytes is over this plugin's limit of 512 bytes" in text, text
        assert "[plugins.kv-evil.limits]" in text, text
        assert ok(host, "kv-evil__huge_key", bytes=512) == "stored"
        # Values: 32 MiB, one byte over 1 MiB, then 1 MiB exactly.
        refused(host, "kv-evil__huge_value", "keyvalue_value_kb", bytes=32 * MIB)
        refused(host, "kv-evil__huge_value", "keyvalue_value_kb", bytes=MIB + 1)
        assert ok(host, "kv-evil__huge_value", bytes=MIB) == "stored"
        # One batch of 100 000 keys: over the page bound, nothing written.
        refused(host, "kv-evil__huge_batch", "keyvalue_page_keys", count=100_000)
        # A million keys: the namespace's quota (1500) stops it, a whole
        # batch refused, not written in part.
        text = refused(host, "kv-evil__fill", "keyvalue_keys", count=1_000_000)
        assert text.startswith("wrote 1000 keys, then:"), text
        assert len(ok(host, "kv-evil__keys", bucket="fill").split("\n")) == 1000
        # Read back in one get-many; one key over the page bound is refused.
        assert ok(host, "kv-evil__read_many", count=1000) == "1000 found"
        refused(host, "kv-evil__read_many", "keyvalue_page_keys", count=1001)
        # A tight loop of writes: the operations bound of one call (the
        # open counts one), and the next call gets its own budget.
        text = refused(host, "kv-evil__hammer", "keyvalue_ops_per_call", count=1_000_000)
        assert text.startswith("wrote 2499 times, then: this call made its 2500"), text
        assert ok(host, "kv-evil__hammer", count=10) == "wrote 10 times"
        # Bucket handles opened and never dropped.
        text = refused(host, "kv-evil__leak", "buckets and CAS handles", count=100_000)
        assert text.startswith("opened 1024, then:"), text
    grown = rss.peak - before
    print(f"host RSS before {before / 1024:.1f} MiB, peak during the attacks {rss.peak / 1024:.1f} MiB")
    assert grown < 128 * 1024, (before, rss.peak)


def test_hostile_keys_are_refused_or_stay_keys(host):
    refused(host, "kv-evil__put", "must not be empty", bucket="b", key="", value="x")
    refused(host, "kv-evil__put", "must not hold NUL", bucket="b", key="a\0b", value="x")
    refused(host, "kv-evil__get", "must not hold NUL", bucket="b", key="\0")
    odd = ["..", "../x", "/", "a/b", "/etc/passwd", "*", "%00", "k\t"]
    for key in odd:
        ok(host, "kv-evil__put", bucket="odd", key=key, value=f"value of {key}")
    for key in odd:
        assert ok(host, "kv-evil__get", bucket="odd", key=key) == f"value of {key}"
    assert sorted(ok(host, "kv-evil__keys", bucket="odd").split("\n")) == sorted(odd)


def test_bucket_names_reach_only_the_plugins_own_data(host):
    refused(host, "kv-evil__put", "bucket name must not be empty", bucket="", key="k", value="x")
    refused(host, "kv-evil__put", "must not hold NUL", bucket="a\0", key="k", value="x")
    refused(host, "kv-evil__put", "keyvalue_key_bytes", bucket="b" * 513, key="k", value="x")
    names = ["../kv-other", "../../kv-other/b", "*", "..", "/", "%", "b"]
    for name in names:
        ok(host, "kv-evil__put", bucket=name, key="k", value="evil's")
    for name in names:
        # The same names from another plugin's namespace: nothing there.
        assert ok(host, "kv-other__get", bucket=name, key="k") == "(none)"
        assert ok(host, "kv-other__keys", bucket=name) == ""
        assert ok(host, "kv-evil__get", bucket=name, key="k") == "evil's"
    ok(host, "kv-other__put", bucket="b", key="k", value="other's")
    assert ok(host, "kv-evil__get", bucket="b", key="k") == "evil's"


def test_a_plugin_without_the_grant_is_denied_and_the_log_says_how_to_grant(host):
    assert refused(host, "kv-denied__put", "access-denied", bucket="b", key="k", value="x") == "access-denied"
    host.wait_for_log("[plugins.kv-denied] keyvalue = true")


def test_another_plugin_is_served_while_the_store_is_hammered(host):
    # Two attacks in flight (each a tight loop up to the operations bound)
    # and a greeting sent after them: answered within 10 s.
    attacks = []
    for i in range(2):
        host.next_id += 1
        attacks.append(host.next_id)
        host.send({"jsonrpc": "2.0", "id": host.next_id, "method": "tools/call",
                   "params": {"name": tool_name(host, "kv-evil__hammer"), "arguments": {"count": 1_000_000}}})
    answer = host.request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}}, timeout=10)
    assert "Ada" in answer["result"]["content"][0]["text"], answer
    for id_ in attacks:
        result = host.response(id_, timeout=120)["result"]
        assert result["isError"] and "keyvalue_ops_per_call" in result["content"][0]["text"], result
