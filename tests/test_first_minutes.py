"""A new plugin author's first minutes, in every language, as the README
and the generated README say: `wasm-mcp new`, `wasm-mcp build` in the new
folder (outside the repository), `wasm-mcp serve`, and a client that never
listens for notifications, whose first `tools/list` and call must work
with a cold compile cache and the default startup wait."""

import re
import shutil
import subprocess

import pytest

from conftest import BINARY, ROOT, RawHost

# Shared with tests/test_dev.py: the SDK's dependencies compile once.
DEV_TARGET = ROOT / ".cache" / "dev-test-target"

LANGUAGES = ["rust", "python", "js", "c", "go"]


@pytest.fixture
def author_env(tmp_path, host_env):
    """What an author's shell has: wasm-mcp and the toolchains on PATH, a
    compile cache of its own (empty), and no startup wait setting."""
    tools = [BINARY.parent, ROOT / "plugins" / "shout-js" / "node_modules" / ".bin",
             ROOT / ".cache" / "venv" / "bin", ROOT / ".cache" / "cargo" / "bin"]
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{tmp_path / "cold-cache"}"\n')
    env = dict(host_env, WASM_MCP_CONFIG=str(config), CARGO_TARGET_DIR=str(DEV_TARGET),
               GOTOOLCHAIN="local", GOPROXY="off",
               PATH=":".join(str(t) for t in tools) + ":" + host_env["PATH"])
    env.pop("WASM_MCP_STARTUP_WAIT_MS", None)
    return env


def new(language, name, parent, env):
    subprocess.run([str(BINARY), "new", language, name, "--dir", str(parent)],
                   check=True, env=env, timeout=30, capture_output=True)
    return parent / name


def build(folder, env, *args):
    """`wasm-mcp build` run in `folder`, as its README says."""
    return subprocess.run([str(BINARY), "build", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=900)


def first_list_and_call(folder, env):
    """Serves `folder` and, at once, lists and calls `greet` as a client that
    never listens would; the tool names listed."""
    host = RawHost(folder, env)
    try:
        host.initialize(timeout=10)
        tools = [t["name"] for t in host.request("tools/list", timeout=60)["result"]["tools"]]
        greet = next(t for t in tools if t.endswith("greet"))
        answer = host.request("tools/call", {"name": greet, "arguments": {"name": "Ada"}}, timeout=60)
        assert answer["result"]["content"][0]["text"] == "Hello, Ada!", answer
        assert not answer["result"].get("isError"), answer
        return tools
    finally:
        host.close()


@pytest.mark.parametrize("language", LANGUAGES)
def test_new_build_serve_and_the_first_list_and_call_succeed(tmp_path, author_env, language):
    folder = new(language, f"first-{language}", tmp_path, author_env)
    built = build(folder, author_env)
    assert built.returncode == 0, built.stderr[-3000:]
    component = "first_rust.wasm" if language == "rust" else f"first-{language}.wasm"
    assert (folder / component).is_file(), sorted(p.name for p in folder.iterdir())
    tools = first_list_and_call(folder, author_env)
    assert any(t.endswith("greet") for t in tools), tools


def trim_to_one_tool(folder, language):
    """Deletes all but the greet tool, as the generated README suggests."""
    if language == "python":
        app = folder / "app.py"
        text = app.read_text()
        text = text[: text.index("@plugin.resource")] + "\nTools = plugin.Tools\n"
        app.write_text(text)
    else:
        app = folder / "app.js"
        text = app.read_text()
        text = text[: text.index("  .resource(")].rstrip() + ";\n\nexport const tools = plugin.tools;\n"
        app.write_text(text)


@pytest.mark.parametrize("language", ["python", "js"])
def test_a_template_trimmed_to_one_tool_builds_and_serves(tmp_path, author_env, language):
    folder = new(language, f"trim-{language}", tmp_path, author_env)
    trim_to_one_tool(folder, language)
    built = build(folder, author_env)
    assert built.returncode == 0, built.stderr[-3000:]
    assert first_list_and_call(folder, author_env) == ["greet"]


def test_a_hand_picked_wrong_world_fails_naming_the_world_to_use(tmp_path, author_env):
    folder = new("python", "worlds", tmp_path, author_env)
    # The template defines completions: only the full world covers it.
    wrong = build(folder, author_env, "--world", "tools-resources-prompts-plugin")
    assert wrong.returncode != 0
    assert "needs the world wasm-mcp:plugin/plugin" in wrong.stderr, wrong.stderr
    assert not (folder / "worlds.wasm").exists()
    # componentize-py run by hand against that world: the helper's error
    # names the world too.
    by_hand = subprocess.run(
        ["componentize-py", "-d", "wit", "-w", "wasm-mcp:plugin/tools-resources-prompts-plugin",
         "componentize", "app", "-o", "worlds.wasm"],
        cwd=folder, env=author_env, capture_output=True, text=True, timeout=600)
    assert by_hand.returncode != 0
    said = by_hand.stdout + by_hand.stderr
    assert "wasm-mcp:plugin/plugin" in said and "wasm-mcp build" in said, said[-3000:]
    # Trimmed to a tool, the right world is the smallest.
    trim_to_one_tool(folder, "python")
    right = build(folder, author_env, "--world", "tools-plugin")
    assert right.returncode == 0, right.stderr[-3000:]
    # And a broken module says what broke, with the build's exit status.
    (folder / "app.py").write_text((folder / "app.py").read_text() + "\ndef broken(:\n")
    broken = build(folder, author_env)
    assert broken.returncode != 0
    assert "worlds did not build" in broken.stderr and "SyntaxError" in broken.stderr, broken.stderr[-3000:]


def test_build_writes_into_another_folder_with_the_manifest(tmp_path, author_env):
    folder = new("c", "out-c", tmp_path, author_env)
    (folder / "out-c.toml").write_text('hosts = ["example.com"]\n')
    served = tmp_path / "served"
    built = build(folder, author_env, "--out", str(served))
    assert built.returncode == 0, built.stderr[-3000:]
    assert sorted(p.name for p in served.iterdir()) == ["out-c.skills", "out-c.toml", "out-c.wasm"]
    # The template's skill is copied (the output stands alone), not linked.
    skills = served / "out-c.skills"
    assert not skills.is_symlink() and (skills / "getting-started" / "SKILL.md").read_text().startswith("---\n")
    assert re.search(r"built out-c in .*served/out-c\.wasm", built.stderr), built.stderr
    first_list_and_call(served, author_env)


def test_a_broken_save_under_dev_reaches_a_client_that_never_set_a_log_level(tmp_path, author_env):
    """The client neither sets a log level nor lists again: the failure
    comes to it (and to a 2026-07-28 listener) as an error message, the
    compiler's error first, without backtraces; the last good build keeps
    serving."""
    import time

    from conftest import modern_meta

    folder = new("python", "broken-save", tmp_path, author_env)
    # A backtrace as long as a Rust tool's under RUST_BACKTRACE=1.
    host = RawHost(None, dict(author_env, RUST_BACKTRACE="1"), ["dev", str(folder)])
    try:
        host.initialize(timeout=600)
        host.send({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
                   "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": True}}})
        assert host.read()["method"] == "notifications/subscriptions/acknowledged"
        app = folder / "app.py"
        app.write_text(app.read_text() + "\ndef broken(:\n    pass\n")
        host.wait_for_log("broken-save did not build", timeout=600)
        failed = time.monotonic()
        told = {}
        while len(told) < 2:
            message = host.read(timeout=10)
            if message.get("method") == "notifications/message":
                tag = message["params"].get("_meta", {}).get("io.modelcontextprotocol/subscriptionId")
                told["listener" if tag == "listen" else "session"] = message["params"]
        # A generous liveness bound (the goal is at once).
        assert time.monotonic() - failed < 10
        for params in told.values():
            assert params["level"] == "error", params
            data = params["data"]
            lines = data.splitlines()
            assert lines[0] == "wasm-mcp dev: plugin broken-save did not build; the last good build keeps serving:"
            assert lines[1].startswith('File "') and "app.py" in lines[1], data
            assert lines[2] == "SyntaxError: invalid syntax", data
            assert "Stack backtrace" not in data and "Traceback" not in data, data
            assert len(data) < 8300, len(data)
        greet = host.request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}}, timeout=60)
        assert greet["result"]["content"][0]["text"] == "Hello, Ada!"
    finally:
        host.close()


