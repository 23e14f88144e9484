"""Plain components: a component that exports ordinary functions and none
of the wasm-mcp contract is served anyway, each function a tool with a
schema derived from its WIT types. Two languages: plugins/plain-rust (every
WIT type family, a test fixture) and plugins/lines-go (Go, with its WIT docs
added by `wasm-mcp build`). Sandbox, limits and hot reload apply as to
any plugin."""

import os
import shutil
import time

import pytest

from conftest import FIXTURES, PLUGINS, RawHost
from test_plugin_hardening import Peak

MIB = 1024


@pytest.fixture
def host(tmp_path, cache_dir):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(FIXTURES / "plain.wasm", plugins / "plain.wasm")
    shutil.copy(PLUGINS / "lines.wasm", plugins / "lines.wasm")
    config = tmp_path / "config.toml"
    config.write_text(
        f'[server]\ncache_dir = "{cache_dir}"\n\n'
        "[plugins.plain.limits]\ncall_timeout_ms = 1000\nmax_result_mb = 1\n"
    )
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="info", XDG_STATE_HOME=str(tmp_path / "state"))
    host = RawHost(plugins, env)
    host.initialize(timeout=120)
    host.plugins = plugins
    yield host
    host.close()


def tools_of(host, timeout: float = 120) -> dict:
    # The first list waits for the first load.
    tools = host.request("tools/list", timeout=timeout)["result"]["tools"]
    return {t["name"]: t for t in tools}


def call(host, tool, arguments, timeout=60.0) -> dict:
    response = host.request("tools/call", {"name": tool, "arguments": arguments}, timeout=timeout)
    assert "result" in response, response
    return response["result"]


def all_tool_names(host) -> list:
    """Every tool's name, page after page."""
    names, cursor = [], None
    while True:
        page = host.request("tools/list", {"cursor": cursor} if cursor else {}, timeout=60)["result"]
        names += [t["name"] for t in page["tools"]]
        cursor = page.get("nextCursor")
        if not cursor:
            return names


def text(result) -> str:
    return "".join(c["text"] for c in result["content"])


def test_every_function_is_a_tool_with_a_schema_from_its_wit_types(host):
    tools = tools_of(host)
    assert {"greet", "convert", "area", "total", "style-word", "ping", "count-bytes", "zeros",
            "read-file", "spin", "line-count", "sort-lines", "title-case"} <= set(tools)
    convert = tools["convert"]["inputSchema"]
    assert convert["required"] == ["length", "target"]
    assert convert["additionalProperties"] is False
    assert convert["properties"]["target"] == {"type": "string", "enum": ["metre", "foot", "inch"]}
    length = convert["properties"]["length"]
    assert length["properties"]["amount"] == {"type": "number"}
    assert length["required"] == ["amount", "unit"]
    total = tools["total"]["inputSchema"]
    assert total["required"] == ["numbers"], "an option parameter may be left out"
    assert total["properties"]["numbers"]["items"] == {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1}
    assert total["properties"]["scale"]["anyOf"][1] == {"type": "null"}
    shape = tools["area"]["inputSchema"]["properties"]["shape"]["oneOf"]
    assert {"const": "point"} in shape
    assert tools["style-word"]["outputSchema"]["properties"]["result"]["prefixItems"][1]["type"] == "integer"
    assert "outputSchema" not in tools["ping"] or tools["ping"]["outputSchema"] is None
    # Without WIT docs in the component, the description names the function;
    # with them (the Go plugin), it is the doc comment.
    assert "greet" in tools["greet"]["description"]
    assert tools["sort-lines"]["description"] == "Sorts the lines of a text."


def test_json_arguments_become_component_values_and_results_come_back(host):
    result = call(host, "greet", {"name": "Ada"})
    assert (result.get("isError", False), text(result)) == (False, "Hello, Ada!")
    assert result["structuredContent"] == {"result": "Hello, Ada!"}

    result = call(host, "convert", {"length": {"amount": 1, "unit": "foot"}, "target": "inch"})
    assert result["structuredContent"]["result"]["unit"] == "inch"
    assert abs(result["structuredContent"]["result"]["amount"] - 12) < 1e-9

    assert call(host, "total", {"numbers": [1, 2, 3]})["structuredContent"] == {"result": 6}
    assert call(host, "total", {"numbers": [1, 2, 3], "scale": 3})["structuredContent"] == {"result": 18}
    assert call(host, "area", {"shape": "point"})["structuredContent"] == {"result": 0.0}
    assert call(host, "area", {"shape": {"square": 3}})["structuredContent"] == {"result": 9.0}
    styled = call(host, "style-word", {"word": "hi", "style": ["loud", "bold"]})
    assert styled["structuredContent"] == {"result": ["**HI**", 6]}
    pinged = call(host, "ping", {})
    assert pinged["content"] == [] and not pinged.get("isError")


