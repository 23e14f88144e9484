"""`wasm-mcp dev`: build a plugin from source, serve it, rebuild and reload on edit."""

import shutil
import time
from pathlib import Path

from conftest import ROOT, RawHost, modern_meta

# Shared by runs, so the plugin's dependencies compile once per machine.
DEV_TARGET = ROOT / ".cache" / "dev-test-target"


def rust_plugin_copy(tmp_path):
    """The hello example as a standalone Cargo package outside the
    repository, against a copy of the SDK folder alone (it carries its WIT)."""
    sdk = tmp_path / "sdk"
    shutil.copytree(ROOT / "sdk-guest", sdk, ignore=shutil.ignore_patterns("target", "Cargo.lock"))
    source = tmp_path / "hello-dev"
    shutil.copytree(ROOT / "plugins" / "hello-rust" / "src", source / "src")
    manifest = (ROOT / "plugins" / "hello-rust" / "Cargo.toml").read_text()
    assert 'path = "../../sdk-guest"' in manifest
    manifest = manifest.replace('path = "../../sdk-guest"', f'path = "{sdk}"')
    (source / "Cargo.toml").write_text(manifest + "\n[workspace]\n")
    return source


def edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_dev_rebuilds_and_reloads_a_rust_plugin_after_an_edit(tmp_path, host_env):
    source = rust_plugin_copy(tmp_path)
    # Named as `serve` names the component Cargo builds (hello_rust.wasm),
    # with the manifest beside it applied.
    (source / "hello_rust.toml").write_text('[roots]\nnope = "read-only"\n')
    env = dict(host_env, CARGO_TARGET_DIR=str(DEV_TARGET))
    host = RawHost(None, env, ["dev", str(source)])
    try:
        host.initialize(timeout=900)
        log = host.wait_for_log("root nope: no such root in the config")
        assert 'plugin="hello_rust"' in log
        greet = host.request("tools/call", {"name": "greet", "arguments": {"name": "dev"}})
        assert greet["result"]["content"][0]["text"] == "Hello, dev!"

        lib = source / "src" / "lib.rs"
        edit(lib, '.tool("greet", "Says hello to someone", |g: Greet| {\n            format!("Hello, {}!", g.name)',
             '.tool("salute", "Salutes someone", |g: Greet| {\n            format!("Salute, {}!", g.name)')
        changed = host.read(600)
        assert changed["method"] == "notifications/tools/list_changed"
        names = [t["name"] for t in host.request("tools/list")["result"]["tools"]]
        assert names == ["salute", "add", "countdown"]
        salute = host.request("tools/call", {"name": "salute", "arguments": {"name": "dev"}})
        assert salute["result"]["content"][0]["text"] == "Salute, dev!"

        # A build error is shown on stderr and to the client (as a log
        # message), and the last good build keeps serving.
        assert host.request("logging/setLevel", {"level": "error"})["result"] == {}
        edit(lib, '"Salute, {}!"', '"Salute, {}!" this does not compile')
        log = host.wait_for_log("did not build", timeout=600)
        assert "error" in log and "src/lib.rs" in log
        told = host.read(60)
        assert told["method"] == "notifications/message", told
        assert told["params"]["level"] == "error" and "hello_rust did not build" in told["params"]["data"]
        assert "src/lib.rs" in told["params"]["data"], told
        salute = host.request("tools/call", {"name": "salute", "arguments": {"name": "again"}})
        assert salute["result"]["content"][0]["text"] == "Salute, again!"
    finally:
        host.close()


def test_dev_rebuilds_a_javascript_plugin_with_componentize_js(tmp_path, host_env):
    source = tmp_path / "shout-dev"
    source.mkdir()
    shutil.copy(ROOT / "plugins" / "shout-js" / "app.js", source / "app.js")
    shutil.copy(ROOT / "sdk-js" / "wasm-mcp.js", source / "wasm-mcp.js")
    tools = ROOT / "plugins" / "shout-js" / "node_modules" / ".bin"
    env = dict(host_env, PATH=f"{tools}:{host_env['PATH']}")
    host = RawHost(None, env, ["dev", str(source)])
    try:
        host.initialize(timeout=600)
        shout = host.request("tools/call", {"name": "shout", "arguments": {"text": "dev"}}, timeout=120)
        assert shout["result"]["content"][0]["text"] == "DEV!"

        edit(source / "app.js", '.tool("shout",', '.tool("yell",')
        changed = host.read(600)
        assert changed["method"] == "notifications/tools/list_changed"
        yell = host.request("tools/call", {"name": "yell", "arguments": {"text": "dev"}}, timeout=120)
        assert yell["result"]["content"][0]["text"] == "DEV!"
    finally:
        log = host.close()
    assert "built shout-dev" in log