GO_MEAN = '''type Point struct {
	X float64 `json:"x" description:"Across."`
	Y float64 `json:"y" description:"Up."`
}

type Stats struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
}

func mean(a struct {
	Points []Point `json:"points" description:"The points."`
	Label  string  `json:"label,omitempty"`
}) (Stats, error) {
	if len(a.Points) == 0 {
		return Stats{}, errors.New("no points")
	}
	sum := 0.0
	for _, p := range a.Points {
		sum += p.X + p.Y
	}
	return Stats{Count: len(a.Points), Mean: sum / float64(len(a.Points))}, nil
}

func init() {
	wasmmcp.Tool("mean", "The mean of x+y over points.", mean, wasmmcp.Title("Mean"))
'''


def test_a_go_tool_is_a_plain_function_with_optional_arguments_and_an_error_result(tmp_path, author_env):
    """The Go template grown as an author would: a record argument, numbers,
    a boolean, an optional argument, a default, a structured result and an
    error result, each a plain function and a line registering it."""
    folder = new("go", "go-tools", tmp_path, author_env)
    main = folder / "main.go"
    main.write_text(main.read_text().replace("func init() {\n", GO_MEAN, 1))
    built = build(folder, author_env)
    assert built.returncode == 0, built.stderr[-3000:]
    host = RawHost(folder, author_env)
    try:
        host.initialize(timeout=10)
        tools = {t["name"]: t for t in host.request("tools/list", timeout=60)["result"]["tools"]}
        assert set(tools) == {"greet", "mean"}, tools
        greet = tools["greet"]
        assert greet["description"] == "Says hello to someone."
        assert greet["annotations"]["readOnlyHint"] is True, greet
        schema = greet["inputSchema"]
        assert schema["required"] == ["name"], schema
        assert schema["properties"]["name"] == {"type": "string", "description": "Who to greet."}
        assert schema["properties"]["times"]["type"] == "integer" and schema["properties"]["times"]["default"] == 1
        assert schema["properties"]["shout"]["type"] == "boolean"
        mean = tools["mean"]
        assert mean["title"] == "Mean", mean
        points = mean["inputSchema"]["properties"]["points"]
        assert points["items"]["properties"]["x"] == {"type": "number", "description": "Across."}, points
        assert mean["inputSchema"]["required"] == ["points"], mean
        assert mean["outputSchema"]["properties"]["count"] == {"type": "integer"}, mean

        def call(tool, **arguments):
            return host.request("tools/call", {"name": tool, "arguments": arguments}, timeout=60)["result"]

        assert call("greet", name="Go")["content"][0]["text"] == "Hello, Go!"
        assert call("greet", name="Go", times=2, shout=True)["content"][0]["text"] == "HELLO, GO! HELLO, GO!"
        failed = call("greet", name="Go", times=11)
        assert failed["isError"] is True and failed["content"][0]["text"] == "times must be between 1 and 10"
        assert call("greet", times=1)["isError"] is True
        stats = call("mean", points=[{"x": 1, "y": 2}, {"x": 3, "y": 4}])
        assert stats["structuredContent"] == {"count": 2, "mean": 5}, stats
        empty = call("mean", points=[])
        assert empty["isError"] is True and empty["content"][0]["text"] == "no points", empty
    finally:
        host.close()


