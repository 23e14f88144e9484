"""The plugin lock (`wasm-mcp lock`, `[server] lock`): a plugin version
whose component, signer, grants asked for or definitions differ from the
lock is not served (the version serving keeps serving), the diff is
logged and counted, `lock diff` shows it, and `lock update` accepts it."""

import json
import os
import shutil
import subprocess
import time
import urllib.request

import anyio
import pytest
from mcp import Client

from conftest import BINARY, FIXTURES, PLUGINS, HttpHost, RawHost
from test_oci import registry  # noqa: F401  (the registry fixture)

OLD = "Says hello to someone"
NEW = "Says hello to SOMEONE"


def wasm_mcp(*args, env, check=True):
    done = subprocess.run([str(BINARY), *args], capture_output=True, text=True, env=env, timeout=300)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def setup(tmp_path, cache_dir, host_env, extra="", lock=True):
    """A plugin folder holding hello, and a config (in a folder of its
    own) whose [server] lock names wasm-mcp.lock beside it."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", plugins)
    conf = tmp_path / "conf"
    conf.mkdir()
    config = conf / "config.toml"
    line = 'lock = "wasm-mcp.lock"\n' if lock else ""
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n{line}{extra}')
    env = dict(host_env, WASM_MCP_CONFIG=str(config), RUST_BACKTRACE="0")
    return plugins, conf, env


def replace(path, data):
    """Puts `data` at `path` in one step, as a deploy would."""
    staged = path.with_name("." + path.name + ".new")
    staged.write_bytes(data)
    os.replace(staged, path)


def described(old, new):
    """hello.wasm with greet's description changed (same length, so only
    the data segment's bytes differ)."""
    data = (PLUGINS / "hello.wasm").read_bytes()
    assert len(old) == len(new) and data.count(old.encode()) == 1
    return data.replace(old.encode(), new.encode())