def test_an_err_result_is_a_tool_error_and_bad_arguments_are_refused(host):
    result = call(host, "area", {"shape": {"circle": -1}})
    assert result["isError"] is True
    assert text(result) == "a size cannot be negative"

    for arguments in ({"shape": {"triangle": 1}}, {"shape": {"circle": "big"}}, {}, {"shape": "point", "extra": 1}):
        response = host.request("tools/call", {"name": "area", "arguments": arguments}, timeout=30)
        refused = "error" in response or response["result"].get("isError")
        assert refused, (arguments, response)
    response = host.request("tools/call", {"name": "total", "arguments": {"numbers": [2**31]}}, timeout=30)
    assert "error" in response or response["result"].get("isError"), response


def test_go_handles_arguments_of_several_megabytes(host):
    big = "line\n" * 700_000  # 3.5 MB
    result = call(host, "line-count", {"text": big}, timeout=120)
    assert result["structuredContent"] == {"result": 700_000}
    assert text(call(host, "title-case", {"text": "hello wide world"})) == "Hello Wide World"
    assert text(call(host, "sort-lines", {"text": "b\nc\na"})) == "a\nb\nc"


def test_sandbox_and_limits_apply_unchanged(host):
    # Nothing granted: no file outside the sandbox can be read.
    result = call(host, "read-file", {"path": "/etc/passwd"})
    assert result["isError"] is True and "root:" not in text(result)

    # The deadline stops a function that never returns.
    started = time.monotonic()
    result = call(host, "spin", {}, timeout=30)
    assert result["isError"] is True and "longer than" in text(result), result
    assert time.monotonic() - started < 30

    # A result over the plugin's limit (1 MiB) is refused, whether it is
    # large as a lifted value (a list of 200 million bytes, refused before
    # the host copies it) or only as JSON (control characters escape to six
    # bytes each); the host's memory stays bounded meanwhile.
    peak = Peak(host)
    for tool, arguments in (("zeros", {"count": 200_000_000}), ("greet", {"name": "\u0000" * 300_000})):
        result = call(host, tool, arguments, timeout=120)
        assert result["isError"] is True and "over this plugin's limit" in text(result), (tool, text(result)[:200])
    assert peak.stop() < 700 * MIB
    assert call(host, "zeros", {"count": 1000})["structuredContent"] == {"result": [0] * 1000}
    assert text(call(host, "greet", {"name": "again"})) == "Hello, again!"


def test_a_plain_component_reloads_like_any_plugin(host):
    assert "title-case" in tools_of(host)
    (host.plugins / "lines.wasm").unlink()
    deadline = time.monotonic() + 30
    while "title-case" in tools_of(host):
        assert time.monotonic() < deadline, "the removed plain plugin is still listed"
        time.sleep(0.2)
    shutil.copy(PLUGINS / "lines.wasm", host.plugins / "again.wasm")
    deadline = time.monotonic() + 60
    while "title-case" not in tools_of(host):
        assert time.monotonic() < deadline, "the new plain plugin was not loaded"
        time.sleep(0.2)
    assert any(m.get("method") == "notifications/tools/list_changed" for m in host.pending)


def hostile_wit(functions: int) -> str:
    """A world whose few types expand to large schemas when every function
    reuses them, plus a type nested too deep and one too large."""
    lines = ["package test:hostile;", "", "world hostile {", "    record r0 { a: u8 }"]
    for level in (1, 2):
        fields = ", ".join(f"f{i}: r{level - 1}" for i in range(10))
        lines.append(f"    record r{level} {{ {fields} }}")
    lines.append("    record huge { " + ", ".join(f"f{i}: r2" for i in range(20)) + " }")
    lines.append("    record d0 { a: u8 }")
    for level in range(1, 40):
        lines.append(f"    record d{level} {{ a: d{level - 1} }}")
    lines.append("    export calc: interface { add: func(a: s32, b: s32) -> s32; }")
    lines.append("    export deep: func(x: d39);")
    lines.append("    export too-large: func(x: huge);")
    lines.extend(f"    export big{i}: func(x: r2) -> r2;" for i in range(functions))
    lines.append("}")
    return "\n".join(lines) + "\n"


