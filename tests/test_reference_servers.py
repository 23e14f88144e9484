"""The real plugins (plugins/filesystem-rust, fetch-rust, time-rust,
memory-python) side by side with the reference servers they stand in for
(`@modelcontextprotocol/server-filesystem` and `server-memory` from npm,
`mcp-server-fetch` and `mcp-server-time` from PyPI, all installed by
scripts/test): the same calls over stdio with the real Python `mcp`
client, on the same fixture folder or the same loopback site, and the
results compared after normalising only what must differ (the served
folder's host path). Every difference that remains is listed here with
its reason."""

import datetime
import http.server
import json
import os
import shutil
import sys
import threading
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from conftest import BINARY, PLUGINS, ROOT

pytestmark = pytest.mark.anyio

NPM_SERVERS = ROOT / "tests" / "reference" / "node_modules" / "@modelcontextprotocol"
PYTHON_BIN = Path(sys.executable).parent
LOCAL_ZONE = "Europe/Paris"


def reference(command: str, *args: str, env: dict | None = None) -> Client:
    params = StdioServerParameters(command=command, args=list(args), env=dict(os.environ, **(env or {})))
    return Client(params, mode="legacy", read_timeout_seconds=120)


def node_server(package: str, *args: str, env: dict | None = None) -> Client:
    script = NPM_SERVERS / package / "dist" / "index.js"
    assert script.is_file(), f"{script} is missing: scripts/test installs it"
    return reference(shutil.which("node"), str(script), *args, env=env)


def ours(tmp_path: Path, cache_dir: Path, plugin: str, config: str = "", env: dict | None = None) -> Client:
    """The host serving one of the real plugins (with its manifest), under `config`."""
    folder = tmp_path / "plugins"
    folder.mkdir(exist_ok=True)
    shutil.copy(PLUGINS / f"{plugin}.wasm", folder / f"{plugin}.wasm")
    shutil.copy(PLUGINS / f"{plugin}.toml", folder / f"{plugin}.toml")
    path = tmp_path / "config.toml"
    path.write_text(f'[server]\ncache_dir = "{cache_dir}"\n\n{config}')
    params = StdioServerParameters(
        command=str(BINARY),
        args=["serve", "--plugins", str(folder), "--config", str(path)],
        env=dict(os.environ, RUST_LOG="warn", **(env or {})),
    )
    return Client(params, mode="legacy", read_timeout_seconds=120)


def described(tool) -> dict:
    """What a tool's listing promises, without what only says how it is run."""
    entry = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    entry.pop("execution", None)  # taskSupport "forbidden" either way (our host omits the default)
    return entry


async def outcome(client: Client, tool: str, arguments: dict) -> dict:
    """A call's result as plain data, or the protocol error it ended in."""
    try:
        result = await client.call_tool(tool, arguments)
    except MCPError as e:
        return {"protocol_error": e.error.code}
    return {
        "content": [c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in result.content],
        "structured": result.structured_content,
        "is_error": bool(result.is_error),
    }


# --- time ---------------------------------------------------------------------

TIME_CONFIG = '[plugins.time]\nenv = ["LOCAL_TIMEZONE"]\n'

ZONES = ["UTC", "Asia/Kathmandu", "America/St_Johns", "Australia/Lord_Howe", "Europe/Kyiv",
         "US/Eastern", "Etc/GMT+5", "Pacific/Chatham", "America/Sao_Paulo"]

CONVERSIONS = [
    ("Europe/Paris", "09:05", "Asia/Kathmandu"),
    ("America/New_York", "23:59", "Asia/Tokyo"),
    ("Asia/Tokyo", "0:00", "America/Los_Angeles"),
    ("Australia/Lord_Howe", "12:30", "Pacific/Chatham"),
    ("UTC", "7:5", "America/St_Johns"),
    ("Asia/Kolkata", "12:00", "Asia/Kathmandu"),
    ("Europe/London", "12:00", "Europe/London"),
]

