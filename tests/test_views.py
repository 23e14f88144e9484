"""Views (MCP Apps, the `io.modelcontextprotocol/ui` extension): a tool
names an interactive HTML view its plugin serves as a `ui://` resource.

The filesystem plugin's `directory_tree` view is rendered for real in
Chromium behind the extension's own host side (tests/ts/apps_view.mjs),
and calls the view-only `preview_file` back. The `views` fixture
(plugins/views-rust) offers a view right or wrong, as its `VIEW_CASE`
says, for the host's checks: a view-only tool is not listed but is
callable; a view named wrongly refuses its plugin, saying why; an
oversized view is refused when read."""

import json
import shutil
import subprocess

from conftest import FIXTURES, PLUGINS, ROOT, RawHost

TS = ROOT / "tests" / "ts"
SCREENSHOTS = ROOT / "target" / "test-screenshots"
UI = "io.modelcontextprotocol/ui"
VIEW_TYPE = "text/html;profile=mcp-app"


def test_a_view_is_rendered_and_calls_a_tool_back(tmp_path, http_host_factory, cache_dir, host_env, artifacts):
    plugins, files = tmp_path / "plugins", tmp_path / "files"
    plugins.mkdir()
    (files / "sub").mkdir(parents=True)
    (files / "a.txt").write_text("hello\n")
    (files / "sub" / "b.txt").write_text("deep\n")
    for name in ("filesystem.wasm", "filesystem.toml"):
        shutil.copy(PLUGINS / name, plugins / name)
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n\n[roots.files]\npath = "{files}"\n\n'
                      '[plugins.filesystem]\nroots = ["files"]\n')
    host = http_host_factory(plugins, ["--config", str(config)], host_env)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    screenshot = SCREENSHOTS / "filesystem-directory-tree.png"
    screenshot.unlink(missing_ok=True)
    run = subprocess.run(["node", str(TS / "apps_view.mjs"), host.url, "/files", str(screenshot)],
                         cwd=TS, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-4000:] + host.log()[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["declared"] == {"mimeTypes": [VIEW_TYPE]}
    assert seen["viewed"] == "directory_tree"
    assert seen["uri"] == "ui://filesystem/tree" and seen["mimeType"] == VIEW_TYPE
    # The tool only the view calls is not listed to the model...
    assert "preview_file" not in seen["tools"] and "read_text_file" in seen["tools"]
    # ...and the view called it, through the client, and showed its answer.
    assert seen["calls"] == ["preview_file"]
    assert seen["preview"] == "deep\n" and seen["status"] == "/files/sub/b.txt"
    assert seen["files"] == ["a.txt", "sub", "b.txt"]
    assert seen["errors"] == []
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    artifacts.append(f"the filesystem plugin's directory_tree view, in Chromium: {screenshot}")


def views_host(tmp_path, cache_dir, host_env, cases: dict[str, dict], server: str = "", config: str = "") -> RawHost:
    """The `views` fixture, once per case (a plugin named after it), each
    asking for its variables (its manifest) and told them by a secret; `server` adds to `[server]`, `config`
    after it."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    text = f'[server]\ncache_dir = "{cache_dir}"\n{server}\n{config}\n'
    for name, variables in cases.items():
        shutil.copy(FIXTURES / "views.wasm", plugins / f"{name}.wasm")
        (plugins / f"{name}.toml").write_text(f"env = {json.dumps(sorted(variables))}\n")
        text += f"[plugins.{name}.secrets]\n"
        for variable, value in variables.items():
            (tmp_path / f"{name}-{variable}").write_text(value)
            text += f'{variable} = {{ file = "{tmp_path / f"{name}-{variable}"}" }}\n'
    path = tmp_path / "config.toml"
    path.write_text(text)
    return RawHost(None, host_env, ["serve", "--plugins", str(plugins), "--config", str(path)])


def test_a_view_only_tool_is_not_listed_but_callable(tmp_path, cache_dir, host_env):
    host = views_host(tmp_path, cache_dir, host_env, {"views": {}}, server="tool_search = true")
    try:
        init = host.initialize()
        assert init["result"]["capabilities"]["extensions"][UI] == {"mimeTypes": [VIEW_TYPE]}
        tools = {t["name"]: t for t in host.request("tools/list")["result"]["tools"]}
        assert "poke" not in tools
        assert tools["show"]["_meta"] == {"ui": {"resourceUri": "ui://views/panel"}}
        # Callable, by whoever may call the plugin's tools.
        poked = host.request("tools/call", {"name": "poke", "arguments": {}})
        assert poked["result"]["content"][0]["text"] == "poked", poked
        # Tool search does not find it either.
        found = host.request("tools/call", {"name": "search_tools", "arguments": {"query": "poke panel"}})
        names = [t["name"] for t in found["result"]["structuredContent"]["tools"]]
        assert "show" in names and "poke" not in names, names
        listed = host.request("resources/list")["result"]["resources"]
        assert listed == [{"uri": "ui://views/panel", "name": "panel", "mimeType": VIEW_TYPE,
                           "_meta": {"ui": {"csp": {"connectDomains": ["https://api.example.com"]},
                                            "prefersBorder": True}}}]
        read = host.request("resources/read", {"uri": "ui://views/panel"})["result"]["contents"][0]
        assert read["mimeType"] == VIEW_TYPE and 'id="panel"' in read["text"]
        assert read["_meta"]["ui"]["csp"] == {"connectDomains": ["https://api.example.com"]}
    finally:
        host.close()


def test_a_view_named_wrongly_refuses_its_plugin_saying_why(tmp_path, cache_dir, host_env):
    reasons = {
        "foreign": "resourceUri ui://filesystem/tree names no resource this plugin lists",
        "notui": "resourceUri https://example.com/panel is not a ui:// URI",
        "wrongtype": "names a resource of type text/html, not text/html;profile=mcp-app",
        "badcsp": 'csp.connectDomains holds "https://a.example; script-src *", not an origin',
    }
    cases = {"foreign": "foreign", "notui": "not-ui", "wrongtype": "wrong-type", "badcsp": "bad-csp"}
    host = views_host(tmp_path, cache_dir, host_env,
                      {name: {"VIEW_CASE": case} for name, case in cases.items()} | {"fine": {}, "later": {}})
    try:
        host.initialize()
        for name, reason in reasons.items():
            log = host.wait_for_log(reason)
            line = next(line for line in log.splitlines() if reason in line)
            assert f"plugin {name} offers a view wrongly" in line, line
        host.wait_for_log('plugin added plugin="fine"')
        host.wait_for_log('plugin added plugin="later"')
        tools = {t["name"]: t for t in host.request("tools/list")["result"]["tools"]}
        assert list(tools) == ["show", "later.show"], list(tools)
        # Two plugins list the same view: the first serves it, and the
        # second's tool shows none rather than the first's.
        assert tools["show"]["_meta"] == {"ui": {"resourceUri": "ui://views/panel"}}
        assert "resourceUri" not in tools["later.show"].get("_meta", {}).get("ui", {}), tools["later.show"]
        uris = [r["uri"] for r in host.request("resources/list")["result"]["resources"]]
        assert uris == ["ui://views/panel"]
    finally:
        host.close()


def test_an_oversized_view_is_refused(tmp_path, cache_dir, host_env):
    host = views_host(tmp_path, cache_dir, host_env, {"big": {"VIEW_CASE": "big", "VIEW_KB": "80"}},
                      config="[plugins.big.limits]\nmax_view_kb = 64\n")
    try:
        host.initialize()
        refused = host.request("resources/read", {"uri": "ui://views/panel"})
        assert "error" in refused, str(refused)[:300]
        message = refused["error"]["message"]
        assert "the view ui://views/panel is 81 KiB, over this plugin's limit of 64 KiB (max_view_kb)" in message
        # The plugin serves on: its tools are still called.
        shown = host.request("tools/call", {"name": "show", "arguments": {}})
        assert shown["result"]["content"][0]["text"] == "shown"
    finally:
        host.close()


def test_the_access_rules_cover_views_and_view_only_tools(tmp_path, cache_dir, http_host_factory, host_env):
    """A view is a resource and a view-only tool a tool: a profile that
    leaves them out offers neither, on every path to them."""
    from test_http_transport import BASE_HEADERS, request
    from conftest import modern_meta

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shutil.copy(FIXTURES / "views.wasm", plugins / "views.wasm")
    config = tmp_path / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n\n'
                      '[profiles.blind]\ninclude = ["views.show"]\npath = "/blind"\n')
    host = http_host_factory(plugins, ["--config", str(config)], host_env)

    def ask(path, method, params):
        name = params.get("name") or params.get("uri")
        headers = dict(BASE_HEADERS, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name})
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": dict(params, _meta=modern_meta())}
        reply = request(host, "POST", body, headers, path=path)
        assert reply.status in (200, 404), reply.raw
        return json.loads(reply.raw) if reply.raw.startswith(b"{") else reply.json()[-1]

    read = {"uri": "ui://views/panel"}
    poke = {"name": "poke", "arguments": {}}
    show = {"name": "show", "arguments": {}}
    assert "result" in ask("/mcp", "resources/read", read)
    assert ask("/mcp", "tools/call", poke)["result"]["content"][0]["text"] == "poked"
    assert ask("/blind", "tools/call", show)["result"]["content"][0]["text"] == "shown"
    for method, params in [("resources/read", read), ("tools/call", poke)]:
        refused = ask("/blind", method, params)
        assert "error" in refused and "result" not in refused, refused
    # The server cards name what each endpoint lists: never a view-only tool.
    for path in ("/mcp", "/blind"):
        card = request(host, "GET", path=f"{path}/server-card")
        assert card.status == 200, card.raw
        assert json.loads(card.raw)["_meta"]["dev.wasm-mcp/offers"]["tools"] == ["show"], card.raw
