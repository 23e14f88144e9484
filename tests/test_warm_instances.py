"""`calls_per_instance`: an operator's opt-in to keep a plugin's instances
warm between calls. By default every call gets a fresh instance (see
test_sandbox.py); with the opt-in, an instance serves at most that many
calls, and one that failed is never kept."""

import os
import shutil
import subprocess

from conftest import BINARY, FIXTURES, PLUGINS, RawHost


def call(host, tool, **arguments):
    response = host.request("tools/call", {"name": tool, "arguments": arguments}, timeout=120)
    assert "result" in response, response
    result = response["result"]
    return bool(result.get("isError")), "".join(c.get("text", "") for c in result["content"])


def serve(tmp_path, cache_dir, components, limits, extra="", manifests=None):
    """A host serving `components`, compiled into the cache first (so that no
    optimised build swaps in midway, which would start without kept
    instances), with `limits` for every plugin, `extra` config and the
    plugins' `manifests` (by plugin name)."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    for component in components:
        shutil.copy(component, plugins)
    for name, text in (manifests or {}).items():
        (plugins / f"{name}.toml").write_text(text)
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n\n[limits]\n{limits}\n{extra}')
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="info")
    warm = subprocess.run([str(BINARY), "warm", "--plugins", str(plugins)], env=env,
                          capture_output=True, timeout=900)
    assert warm.returncode == 0, warm.stderr.decode()[-2000:]
    host = RawHost(plugins, env)
    host.initialize()
    return host


def test_a_kept_instance_serves_at_most_its_calls_and_a_failed_one_is_not_kept(tmp_path, cache_dir):
    """`residue` counts the marker that earlier calls in its instance left in
    memory, then leaves it. With calls_per_instance = 3, a call finds it
    exactly when the call before it ran in the same instance. The listing
    at load is an instance's first call."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    host = serve(tmp_path, cache_dir, [FIXTURES / "evil.wasm"],
                 "calls_per_instance = 3\nmax_concurrent_calls = 1\ncall_timeout_ms = 2000\n",
                 f'[roots.scratch]\npath = "{scratch}"\nmode = "read-write"\n\n'
                 '[plugins.evil]\nroots = ["scratch"]\n',
                 {"evil": '[roots]\nscratch = "read-write"\n'})
    try:
        def left_over():
            failed, text = call(host, "residue", megabytes=1)
            assert not failed and text.startswith("found "), text
            return int(text.removeprefix("found ")) > 0

        # The load's instance: listed (1), then two calls; then fresh ones.
        assert [left_over() for _ in range(2)] == [False, True]
        assert [left_over() for _ in range(3)] == [False, True, True]
        assert left_over() is False
        # A call that traps is torn down with its instance.
        failed, text = call(host, "recurse")
        assert failed, text
        assert [left_over() for _ in range(2)] == [False, True]
        # So is one that times out.
        failed, text = call(host, "hold", path="/scratch/lock", ms=10000)
        assert failed and "longer than 2s" in text, text
        assert [left_over() for _ in range(2)] == [False, True]
    finally:
        host.close()


def test_by_default_nothing_is_kept(tmp_path, cache_dir):
    host = serve(tmp_path, cache_dir, [FIXTURES / "evil.wasm"], "")
    try:
        for _ in range(4):
            assert call(host, "residue", megabytes=0) == (False, "found 0")
    finally:
        host.close()


def test_kept_instances_of_every_language_go_on_answering(tmp_path, cache_dir):
    """Python (componentize-py), JavaScript (componentize-js), C, Go (a plain
    component) and Rust plugins, called again and again in kept instances,
    answer each call as a fresh instance would."""
    components = [PLUGINS / f"{name}.wasm" for name in ("wordcount", "shout", "stats", "lines", "hello")]
    host = serve(tmp_path, cache_dir, components, "calls_per_instance = 1000\n")
    try:
        for i in range(30):
            words = " ".join(["w"] * (i + 1))
            assert call(host, "word_count", text=words) == (False, str(i + 1))
            assert call(host, "shout", text=f"hi {i}") == (False, f"HI {i}!")
            assert call(host, "stats", numbers=[i, i + 2]) == (
                False, f"count 2, mean {i + 1}, min {i}, max {i + 2}")
            assert call(host, "line-count", text="\n".join(["x"] * (i + 1))) == (False, str(i + 1))
            assert call(host, "greet", name=str(i)) == (False, f"Hello, {i}!")
    finally:
        host.close()


def test_inspect_says_when_instances_are_kept(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[plugins.hello.limits]\ncalls_per_instance = 50\n')
    out = subprocess.run([str(BINARY), "inspect", str(PLUGINS / "hello.wasm"), "--config", str(config)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "each serves up to 50 calls" in out.stdout, out.stdout