# Calls both refuse, with the same text.
TIME_FAILURES = [
    ("get_current_time", {"timezone": "Foo/Bar"}),
    ("get_current_time", {"timezone": "europe/paris"}),  # an exact key only
    ("get_current_time", {"timezone": ""}),
    ("convert_time", {"source_timezone": "UTC", "time": "25:00", "target_timezone": "UTC"}),
    ("convert_time", {"source_timezone": "UTC", "time": "12:60", "target_timezone": "UTC"}),
    ("convert_time", {"source_timezone": "UTC", "time": "noon", "target_timezone": "UTC"}),
    ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Mars/Olympus"}),
    ("convert_time", {"source_timezone": "", "time": "12:00", "target_timezone": "UTC"}),
]


def same_moment(ours_: dict, theirs: dict) -> None:
    """Two `get_current_time` results, taken moments apart."""
    a = datetime.datetime.fromisoformat(ours_["datetime"])
    b = datetime.datetime.fromisoformat(theirs["datetime"])
    assert abs((a - b).total_seconds()) < 60, (ours_, theirs)
    assert a.utcoffset() == b.utcoffset(), (ours_, theirs)
    assert {k: v for k, v in ours_.items() if k != "datetime"} == \
        {k: v for k, v in theirs.items() if k != "datetime"}


async def test_time_matches_mcp_server_time(tmp_path, cache_dir):
    mine = ours(tmp_path, cache_dir, "time", TIME_CONFIG, env={"LOCAL_TIMEZONE": LOCAL_ZONE})
    theirs = reference(str(PYTHON_BIN / "mcp-server-time"), "--local-timezone", LOCAL_ZONE)
    async with mine as a, theirs as b:
        listed_a = {t.name: described(t) for t in (await a.list_tools()).tools}
        listed_b = {t.name: described(t) for t in (await b.list_tools()).tools}
        assert listed_a == listed_b

        for zone in ZONES:
            got_a = await outcome(a, "get_current_time", {"timezone": zone})
            got_b = await outcome(b, "get_current_time", {"timezone": zone})
            assert not got_a["is_error"] and not got_b["is_error"], (zone, got_a, got_b)
            same_moment(got_a["structured"], got_b["structured"])
            for got in (got_a, got_b):  # the text is the same JSON, indented by two
                shown = got["content"][0]["text"]
                assert json.loads(shown) == got["structured"] and shown == json.dumps(json.loads(shown), indent=2)

        for source, time, target in CONVERSIONS:
            arguments = {"source_timezone": source, "time": time, "target_timezone": target}
            got_a = await outcome(a, "convert_time", arguments)
            got_b = await outcome(b, "convert_time", arguments)
            assert got_a == got_b, arguments

        for tool, arguments in TIME_FAILURES:
            got_a = await outcome(a, tool, arguments)
            got_b = await outcome(b, tool, arguments)
            assert got_a["is_error"] and got_a == got_b, (arguments, got_a, got_b)

        # Deliberate differences:
        # - A key shaped like a path: the reference passes zoneinfo's own
        #   error on (which names its TZPATH); ours has no files to look in,
        #   so every unknown key gets the one message.
        path = await outcome(a, "get_current_time", {"timezone": "../etc/passwd"})
        assert path["is_error"] and "No time zone found with key ../etc/passwd" in path["content"][0]["text"]
        # - A missing argument is a tool error in both (2025-11-25), each in
        #   its own validator's words: pydantic's, the host's schema check.
        missing = await outcome(a, "get_current_time", {})
        assert missing["is_error"] and '"timezone" is a required property' in missing["content"][0]["text"], missing
        assert (await outcome(b, "get_current_time", {}))["is_error"]


async def test_time_without_a_granted_local_zone_calls_utc_local(tmp_path, cache_dir):
    async with ours(tmp_path, cache_dir, "time") as a:
        tool = next(t for t in (await a.list_tools()).tools if t.name == "get_current_time")
        assert "Use 'UTC' as local timezone" in tool.input_schema["properties"]["timezone"]["description"]


# --- memory -------------------------------------------------------------------