def test_the_examples_carry_the_helpers_as_shipped():
    """The Python and JavaScript examples use copies of the helpers, as
    `wasm-mcp new` writes them; the copies must not drift."""
    for example, helper in [("wordcount-python/wasm_mcp.py", "sdk-python/wasm_mcp.py"),
                            ("slow-python/wasm_mcp.py", "sdk-python/wasm_mcp.py"),
                            ("memory-python/wasm_mcp.py", "sdk-python/wasm_mcp.py"),
                            ("code-python/wasm_mcp.py", "sdk-python/wasm_mcp.py"),
                            ("shout-js/wasm-mcp.js", "sdk-js/wasm-mcp.js"),
                            ("kv-js/wasm-mcp.js", "sdk-js/wasm-mcp.js")]:
        assert (ROOT / "plugins" / example).read_text() == (ROOT / helper).read_text(), example


def test_wit_prints_the_contract_the_sdk_carries():
    import subprocess

    from conftest import BINARY

    printed = subprocess.run([str(BINARY), "wit"], capture_output=True, check=True, timeout=30).stdout.decode()
    # The contract, then the packages its worlds include (wit/deps), nested:
    # one document a generator reads as it reads the folder.
    assert printed.startswith((ROOT / "sdk-guest" / "wit" / "plugin.wit").read_text())
    assert "world tools-plugin" in printed
    assert "\npackage wasi:keyvalue@0.2.0-draft2 {\n" in printed
    for dep in (ROOT / "sdk-guest" / "wit" / "deps" / "keyvalue").glob("*.wit"):
        body = [line for line in dep.read_text().splitlines() if not line.startswith("package ")]
        assert "\n".join(body) in printed, dep.name
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        wit = Path(folder) / "plugin.wit"
        wit.write_text(printed)
        parsed = subprocess.run([str(ROOT / ".cache" / "venv" / "bin" / "wasm-tools"), "component", "wit", str(wit)],
                                capture_output=True, text=True, timeout=60)
    assert parsed.returncode == 0, parsed.stderr
    assert "import wasi:keyvalue/atomics@0.2.0-draft2;" in parsed.stdout


def test_a_printing_command_whose_reader_went_away_ends_quietly():
    """`wasm-mcp wit | head -0`: the pipe is closed before the first write.
    The command ends as Unix tools do (SIGPIPE), not with a panic."""
    import os
    import signal
    import subprocess

    from conftest import BINARY

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([str(BINARY), "wit"], stdout=write_end, stderr=subprocess.PIPE, timeout=30)
    finally:
        os.close(write_end)
    assert done.returncode == -signal.SIGPIPE, (done.returncode, done.stderr)
    assert b"panicked" not in done.stderr, done.stderr