PY_MEAN = '''
from wasm_mcp import Plugin, ToolError, result

plugin = Plugin()


@plugin.tool(title="Mean", annotations={"read_only_hint": True},
             output_schema={"type": "object", "properties": {"mean": {"type": "number"}}})
def mean(values: list[float], digits: int = 2) -> dict:
    """The mean of some numbers.

    Args:
        values: The numbers.
        digits: Digits after the point.
    """
    if not values:
        raise ToolError("no values")
    m = sum(values) / len(values)
    return result(f"The mean is {m:.{digits}f}.", {"mean": m})


Tools = plugin.Tools
'''

JS_MEAN = '''
import { Plugin, result } from "./wasm-mcp.js";

const plugin = new Plugin().tool(
  "mean",
  "The mean of some numbers.",
  {
    values: { type: "array", items: { type: "number" }, description: "The numbers." },
    digits: { type: "integer", default: 2, description: "Digits after the point." },
  },
  ({ values, digits }) => {
    if (values.length === 0) throw new Error("no values");
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    return result(`The mean is ${mean.toFixed(digits)}.`, { mean });
  },
  { title: "Mean", annotations: { readOnlyHint: true },
    outputSchema: { type: "object", properties: { mean: { type: "number" } } } },
);

export const tools = plugin.tools;
'''


@pytest.mark.parametrize("language", ["python", "js"])
def test_the_helpers_offer_errors_output_schemas_annotations_results_and_defaults(tmp_path, author_env, language):
    """What the Go helper does (see the Go test above), Python's and
    JavaScript's do too."""
    folder = new(language, f"mean-{language}", tmp_path, author_env)
    (folder / ("app.py" if language == "python" else "app.js")).write_text(PY_MEAN if language == "python" else JS_MEAN)
    built = build(folder, author_env)
    assert built.returncode == 0, built.stderr[-3000:]
    host = RawHost(folder, author_env)
    try:
        host.initialize(timeout=10)
        [tool] = host.request("tools/list", timeout=60)["result"]["tools"]
        assert tool["title"] == "Mean" and tool["annotations"]["readOnlyHint"] is True, tool
        assert tool["outputSchema"]["properties"]["mean"] == {"type": "number"}, tool
        schema = tool["inputSchema"]
        assert schema["required"] == ["values"], schema
        assert schema["properties"]["digits"]["default"] == 2, schema
        assert schema["properties"]["digits"]["description"] == "Digits after the point.", schema

        def call(**arguments):
            return host.request("tools/call", {"name": "mean", "arguments": arguments}, timeout=60)["result"]

        done = call(values=[1, 2])
        assert done["content"][0]["text"] == "The mean is 1.50.", done
        assert done["structuredContent"] == {"mean": 1.5}, done
        assert call(values=[1, 2], digits=0)["content"][0]["text"] == "The mean is 2.", done
        failed = call(values=[])
        assert failed["isError"] is True and failed["content"][0]["text"] == "no values", failed
    finally:
        host.close()


def test_the_c_template_shows_the_tool_error_path(tmp_path, author_env):
    folder = new("c", "c-errors", tmp_path, author_env)
    built = build(folder, author_env)
    assert built.returncode == 0, built.stderr[-3000:]
    host = RawHost(folder, author_env)
    try:
        host.initialize(timeout=10)
        empty = host.request("tools/call", {"name": "greet", "arguments": {"name": ""}}, timeout=60)["result"]
        assert empty["isError"] is True, empty
        assert empty["content"][0]["text"] == "name is empty: say who to greet", empty
    finally:
        host.close()