MEMORY_CALLS = [
    ("read_graph", {}),
    ("create_entities", {"entities": [
        {"name": "Ann", "entityType": "person", "observations": ["likes tea", "speaks Dutch"]},
        {"name": "Bob", "entityType": "person", "observations": []},
        {"name": "Zoë", "entityType": "Café owner", "observations": ["line\nbreak", "quote \" and \\"]},
    ]}),
    ("create_entities", {"entities": [
        {"name": "Ann", "entityType": "robot", "observations": ["ignored: Ann exists"]},
        {"name": "Acme", "entityType": "company", "observations": ["makes anvils"]},
    ]}),
    ("create_relations", {"relations": [
        {"from": "Ann", "to": "Acme", "relationType": "works at"},
        {"from": "Bob", "to": "Ann", "relationType": "knows"},
        {"from": "Zoë", "to": "Nobody", "relationType": "knows"},
    ]}),
    ("create_relations", {"relations": [
        {"from": "Ann", "to": "Acme", "relationType": "works at"},
        {"from": "Acme", "to": "Bob", "relationType": "employs"},
    ]}),
    ("add_observations", {"observations": [
        {"entityName": "Bob", "contents": ["plays chess", "plays chess"]},
        {"entityName": "Ann", "contents": ["likes tea", "runs"]},
    ]}),
    ("add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}),
    ("search_nodes", {"query": "TEA"}),
    ("search_nodes", {"query": "café"}),
    ("search_nodes", {"query": "nothing matches this"}),
    ("open_nodes", {"names": ["Bob", "Nobody"]}),
    ("delete_observations", {"deletions": [
        {"entityName": "Ann", "observations": ["speaks Dutch", "never there"]},
        {"entityName": "Nobody", "observations": ["x"]},
    ]}),
    ("delete_relations", {"relations": [{"from": "Bob", "to": "Ann", "relationType": "knows"}]}),
    ("delete_entities", {"entityNames": ["Acme", "Nobody"]}),
    ("read_graph", {}),
]


def memory_config(root: Path, mode: str = "read-write", keyvalue: bool = False) -> str:
    return (
        f'[roots.memory]\npath = "{root}"\nmode = "{mode}"\n\n'
        f'[plugins.memory]\nroots = ["memory"]\n{"keyvalue = true" if keyvalue else ""}\n\n'
        "[plugins.memory.limits]\nmax_concurrent_calls = 1\n"
    )


@pytest.mark.parametrize("store", [False, True], ids=["file", "store"])
async def test_memory_matches_server_memory(tmp_path, cache_dir, store):
    """The same calls, the same answers: with the graph in the root's file
    as the reference keeps it, and in the host's key-value store (granted
    as well as the root: the store is used, the root left alone)."""
    our_root, their_root = tmp_path / "ours", tmp_path / "theirs"
    our_root.mkdir()
    their_root.mkdir()
    state = tmp_path / "state"
    mine = ours(tmp_path, cache_dir, "memory", memory_config(our_root, keyvalue=store),
                env={"XDG_STATE_HOME": str(state)})
    theirs = node_server("server-memory", env={"MEMORY_FILE_PATH": str(their_root / "memory.jsonl")})
    async with mine as a, theirs as b:
        listed_a = {t.name: described(t) for t in (await a.list_tools()).tools}
        listed_b = {t.name: described(t) for t in (await b.list_tools()).tools}
        assert listed_a == listed_b

        for tool, arguments in MEMORY_CALLS:
            got_a = await outcome(a, tool, arguments)
            got_b = await outcome(b, tool, arguments)
            assert got_a == got_b, (tool, arguments)

        # The graph as a resource, and as the file each keeps.
        uri = "memory://knowledge-graph"
        assert [r.uri for r in (await a.list_resources()).resources] == [uri]
        read_a = (await a.read_resource(uri)).contents[0]
        read_b = (await b.read_resource(uri)).contents[0]
        assert (read_a.text, read_a.mime_type) == (read_b.text, read_b.mime_type)
        if store:
            assert list(our_root.iterdir()) == []
            assert (state / "wasm-mcp" / "keyvalue.db").is_file()
        else:
            assert (our_root / "memory.jsonl").read_bytes() == (their_root / "memory.jsonl").read_bytes()
            assert sorted(p.name for p in our_root.iterdir()) == ["memory.jsonl"]  # no temporary file left

        # Arguments that do not fit the schema are a tool error in both, each
        # in its own words: zod's in the reference; in ours the host's check
        # against the tool's (draft-07) schema, naming the argument.
        for tool, arguments, named in [("create_entities", {"entities": [{"name": "Ann"}]}, "/entities/0"),
                                       ("open_nodes", {"names": "Ann"}, "/names"),
                                       ("search_nodes", {"query": 7}, "/query")]:
            got_a = await outcome(a, tool, arguments)
            got_b = await outcome(b, tool, arguments)
            assert got_a["is_error"] and got_b["is_error"], (tool, got_a, got_b)
            assert named in got_a["content"][0]["text"], (tool, got_a)


async def test_memory_in_a_read_only_root_refuses_changes_clearly(tmp_path, cache_dir):
    root = tmp_path / "memory"
    root.mkdir()
    (root / "memory.jsonl").write_text('{"type":"entity","name":"Ann","entityType":"person","observations":[]}')
    async with ours(tmp_path, cache_dir, "memory", memory_config(root, "read-only")) as a:
        graph = await outcome(a, "read_graph", {})
        assert [e["name"] for e in graph["structured"]["entities"]] == ["Ann"]
        refused = await outcome(a, "create_entities", {"entities": [
            {"name": "Bob", "entityType": "person", "observations": []}]})
        assert refused["is_error"], refused
        assert "needs its root granted read-write" in refused["content"][0]["text"]
    assert sorted(p.name for p in root.iterdir()) == ["memory.jsonl"]


async def test_memory_reports_a_broken_file_instead_of_losing_it(tmp_path, cache_dir):
    root = tmp_path / "memory"
    root.mkdir()
    broken = '{"type":"entity","name":"Ann","entityType":"person","observations":[]}\n{not json\n'
    (root / "memory.jsonl").write_text(broken)
    async with ours(tmp_path, cache_dir, "memory", memory_config(root)) as a:
        got = await outcome(a, "create_entities", {"entities": [
            {"name": "Bob", "entityType": "person", "observations": []}]})
        assert got["is_error"] and "line 2 is not JSON" in got["content"][0]["text"], got
    assert (root / "memory.jsonl").read_text() == broken


# --- filesystem -----------------------------------------------------------------

def fixture_tree(top: Path) -> None:
    """The same files for both servers: `top/files` is served, `top/outside`
    and `top/files-evil` must stay out of reach."""
    files = top / "files"
    (files / "sub" / "deep").mkdir(parents=True)
    (files / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (files / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree")
    (files / "indented.py").write_text("def f():\n    x = 1\n    return x\n")
    for name in ("Zeta.txt", "alpha2.txt", "_under.txt", "10.txt", "café.txt", ".hidden"):
        (files / name).write_text(name * 3)
    (files / "big.bin").write_bytes(bytes(range(256)) * 6)
    (files / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    (files / "sound.wav").write_bytes(b"RIFF" + b"\x01" * 60)
    (files / "sub" / "y.txt").write_text("why\n")
    (files / "sub" / "notes.md").write_text("# notes\n")
    (files / "sub" / "deep" / "x.json").write_text('{"x": 1}\n')
    (top / "outside").mkdir()
    (top / "outside" / "secret.txt").write_text("the secret")
    (top / "files-evil").mkdir()
    (top / "files-evil" / "secret.txt").write_text("the evil secret")


def escape_links(top: Path) -> None:
    """Symlinks out of the served folder (the reference's past escape)."""
    os.symlink(top / "outside" / "secret.txt", top / "files" / "link-out")
    os.symlink(top / "outside", top / "files" / "dir-link")


def fs_calls(p: str) -> list:
    """The calls made of both, with paths under `p` (the served folder)."""
    return [
        ("list_allowed_directories", {}),
        ("read_text_file", {"path": f"{p}/a.txt"}),
        ("read_text_file", {"path": "a.txt"}),
        ("read_text_file", {"path": f"{p}/a.txt", "head": 2}),
        ("read_text_file", {"path": f"{p}/a.txt", "tail": 2}),
        ("read_text_file", {"path": f"{p}/crlf.txt", "tail": 2}),
        ("read_text_file", {"path": f"{p}/crlf.txt", "head": 1}),
        ("read_text_file", {"path": f"{p}/a.txt", "head": 1, "tail": 1}),
        ("read_file", {"path": f"{p}/sub/y.txt"}),
        ("read_text_file", {"path": f"{p}/missing.txt"}),
        ("read_text_file", {"path": f"{p}/sub"}),
        ("read_multiple_files", {"paths": [f"{p}/a.txt", f"{p}/missing.txt", f"{p}/sub/y.txt"]}),
        ("read_media_file", {"path": f"{p}/pic.png"}),
        ("read_media_file", {"path": f"{p}/sound.wav"}),
        ("read_media_file", {"path": f"{p}/big.bin"}),
        ("list_directory", {"path": p}),
        ("list_directory", {"path": f"{p}/sub"}),
        ("list_directory_with_sizes", {"path": p}),
        ("list_directory_with_sizes", {"path": p, "sortBy": "size"}),
        ("directory_tree", {"path": p}),
        ("directory_tree", {"path": p, "excludePatterns": ["deep", "*.txt"]}),
        ("search_files", {"path": p, "pattern": "**/*.txt"}),
        ("search_files", {"path": p, "pattern": "*.md"}),
        ("search_files", {"path": p, "pattern": "**/*.md", "excludePatterns": ["sub/**"]}),
        ("search_files", {"path": p, "pattern": "nothing-*"}),
        ("write_file", {"path": f"{p}/new.txt", "content": "fresh\n"}),
        ("write_file", {"path": f"{p}/a.txt", "content": "alpha\nbeta\ngamma\ndelta\n"}),
        ("read_text_file", {"path": f"{p}/a.txt"}),
        ("edit_file", {"path": f"{p}/a.txt", "edits": [{"oldText": "beta", "newText": "BETA"}], "dryRun": True}),
        ("edit_file", {"path": f"{p}/a.txt", "edits": [{"oldText": "beta", "newText": "BETA"},
                                                      {"oldText": "delta\n", "newText": ""}]}),
        ("edit_file", {"path": f"{p}/indented.py", "edits": [{"oldText": "x = 1\nreturn x", "newText": "y = 2\nreturn y"}]}),
        ("edit_file", {"path": f"{p}/a.txt", "edits": [{"oldText": "not there", "newText": "x"}]}),
        ("read_text_file", {"path": f"{p}/indented.py"}),
        ("create_directory", {"path": f"{p}/made/inner"}),
        ("create_directory", {"path": f"{p}/made"}),
        ("move_file", {"source": f"{p}/new.txt", "destination": f"{p}/made/moved.txt"}),
        ("move_file", {"source": f"{p}/a.txt", "destination": f"{p}/made/moved.txt"}),
        ("list_directory", {"path": f"{p}/made"}),
        # Outside the folder, by `..` and by a sibling sharing its prefix.
        ("read_text_file", {"path": f"{p}/../outside/secret.txt"}),
        ("read_text_file", {"path": f"{p}-evil/secret.txt"}),
        ("write_file", {"path": f"{p}-evil/planted.txt", "content": "x"}),
        ("list_directory", {"path": f"{p}/.."}),
    ]


def normalised(value, prefix: str):
    """`value` with the reference's folder written as ours."""
    return json.loads(json.dumps(value).replace(prefix, ""))


async def test_filesystem_matches_server_filesystem(tmp_path, cache_dir):
    ours_top, theirs_top = tmp_path / "ours", tmp_path / "theirs"
    for top in (ours_top, theirs_top):
        top.mkdir()
        fixture_tree(top)
    config = (f'[roots.files]\npath = "{ours_top / "files"}"\nmode = "read-write"\n\n'
              '[plugins.filesystem]\nroots = ["files"]\n')
    mine = ours(tmp_path, cache_dir, "filesystem", config)
    theirs = node_server("server-filesystem", str(theirs_top / "files"))
    async with mine as a, theirs as b:
        listed_a = {t.name: described(t) for t in (await a.list_tools()).tools}
        listed_b = {t.name: described(t) for t in (await b.list_tools()).tools}
        # Ours names an interactive view of the tree (MCP Apps), which a
        # client that renders views shows (tests/test_views.py).
        assert listed_a["directory_tree"].pop("_meta") == {"ui": {"resourceUri": "ui://filesystem/tree"}}
        assert listed_a == listed_b

        differences = {}
        for (tool, args_a), (_, args_b) in zip(fs_calls("/files"), fs_calls(str(theirs_top / "files"))):
            got_a = await outcome(a, tool, args_a)
            got_b = normalised(await outcome(b, tool, args_b), str(theirs_top))
            if got_a != got_b:
                differences[f"{tool} {json.dumps(args_a)}"] = (got_a, got_b)
        # Deliberate differences, each for its reason:
        # - paths outside the folder: both refuse, but the reference names
        #   its folder's host path where ours names the folder as the plugin
        #   sees it, so only the refusal is compared.
        for key in list(differences):
            got_a, got_b = differences[key]
            if "evil" in key or "/.." in key:
                assert got_a["is_error"] and got_b["is_error"], key
                assert "Access denied - path outside allowed directories" in got_a["content"][0]["text"], key
                del differences[key]
        assert differences == {}, json.dumps(differences, indent=1)[:6000]

        # The symlinks out of the folder (the reference's past escape): the
        # reference refuses them by resolving them itself; in ours the
        # sandbox does, so the wording differs, and nothing leaks. (Listed
        # with sizes, such a link shows its target's size in the reference
        # and 0 B in ours, which cannot look outside.)
        for top in (ours_top, theirs_top):
            escape_links(top)
        for link in ("link-out", "dir-link/secret.txt"):
            got_a = await outcome(a, "read_text_file", {"path": f"/files/{link}"})
            got_b = await outcome(b, "read_text_file", {"path": str(theirs_top / "files" / link)})
            assert got_a["is_error"] and got_b["is_error"], (link, got_a, got_b)
            assert "secret" not in json.dumps(got_a["content"]).replace(link, "")
        planted = await outcome(a, "write_file", {"path": "/files/dir-link/planted.txt", "content": "x"})
        assert planted["is_error"]
        assert not (ours_top / "outside" / "planted.txt").exists()

        # File info: the same fields; the dates are each file's own, and
        # the permissions say what the grant allows (the sandbox hides the
        # mode bits), so only size and kind are compared.
        info_a = (await outcome(a, "get_file_info", {"path": "/files/sub/y.txt"}))["content"][0]["text"]
        info_b = (await outcome(b, "get_file_info", {"path": str(theirs_top / "files/sub/y.txt")}))["content"][0]["text"]
        fields_a = dict(line.split(": ", 1) for line in info_a.splitlines())
        fields_b = dict(line.split(": ", 1) for line in info_b.splitlines())
        assert list(fields_a) == list(fields_b)
        for key in ("size", "isDirectory", "isFile"):
            assert fields_a[key] == fields_b[key], key
        assert fields_a["permissions"] == "644"

    # Both left the same files behind.
    def tree(top: Path) -> dict:
        return {str(p.relative_to(top)): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
                for p in sorted(top.rglob("*")) if "dir-link" not in p.parts}
    assert tree(ours_top / "files") == tree(theirs_top / "files")


async def test_filesystem_in_a_read_only_root_refuses_changes_clearly(tmp_path, cache_dir):
    top = tmp_path / "top"
    top.mkdir()
    fixture_tree(top)
    escape_links(top)
    config = (f'[roots.files]\npath = "{top / "files"}"\n\n'
              '[plugins.filesystem]\nroots = ["files"]\n')
    async with ours(tmp_path, cache_dir, "filesystem", config) as a:
        read = await outcome(a, "read_text_file", {"path": "/files/a.txt"})
        assert read["content"][0]["text"] == "alpha\nbeta\ngamma\n"
        for tool, arguments in [
            ("write_file", {"path": "/files/a.txt", "content": "x"}),
            ("edit_file", {"path": "/files/a.txt", "edits": [{"oldText": "beta", "newText": "x"}]}),
            ("create_directory", {"path": "/files/new"}),
            ("move_file", {"source": "/files/a.txt", "destination": "/files/b.txt"}),
        ]:
            got = await outcome(a, tool, arguments)
            assert got["is_error"], (tool, got)
            assert "/files is granted read-only" in got["content"][0]["text"], (tool, got)
        dry = await outcome(a, "edit_file", {"path": "/files/a.txt", "dryRun": True,
                                             "edits": [{"oldText": "beta", "newText": "x"}]})
        assert not dry["is_error"] and "+x" in dry["content"][0]["text"]
    assert (top / "files" / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
    assert sorted(p.name for p in (top / "files").iterdir()) == sorted(
        ["a.txt", "crlf.txt", "indented.py", "Zeta.txt", "alpha2.txt", "_under.txt", "10.txt", "café.txt",
         ".hidden", "big.bin", "pic.png", "sound.wav", "sub", "link-out", "dir-link"])


# --- fetch --------------------------------------------------------------------

PAGE = """<!DOCTYPE html>
<html><head><title>Sandboxes</title><script>track()</script><style>p{}</style></head>
<body><article>
<h1>Why sandboxes</h1>
<p>A <b>plugin</b> that is <em>sandboxed</em> cannot read your <a href="/secrets">secrets</a>.</p>
<h2>What it may do</h2>
<ul><li>read granted folders</li><li>call granted hosts</li></ul>
<p>Everything else is denied, by construction.</p>
</article></body></html>"""

LONG = "".join(f"line {i}: {'é' * (i % 7)}{'x' * (i % 13)}\n" for i in range(400))


class Site(http.server.BaseHTTPRequestHandler):
    """A small site on loopback: pages, a robots.txt, redirects, errors."""

    routes = {
        "/robots.txt": (200, "text/plain", "User-agent: *\nDisallow: /private\n# a comment\nAllow: /private/open\n"),
        "/page.html": (200, "text/html; charset=utf-8", PAGE),
        "/long.txt": (200, "text/plain; charset=utf-8", LONG),
        "/data.json": (200, "application/json", '{"a": [1, 2, 3]}'),
        "/untyped": (200, "", "no content type here"),
        "/private/x": (200, "text/plain", "private"),
        "/private/open/y": (200, "text/plain", "open after all"),
        "/missing": (404, "text/plain", "nope"),
        "/broken": (500, "text/plain", "boom"),
    }
    redirects = {"/moved": "/long.txt", "/sneaky": "/private/x", "/loop": "/loop"}

    def do_GET(self):  # noqa: N802 (the http.server name)
        if self.path in self.redirects:
            self.send_response(302)
            self.send_header("Location", self.redirects[self.path])
            self.end_headers()
            return
        status, kind, body = self.routes.get(self.path, (404, "text/plain", "not found"))
        data = body.encode()
        self.send_response(status)
        if kind:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


FETCH_CONFIG = '[plugins.fetch]\nhosts = ["127.0.0.1"]\n'


async def test_fetch_matches_mcp_server_fetch(tmp_path, cache_dir, site):
    mine = ours(tmp_path, cache_dir, "fetch", FETCH_CONFIG)
    theirs = reference(str(PYTHON_BIN / "mcp-server-fetch"), "--allow-private-ips")
    calls = [
        {"url": f"{site}/long.txt"},
        {"url": f"{site}/long.txt", "max_length": 300},
        {"url": f"{site}/long.txt", "max_length": 300, "start_index": 300},
        {"url": f"{site}/long.txt", "start_index": 999999},
        {"url": f"{site}/long.txt", "max_length": 20000},
        {"url": f"{site}/data.json"},
        {"url": f"{site}/page.html", "raw": True},
        {"url": f"{site}/moved", "max_length": 50},
        {"url": f"{site}/long.txt", "max_length": 10, "unknown": "ignored by both"},
        {"url": f"{site}/private/x"},
        {"url": f"{site}/private/open/y"},
        {"url": f"{site}/sneaky"},
        {"url": f"{site}/missing"},
        {"url": f"{site}/broken"},
        {"url": site},
    ]
    async with mine as a, theirs as b:
        listed_a = {t.name: described(t) for t in (await a.list_tools()).tools}
        listed_b = {t.name: described(t) for t in (await b.list_tools()).tools}
        assert listed_a == listed_b
        assert [p.name for p in (await a.list_prompts()).prompts] == ["fetch"]

        for arguments in calls:
            got_a = await outcome(a, "fetch", arguments)
            got_b = await outcome(b, "fetch", arguments)
            assert got_a == got_b, arguments

        # HTML to Markdown: the reference extracts the article with
        # readability (which drops a first heading that repeats the title,
        # when it runs readability.js) and converts it with markdownify;
        # ours converts the page's body
        # with htmd, leaving scripts, styles and the head out. The text a
        # model reads is the same but for that heading; so what is compared
        # is the content, line by line.
        page_a = (await outcome(a, "fetch", {"url": f"{site}/page.html"}))["content"][0]["text"]
        page_b = (await outcome(b, "fetch", {"url": f"{site}/page.html"}))["content"][0]["text"]
        for text in (page_a, page_b):
            assert text.startswith(f"Contents of {site}/page.html:\n"), text
            for piece in ("## What it may do", "A **plugin** that is *sandboxed* cannot read your [secrets](/secrets).",
                          "* read granted folders\n* call granted hosts",
                          "Everything else is denied, by construction."):
                assert piece in text, (piece, text)
            assert "track()" not in text and "p{}" not in text
        assert "# Why sandboxes" in page_a
        def lines(text: str) -> list[str]:
            return [line for line in text.splitlines() if line.strip() and line != "# Why sandboxes"]
        assert lines(page_a) == lines(page_b)

        # The prompt: the page for a user (robots.txt not consulted).
        prompt_a = await a.get_prompt("fetch", {"url": f"{site}/private/x"})
        prompt_b = await b.get_prompt("fetch", {"url": f"{site}/private/x"})
        assert prompt_a.messages[0].content.text == prompt_b.messages[0].content.text

        # Deliberate differences:
        # - a host the plugin is not granted is refused by the sandbox (the
        #   reference, started with --allow-private-ips, would fetch it);
        refused = await outcome(a, "fetch", {"url": site.replace("127.0.0.1", "localhost") + "/long.txt"})
        assert refused["is_error"], refused
        assert "does not grant this plugin localhost" in refused["content"][0]["text"]
        # - a redirect loop and a refused connection fail in both, each
        #   naming the failure in its own HTTP library's words;
        for url in (f"{site}/loop", "http://127.0.0.1:9/"):
            got_a = await outcome(a, "fetch", {"url": url})
            got_b = await outcome(b, "fetch", {"url": url})
            assert got_a["is_error"] and got_b["is_error"], (url, got_a, got_b)
        # - arguments out of range are refused by both, each in its own
        #   words, as tool errors (2025-11-25).
        def refused(got: dict) -> bool:
            return bool(got.get("is_error"))
        for arguments in ({"url": site, "max_length": 0}, {"url": site, "start_index": -1},
                          {"url": site, "max_length": "10"}, {"url": site, "raw": "yes"},
                          {"url": "not a url"}):
            got_a = await outcome(a, "fetch", arguments)
            got_b = await outcome(b, "fetch", arguments)
            assert refused(got_a) and refused(got_b), (arguments, got_a, got_b)