def test_new_writes_a_plugin_that_builds_and_serves_in_each_language(tmp_path, host_env):
    import subprocess

    from conftest import BINARY

    node_tools = ROOT / "plugins" / "shout-js" / "node_modules" / ".bin"
    python_tools = ROOT / ".cache" / "venv" / "bin"
    env = dict(host_env, CARGO_TARGET_DIR=str(DEV_TARGET), PATH=f"{node_tools}:{python_tools}:{host_env['PATH']}")
    for language, name in [("rust", "new-rust"), ("python", "new_python"), ("js", "new-js")]:
        subprocess.run([str(BINARY), "new", language, name, "--dir", str(tmp_path)], check=True, env=env, timeout=30)
        host = RawHost(None, env, ["dev", str(tmp_path / name)])
        try:
            host.initialize(timeout=900)
            greet = host.request("tools/call", {"name": "greet", "arguments": {"name": language}}, timeout=120)
            assert greet["result"]["content"][0]["text"] == f"Hello, {language}!", (language, greet)
            about = host.request("resources/read", {"uri": f"plugin://{name}/about"})["result"]
            assert "wasm-mcp new" in about["contents"][0]["text"]
            prompt = host.request("prompts/get", {"name": "introduce",
                                                  "arguments": {"speaker": "Ada", "sentences": "3"}})
            assert prompt["result"]["messages"][0]["content"]["text"] == "Introduce Ada in 3 sentences."
            tools = host.request("tools/list")["result"]["tools"]
            schema = next(t for t in tools if t["name"] == "greet")["inputSchema"]
            assert schema["required"] == ["name"]
            assert schema["properties"]["name"]["type"] == "string"
            assert schema["properties"]["name"]["description"] == "Who to greet."
            templates = host.request("resources/templates/list")["result"]["resourceTemplates"]
            assert [t["uriTemplate"] for t in templates] == [f"plugin://{name}/greeting/{{who}}"], language
            read = host.request("resources/read", {"uri": f"plugin://{name}/greeting/Ada%20L"})["result"]
            assert read["contents"][0]["text"] == "Hello, Ada L!", (language, read)
            # The template's skill is served as it is, and an edit is seen without a build.
            skills = host.request("skills/list")["result"]["skills"]
            assert [s["frontmatter"]["name"] for s in skills] == ["getting-started"], language
            assert name in skills[0]["frontmatter"]["description"]
            skill_md = tmp_path / name / "skills" / "getting-started" / "SKILL.md"
            skill_md.write_text(skill_md.read_text() + "\nEdited.\n")
            deadline = time.monotonic() + 60
            while "Edited." not in host.request("resources/read", {"uri": skills[0]["uri"]})["result"]["contents"][0]["text"]:
                assert time.monotonic() < deadline, host.log()[-2000:]
                time.sleep(0.2)
            completed = host.request("completion/complete", {
                "ref": {"type": "ref/prompt", "name": "introduce"},
                "argument": {"name": "speaker", "value": "A"},
            })["result"]["completion"]
            assert completed["values"] == ["Ada", "Alan"], (language, completed)
        finally:
            host.close()


def test_new_writes_a_c_and_a_go_plugin_that_build_and_serve(tmp_path, host_env):
    import subprocess

    from conftest import BINARY

    tools = [BINARY.parent, ROOT / ".cache" / "venv" / "bin", ROOT / ".cache" / "cargo" / "bin"]
    env = dict(host_env, GOTOOLCHAIN="local", GOPROXY="off",
               PATH=":".join(str(t) for t in tools) + ":" + host_env["PATH"])
    served = tmp_path / "served"
    served.mkdir()
    for language in ("c", "go"):
        name = f"new-{language}"
        subprocess.run([str(BINARY), "new", language, name, "--dir", str(tmp_path)], check=True, env=env, timeout=30)
        subprocess.run([str(tmp_path / name / "build.sh")], check=True, env=env, timeout=600)
        shutil.copy(tmp_path / name / f"{name}.wasm", served / f"{name}.wasm")
    host = RawHost(served, env)
    try:
        host.initialize(timeout=120)
        tools = {t["name"]: t for t in host.request("tools/list")["result"]["tools"]}
        # Both offer greet: the later plugin's is qualified by its name.
        assert len(tools) == 2 and "greet" in tools, tools
        for tool in tools:
            who = 'C "quoted" é 🌍'
            greet = host.request("tools/call", {"name": tool, "arguments": {"name": who}}, timeout=120)
            assert greet["result"]["content"][0]["text"] == f"Hello, {who}!", greet
            assert tools[tool]["inputSchema"]["required"] == ["name"]
    finally:
        host.close()