def leb128(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def rebuilt(data):
    """The same component with one more custom section: other bytes, the
    same behaviour and definitions."""
    name, payload = b"lock-test", b"rebuilt on another machine"
    body = leb128(len(name)) + name + payload
    return data + b"\x00" + leb128(len(body)) + body


def tools(url):
    """What a real MCP client (the Python SDK) lists: name -> description."""
    async def listing():
        async with Client(url, mode="legacy", read_timeout_seconds=60) as c:
            return {t.name: t.description for t in (await c.list_tools()).tools}
    return anyio.run(listing)


def until(predicate, what, timeout=30):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def metric(host, line):
    base = host.url.rsplit("/", 1)[0]
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as r:
        return line in r.read().decode()


def test_a_changed_description_is_held_back_until_the_lock_accepts_it(tmp_path, cache_dir, host_env):
    plugins, conf, env = setup(tmp_path, cache_dir, host_env)
    wrote = wasm_mcp("lock", "--plugins", str(plugins), env=env).stdout
    lock = conf / "wasm-mcp.lock"
    assert f"wrote {lock} (1 plugins)" in wrote
    recorded = json.loads(lock.read_text())
    assert recorded["version"] == 1
    hello = recorded["plugins"]["hello"]
    assert hello["source"] == "file:hello.wasm" and hello["signer"] == "none"
    assert hello["component"].startswith("sha256:") and len(hello["component"]) == 71
    assert hello["tools"]["greet"]["definition"]["description"] == OLD
    assert hello["tools"]["greet"]["digest"].startswith("sha256:")

    host = HttpHost(plugins, env)
    try:
        assert tools(host.url)["greet"] == OLD
        replace(plugins / "hello.wasm", described(OLD, NEW))
        log = host.wait_for_log("the version serving keeps serving", timeout=60)
        assert "plugin hello held back by the plugin lock" in log
        assert f"tool greet: description changed\n    locked: {OLD}\n    now:    {NEW}" in log, log[-3000:]
        # The version serving keeps serving, as it was.
        assert tools(host.url)["greet"] == OLD
        assert metric(host, 'wasm_mcp_lock_refusals_total{plugin="hello"} 1')

        diff = wasm_mcp("lock", "diff", "--plugins", str(plugins), env=env, check=False)
        assert diff.returncode == 1, diff.stdout + diff.stderr
        assert "hello: differs from the lock" in diff.stdout
        assert f"tool greet: description changed\n    locked: {OLD}\n    now:    {NEW}" in diff.stdout

        accepted = wasm_mcp("lock", "update", "hello", "--plugins", str(plugins), env=env).stdout
        assert "hello: accepted" in accepted
        # The host reads the lock again and serves the version it held back.
        host.wait_for_log("plugin reloaded", timeout=60)
        until(lambda: tools(host.url)["greet"] == NEW, "the accepted version was never served")
        same = wasm_mcp("lock", "diff", "--plugins", str(plugins), env=env)
        assert "hello: matches the lock" in same.stdout
    finally:
        host.close()


def test_a_moved_tag_is_held_back_until_the_lock_accepts_it(tmp_path, cache_dir, host_env, registry):  # noqa: F811
    ref = f"oci://{registry.address}/tools/hello:stable"
    plugins, conf, env = setup(tmp_path, cache_dir, host_env,
                               f'oci_poll_secs = 1\n[plugins.hello]\nsource = "{ref}"\n')
    (plugins / "hello.wasm").unlink()
    wasm_mcp("push", str(PLUGINS / "hello.wasm"), ref, env=env)
    wasm_mcp("pull", ref, "--plugins", str(plugins), "--name", "hello", env=env)
    wasm_mcp("lock", "--plugins", str(plugins), env=env)
    assert json.loads((conf / "wasm-mcp.lock").read_text())["plugins"]["hello"]["source"] == ref

    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "hello.wasm").write_bytes(described(OLD, NEW))
    host = HttpHost(plugins, env)
    try:
        assert tools(host.url)["greet"] == OLD
        wasm_mcp("push", str(moved / "hello.wasm"), ref, env=env)
        log = host.wait_for_log("held back by the plugin lock", timeout=60)
        assert f"locked: {OLD}\n    now:    {NEW}" in log, log[-3000:]
        assert tools(host.url)["greet"] == OLD
        wasm_mcp("lock", "update", "--plugins", str(plugins), env=env)
        until(lambda: tools(host.url)["greet"] == NEW, "the moved tag was never served once accepted")
    finally:
        host.close()


def test_a_plugin_asking_for_more_is_held_back_until_the_lock_accepts_it(tmp_path, cache_dir, host_env):
    plugins, conf, env = setup(tmp_path, cache_dir, host_env, '[plugins.hello]\nenv = ["LOCK_TEST_TOKEN"]\n')
    env["LOCK_TEST_TOKEN"] = "granted"
    wasm_mcp("lock", "--plugins", str(plugins), env=env)
    host = HttpHost(plugins, env)
    try:
        assert "greet" in tools(host.url)
        (plugins / "hello.toml").write_text('env = ["LOCK_TEST_TOKEN"]\n')
        log = host.wait_for_log("held back by the plugin lock", timeout=60)
        assert "grants asked for changed (manifest):\n    + env LOCK_TEST_TOKEN" in log, log[-3000:]
        assert "plugin reloaded" not in log
        wasm_mcp("lock", "update", "hello", "--plugins", str(plugins), env=env)
        host.wait_for_log("plugin reloaded", timeout=60)
    finally:
        host.close()
    assert '"LOCK_TEST_TOKEN"' in (conf / "wasm-mcp.lock").read_text()


def test_a_rebuilt_component_with_the_same_definitions_is_reported_as_such(tmp_path, cache_dir, host_env):
    plugins, conf, env = setup(tmp_path, cache_dir, host_env)
    wasm_mcp("lock", "--plugins", str(plugins), env=env)
    host = HttpHost(plugins, env)
    try:
        assert "greet" in tools(host.url)
        replace(plugins / "hello.wasm", rebuilt((PLUGINS / "hello.wasm").read_bytes()))
        log = host.wait_for_log("held back by the plugin lock", timeout=60)
        assert "component digest changed, definitions identical" in log, log[-3000:]
        assert "description changed" not in log
        # Still served: the version that was locked.
        assert tools(host.url)["greet"] == OLD
    finally:
        host.close()
    diff = wasm_mcp("lock", "diff", "--plugins", str(plugins), env=env, check=False)
    assert diff.returncode == 1
    assert "component digest changed, definitions identical" in diff.stdout
    assert "tool greet" not in diff.stdout