def test_hostile_type_shapes_are_bounded(tmp_path, cache_dir):
    """A small component whose functions all reuse one large type, one type
    nested 40 deep and one that expands past the node limit: the deep and
    the large are left out, and the listing stops at the result limit."""
    import subprocess

    from conftest import ROOT

    wasm_tools = ROOT / ".cache" / "venv" / "bin" / "wasm-tools"
    (tmp_path / "hostile.wit").write_text(hostile_wit(2000))
    core, component = tmp_path / "core.wasm", tmp_path / "plugins" / "hostile.wasm"
    component.parent.mkdir()
    subprocess.run([wasm_tools, "component", "embed", "--dummy", tmp_path / "hostile.wit", "-o", core], check=True)
    subprocess.run([wasm_tools, "component", "new", core, "-o", component], check=True)
    assert component.stat().st_size < 2 << 20
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n\n[plugins.hostile.limits]\nmax_result_mb = 1\n')
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="info", XDG_STATE_HOME=str(tmp_path / "state"))
    host = RawHost(component.parent, env)
    try:
        host.initialize(timeout=120)
        peak = Peak(host)
        names = all_tool_names(host)
        assert "deep" not in names and "too-large" not in names
        assert "big0" in names and 10 < len(names) < 2000, len(names)
        assert "calc.add" in names, "a function of an exported interface is `interface.function`"
        assert peak.stop() < 500 * MIB
    finally:
        log = host.close()
    assert "nested deeper than 32 levels" in log
    assert "more than 4096 schema nodes" in log
    assert "not served as a tool: the plugin's tools are already near 1048576 bytes" in log
    assert "functions in all are not served as tools" in log


def build_plain(tmp_path, name, wit_text):
    """A plain component made from `wit_text` (its functions stubs that trap)."""
    import subprocess

    from conftest import ROOT

    wasm_tools = ROOT / ".cache" / "venv" / "bin" / "wasm-tools"
    (tmp_path / f"{name}.wit").write_text(wit_text)
    core = tmp_path / f"{name}-core.wasm"
    component = tmp_path / "plugins" / f"{name}.wasm"
    component.parent.mkdir(exist_ok=True)
    subprocess.run([wasm_tools, "component", "embed", "--dummy", tmp_path / f"{name}.wit", "-o", core], check=True)
    subprocess.run([wasm_tools, "component", "new", core, "-o", component], check=True)
    return component


def test_every_member_counts_toward_the_load_budget(tmp_path, cache_dir):
    """An enum of 10 000 cases (the most a component may declare), the type
    of each of a record's 1 000 fields, that record the type of a few
    functions' parameters; a variant of 5 000 cases and a flags of 32
    beside them: the component is small, but writing one function's schema
    out would take ten million strings. Every member counts before anything
    is written for it, so each such function is left out with the reason,
    within a few MB of the component's size above the host's own; the small
    function beside them is served."""
    cases = ", ".join(f"case-number-{i}" for i in range(10_000))
    fields = ", ".join(f"x{i}: big" for i in range(1_000))
    variant = ", ".join(f"v{i}(u8)" for i in range(5_000))
    flags = ", ".join(f"g{i}" for i in range(32))
    lines = ["package test:members;", "", "world members {",
             f"    enum big {{ {cases} }}", f"    record wide {{ {fields} }}",
             f"    variant many {{ {variant} }}", f"    flags lots {{ {flags} }}",
             "    export small: func(a: s32) -> s32;"]
    for i in range(30):
        lines.append(f"    export e{i}: func(a: wide, b: big) -> big;")
        lines.append(f"    export v{i}: func(a: many, b: many, c: lots) -> many;")
    lines.append("}")
    component = build_plain(tmp_path, "members", "\n".join(lines) + "\n")
    size_kib = component.stat().st_size // 1024
    assert size_kib < 2048, size_kib
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n')
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="info", XDG_STATE_HOME=str(tmp_path / "state"))
    shutil.copy(PLUGINS / "hello.wasm", component.parent / "hello.wasm")
    host = RawHost(component.parent, env)
    try:
        host.initialize(timeout=120)
        # Compiling it takes a fraction of a second: wasmtime converted each
        # of its types again at every use, which took two minutes of CPU
        # (vendor/README.md, wasmtime-environ). A liveness bound.
        names = set(tools_of(host, timeout=60))
        assert "small" in names and "greet" in names, names
        assert not any(n.startswith(("e", "v")) and n[1:].isdigit() for n in names), sorted(names)[:20]
        peak = host.status("VmHWM")
        print(f"peak RSS loading a {size_kib} KiB component of huge types: {peak // 1024} MiB")
        assert peak < 400 * MIB, peak
        assert host.request("ping", timeout=10)["result"] == {}
    finally:
        log = host.close()
    assert "more than 4096 schema nodes" in log