def test_dev_builds_a_c_plugin_with_its_build_script_and_rebuilds_it_after_an_edit(tmp_path, host_env):
    """A folder with a build.sh (here `wasm-mcp new c`'s) is built by it;
    the component it writes beside itself does not set off another build."""
    import subprocess
    import time

    from conftest import BINARY

    tools = [BINARY.parent, ROOT / ".cache" / "venv" / "bin", ROOT / ".cache" / "cargo" / "bin"]
    env = dict(host_env, PATH=":".join(str(t) for t in tools) + ":" + host_env["PATH"])
    subprocess.run([str(BINARY), "new", "c", "dev-c", "--dir", str(tmp_path)], check=True, env=env, timeout=30)
    source = tmp_path / "dev-c"
    host = RawHost(None, env, ["dev", str(source)])

    def greet():
        answer = host.request("tools/call", {"name": "greet", "arguments": {"name": "C"}}, timeout=120)
        return answer["result"]["content"][0]["text"]

    try:
        host.initialize(timeout=600)
        assert greet() == "Hello, C!"
        edit(source / "plugin.c", 'strcpy(greeting, "Hello, ");', 'strcpy(greeting, "Hi, ");')
        # The same tools: no list_changed; the rebuilt plugin answers soon.
        deadline = time.monotonic() + 300
        while (text := greet()) != "Hi, C!":
            assert text == "Hello, C!" and time.monotonic() < deadline, text
            time.sleep(0.5)
    finally:
        log = host.close()
    assert log.count("wasm-mcp dev: building dev-c") == 2, log


def test_a_plugin_whose_first_build_fails_is_listed_as_failing_until_it_builds(tmp_path, host_env):
    source = tmp_path / "shout-dev"
    source.mkdir()
    good = (ROOT / "plugins" / "shout-js" / "app.js").read_text()
    shutil.copy(ROOT / "sdk-js" / "wasm-mcp.js", source / "wasm-mcp.js")
    (source / "app.js").write_text(good.replace("export const tools = plugin.tools;", "export const tools = {{;"))
    tools = ROOT / "plugins" / "shout-js" / "node_modules" / ".bin"
    env = dict(host_env, PATH=f"{tools}:{host_env['PATH']}")
    host = RawHost(None, env, ["dev", str(source)])
    try:
        instructions = host.initialize(timeout=600)["result"]["instructions"]
        assert "plugin shout-dev did not build; it is not served until it builds" in instructions
        assert "componentize-js failed" in instructions, instructions
        assert host.request("tools/list")["result"]["tools"] == []

        (source / "app.js").write_text(good)
        changed = host.read(600)
        assert changed["method"] == "notifications/tools/list_changed"
        shout = host.request("tools/call", {"name": "shout", "arguments": {"text": "dev"}}, timeout=120)
        assert shout["result"]["content"][0]["text"] == "DEV!"
        # Built now: the notice is gone from what a new client is told.
        discovered = host.request("server/discover", {"_meta": modern_meta()}, timeout=30)
        assert "did not build" not in discovered["result"].get("instructions", ""), discovered
    finally:
        host.close()


def test_dev_works_in_a_private_folder_of_a_fresh_random_name(tmp_path, host_env):
    """dev's workspace (where builds land and are served from) is made
    fresh under TMPDIR with a random name and mode 0700, never a name
    another user could predict and prepare (such as one made of the pid),
    and is removed when dev ends."""
    import os
    import stat
    import subprocess

    from conftest import BINARY

    tools = [BINARY.parent, ROOT / ".cache" / "venv" / "bin", ROOT / ".cache" / "cargo" / "bin"]
    temp = tmp_path / "tmp"
    temp.mkdir()
    temp.chmod(0o1777)
    env = dict(host_env, TMPDIR=str(temp), PATH=":".join(str(t) for t in tools) + ":" + host_env["PATH"])
    subprocess.run([str(BINARY), "new", "c", "private-c", "--dir", str(tmp_path)], check=True, env=env, timeout=30)
    host = RawHost(None, env, ["dev", str(tmp_path / "private-c")])
    try:
        host.initialize(timeout=600)
        answer = host.request("tools/call", {"name": "greet", "arguments": {"name": "C"}}, timeout=120)
        assert answer["result"]["content"][0]["text"] == "Hello, C!"
        made = [p for p in temp.iterdir() if p.name.startswith("wasm-mcp-dev-")]
        assert len(made) == 1, list(temp.iterdir())
        info = os.lstat(made[0])
        assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700, oct(info.st_mode)
        assert made[0].name != f"wasm-mcp-dev-{host.proc.pid}"
        assert (made[0] / "plugins" / "private-c.wasm").is_file()
    finally:
        host.close()
    assert not [p for p in temp.iterdir() if p.name.startswith("wasm-mcp-dev-")], list(temp.iterdir())