def test_lock_diff_shows_a_new_signer_and_a_plugin_not_in_the_lock(tmp_path, cache_dir, host_env):
    plugins, conf, env = setup(tmp_path, cache_dir, host_env)
    wasm_mcp("lock", "--plugins", str(plugins), env=env)
    assert "hello: matches the lock" in wasm_mcp("lock", "diff", "--plugins", str(plugins), env=env).stdout
    (plugins / "hello.signer").write_text("key sha256:0123abcd\n")
    shutil.copy(FIXTURES / "evil.wasm", plugins)
    diff = wasm_mcp("lock", "diff", "--plugins", str(plugins), env=env, check=False)
    assert diff.returncode == 1
    assert "signer changed\n    locked: none\n    now:    key sha256:0123abcd" in diff.stdout, diff.stdout
    assert "evil: not in the lock" in diff.stdout
    inspected = wasm_mcp("inspect", str(plugins / "hello.wasm"), env=env).stdout
    assert f"lock: differs from {conf / 'wasm-mcp.lock'}" in inspected and "signer changed" in inspected


def test_a_plugin_not_in_the_lock_is_not_served_and_a_missing_lock_stops_the_host(tmp_path, cache_dir, host_env):
    plugins, conf, env = setup(tmp_path, cache_dir, host_env)
    missing = wasm_mcp("serve", "--plugins", str(plugins), env=env, check=False)
    assert missing.returncode != 0
    assert f"the plugin lock {conf / 'wasm-mcp.lock'} does not exist" in missing.stderr, missing.stderr
    wasm_mcp("lock", "--plugins", str(plugins), env=env)
    shutil.copy(FIXTURES / "evil.wasm", plugins)
    host = RawHost(plugins, env)
    try:
        host.initialize()
        names = {t["name"] for t in host.request("tools/list")["result"]["tools"]}
        assert "greet" in names and "residue" not in names
        log = host.wait_for_log("plugin evil has no entry in the plugin lock")
        assert "it is not served" in log
    finally:
        host.close()


def test_without_a_configured_lock_nothing_is_enforced(tmp_path, cache_dir, host_env):
    plugins, conf, env = setup(tmp_path, cache_dir, host_env, lock=False)
    # A lock beside the config is compared by `inspect`, not enforced.
    wasm_mcp("lock", "--plugins", str(plugins), env=env)
    assert (conf / "wasm-mcp.lock").is_file()
    host = HttpHost(plugins, env)
    try:
        assert tools(host.url)["greet"] == OLD
        replace(plugins / "hello.wasm", described(OLD, NEW))
        host.wait_for_log("plugin reloaded", timeout=60)
        until(lambda: tools(host.url)["greet"] == NEW, "the new version was never served")
    finally:
        log = host.close()
    assert "plugin lock" not in log


def test_dev_never_enforces_the_lock(tmp_path, cache_dir, host_env):
    plugins, conf, env = setup(tmp_path, cache_dir, host_env)
    (conf / "wasm-mcp.lock").write_text('{"version": 1, "plugins": {}}\n')
    # A plugin "built" by copying the prebuilt component.
    source = tmp_path / "hello"
    source.mkdir()
    build = source / "build.sh"
    build.write_text(f"#!/bin/sh\ncp {PLUGINS / 'hello.wasm'} \"$(dirname \"$0\")/hello.wasm\"\n")
    build.chmod(0o755)
    host = RawHost(None, env, ["dev", str(source)])
    try:
        host.initialize()
        until(lambda: "greet" in {t["name"] for t in host.request("tools/list")["result"]["tools"]},
              "dev did not serve the plugin the lock does not name", timeout=60)
        log = host.wait_for_log("the plugin lock ([server] lock) is not enforced")
        assert "held back" not in log
    finally:
        host.close()
