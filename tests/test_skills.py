"""Skills (the io.modelcontextprotocol/skills extension): skills shipped
beside a plugin in NAME.skills/ are listed with digests, read as resources,
hot-reloaded with change notifications, and a hostile skills folder is
refused without harming the host. Driven by the real Python `mcp` client
and by raw JSON-RPC over stdio."""

import base64
import hashlib
import os
import shutil
import time

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from conftest import BINARY, PLUGINS, RawHost
from test_hot_reload import notifications_until

REAL_SKILLS = {
    "skill://fetch/long-pages/SKILL.md": "fetch",
    "skill://filesystem/safe-editing/SKILL.md": "fetch",
    "skill://memory/tidy-graph/SKILL.md": "memory",
    "skill://time/time-zones/SKILL.md": "time",
}


class Params(types.RequestParams):
    uri: str | None = None
    cursor: str | None = None


class SkillsRequest(types.Request[Params, str]):
    """A request of the Skills extension, which the SDK does not know."""


async def ask(client: Client, method: str, **params) -> dict:
    return await client.session.send_request(SkillsRequest(method=method, params=Params(**params)), TypeAdapter(dict))


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture
def real_plugins(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name in ("fetch", "filesystem", "memory", "time"):
        shutil.copy(PLUGINS / f"{name}.wasm", folder / f"{name}.wasm")
        shutil.copytree(PLUGINS / f"{name}.skills", folder / f"{name}.skills")
    return folder


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_real_plugins_skills_are_listed_read_and_verified(real_plugins, host_env, mode):
    params = StdioServerParameters(command=str(BINARY), args=["serve", "--plugins", str(real_plugins)], env=host_env)
    async with Client(params, mode=mode, read_timeout_seconds=120) as c:
        if mode == "legacy":
            capabilities = c.server_capabilities.model_dump(by_alias=True)
        else:
            capabilities = (await ask(c, "server/discover"))["capabilities"]
        assert capabilities["extensions"]["io.modelcontextprotocol/skills"] == {"directoryRead": True}
        assert capabilities["resources"]["listChanged"]
        listed = await ask(c, "skills/list")
        skills = listed["skills"]
        assert [s["uri"] for s in skills] == sorted(REAL_SKILLS)
        if mode != "legacy":
            assert listed["cacheScope"] == "public" and "ttlMs" in listed
        resources = {r.uri: r for r in (await c.list_resources()).resources}
        for skill in skills:
            name = skill["uri"].split("/")[-2]
            assert skill["frontmatter"]["name"] == name
            assert len(skill["frontmatter"]["description"]) > 40
            assert skill["uri"] in [f["uri"] for f in skill["resources"]]
            for entry in skill["resources"]:
                contents = (await c.read_resource(entry["uri"])).contents[0]
                data = contents.text.encode() if hasattr(contents, "text") else base64.b64decode(contents.blob)
                assert digest(data) == entry["digest"] and len(data) == entry["size"], entry["uri"]
                assert entry["uri"] in resources, "a skill file is an ordinary resource too"
            manifest = resources[skill["uri"]]
            assert manifest.name == name and manifest.mime_type == "text/markdown"
            assert manifest.description == skill["frontmatter"]["description"]
            got = await ask(c, "skills/get", uri=skill["uri"])
            assert got["skill"] == skill and "nextCursor" not in got
        # The time skill has a folder of references.
        root = await ask(c, "resources/directory/read", uri="skill://time/time-zones")
        children = {r["uri"]: r["mimeType"] for r in root["resources"]}
        assert children == {"skill://time/time-zones/SKILL.md": "text/markdown",
                            "skill://time/time-zones/references": "inode/directory"}
        inner = await ask(c, "resources/directory/read", uri="skill://time/time-zones/references")
        assert [r["name"] for r in inner["resources"]] == ["zones.md"]
        plugin_level = await ask(c, "resources/directory/read", uri="skill://time")
        assert [r["uri"] for r in plugin_level["resources"]] == ["skill://time/time-zones"]
        for method, uri in [("skills/get", "skill://time/nope/SKILL.md"),
                            ("skills/get", "skill://time/time-zones/references/zones.md"),
                            ("resources/directory/read", "skill://time/time-zones/SKILL.md"),
                            ("resources/directory/read", "skill://time/missing"),
                            ("resources/directory/read", "file:///etc")]:
            with pytest.raises(MCPError) as refused:
                await ask(c, method, uri=uri)
            assert refused.value.error.code == -32602, (method, uri)


def skill_text(name: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: The {name} skill\n---\n{body}\n"


def test_editing_a_skill_is_announced_and_served_at_once(tmp_path, host_env):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    skill = folder / "hello.skills" / "greeting"
    (skill / "refs").mkdir(parents=True)
    (skill / "SKILL.md").write_text(skill_text("greeting", "v1"))
    host = RawHost(folder, host_env)
    try:
        host.initialize()
        host.wait_for_log("watching for plugin changes")
        uri = "skill://hello/greeting/SKILL.md"
        first = host.request("skills/get", {"uri": uri})["result"]["skill"]
        assert host.request("resources/subscribe", {"uri": uri})["result"] == {}

        (skill / "SKILL.md").write_text(skill_text("greeting", "v2 is longer"))
        seen = notifications_until(host, {"notifications/resources/list_changed", "notifications/resources/updated"})
        assert {"method": "notifications/resources/updated", "params": {"uri": uri}} in [
            {k: m[k] for k in ("method", "params") if k in m} for m in seen]
        second = host.request("skills/get", {"uri": uri})["result"]["skill"]
        assert second["resources"][0]["digest"] != first["resources"][0]["digest"]
        text = host.request("resources/read", {"uri": uri})["result"]["contents"][0]["text"]
        assert "v2 is longer" in text and digest(text.encode()) == second["resources"][0]["digest"]

        # A file added in a folder within the skill is seen too.
        (skill / "refs" / "more.md").write_text("more")
        notifications_until(host, {"notifications/resources/list_changed"})
        files = [f["uri"] for f in host.request("skills/get", {"uri": uri})["result"]["skill"]["resources"]]
        assert files == [uri, "skill://hello/greeting/refs/more.md"]

        # A new skill, then the whole folder gone.
        (folder / "hello.skills" / "farewell").mkdir()
        (folder / "hello.skills" / "farewell" / "SKILL.md").write_text(skill_text("farewell", "bye"))
        notifications_until(host, {"notifications/resources/list_changed"})
        listed = [s["uri"] for s in host.request("skills/list")["result"]["skills"]]
        assert listed == ["skill://hello/farewell/SKILL.md", uri]
        shutil.rmtree(folder / "hello.skills")
        notifications_until(host, {"notifications/resources/list_changed"})
        assert host.request("skills/list")["result"]["skills"] == []
        assert host.request("skills/get", {"uri": uri})["error"]["code"] == -32602
        # The plugin itself never reloaded: its tools answer as before.
        assert "plugin reloaded" not in host.log()
    finally:
        host.close()


def test_hostile_skill_folders_are_refused_and_harm_nothing(tmp_path, host_env):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    skills = folder / "hello.skills"

    def make(name: str) -> "os.PathLike":
        path = skills / name
        path.mkdir(parents=True)
        (path / "SKILL.md").write_text(skill_text(name, "body"))
        return path

    make("good")
    os.symlink("/etc/passwd", make("link-out") / "passwd")
    os.symlink("/etc", skills / "linked-folder")
    os.mkfifo(make("fifo") / "pipe")
    with open(make("huge") / "big.bin", "wb") as f:
        f.truncate(1 << 30)
    many = make("many")
    for i in range(100_000):
        (many / f"f{i}").touch()
    deep = make("deep")
    for _ in range(20):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (make("wrong-name") / "SKILL.md").write_text(skill_text("other", "x"))
    (make("no-frontmatter") / "SKILL.md").write_text("# just markdown\n")
    (make("bomb") / "SKILL.md").write_text(
        "---\nname: bomb\ndescription: d\na: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: [*b, *b, *b, *b, *b, *b, *b, *b]\n---\n")
    make("Bad_Name")

    started = time.monotonic()
    host = RawHost(folder, host_env)
    try:
        host.initialize()
        log = host.wait_for_log("plugin added")
        listed = [s["uri"] for s in host.request("skills/list")["result"]["skills"]]
        assert listed == ["skill://hello/good/SKILL.md"]
        assert time.monotonic() - started < 60
        for refusal in ["skill link-out refused: passwd is a symlink", "skill linked-folder refused",
                        "skill fifo refused: pipe is a FIFO", "skill huge refused: big.bin has 1073741824 bytes",
                        "skill many refused", "skill deep refused", "skill wrong-name refused",
                        "skill no-frontmatter refused", "skill bomb refused: SKILL.md: its frontmatter is not valid YAML: aliases",
                        "skill Bad_Name refused"]:
            assert refusal in log, refusal
        assert host.rss_kib() < 512 * 1024
        for uri in ["skill://hello/link-out/passwd", "skill://hello/huge/big.bin", "skill://hello/many/f1"]:
            assert host.request("resources/read", {"uri": uri})["error"]["code"] in (-32002, -32602)
        # The plugin still serves; so does the good skill.
        called = host.request("tools/call", {"name": "greet", "arguments": {"name": "x"}})
        assert called["result"]["content"][0]["text"] == "Hello, x!"
        assert "body" in host.request("resources/read", {"uri": "skill://hello/good/SKILL.md"})["result"]["contents"][0]["text"]

        # A FIFO appearing in a served skill takes that skill out, live.
        os.mkfifo(skills / "good" / "late-pipe")
        notifications_until(host, {"notifications/resources/list_changed"})
        assert host.request("skills/list")["result"]["skills"] == []
        assert host.request("ping")["result"] == {}
    finally:
        host.close()


def test_plugins_in_every_language_and_plain_components_ship_skills_alike(tmp_path, host_env):
    from conftest import FIXTURES

    folder = tmp_path / "plugins"
    folder.mkdir()
    sources = {"wordcount": PLUGINS / "wordcount.wasm", "shout": PLUGINS / "shout.wasm",
               "lines": PLUGINS / "lines.wasm", "stats": PLUGINS / "stats.wasm", "plain": FIXTURES / "plain.wasm"}
    for name, source in sources.items():
        shutil.copy(source, folder / f"{name}.wasm")
        skill = folder / f"{name}.skills" / "how-to"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(skill_text("how-to", f"Use {name} well."))
    host = RawHost(folder, host_env)
    try:
        host.initialize()
        listed = [s["uri"] for s in host.request("skills/list")["result"]["skills"]]
        assert listed == [f"skill://{name}/how-to/SKILL.md" for name in sorted(sources)]
        for name in sources:
            text = host.request("resources/read", {"uri": f"skill://{name}/how-to/SKILL.md"})["result"]
            assert f"Use {name} well." in text["contents"][0]["text"]
    finally:
        host.close()


def test_inspect_shows_a_plugins_skills_and_why_one_is_refused(tmp_path, host_env):
    import subprocess

    shutil.copy(PLUGINS / "time.wasm", tmp_path / "time.wasm")
    shutil.copytree(PLUGINS / "time.skills", tmp_path / "time.skills")
    (tmp_path / "time.skills" / "broken").mkdir()
    shown = subprocess.run([str(BINARY), "inspect", str(tmp_path / "time.wasm")], env=host_env,
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert "skill     skill://time/time-zones/SKILL.md" in shown.stdout and "(2 files," in shown.stdout
    assert "refused   skill broken refused: it has no SKILL.md" in shown.stdout
