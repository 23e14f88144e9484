"""Each user's plugin data is theirs, against the real binary: tokens from a
loopback identity provider name each caller's tenant (`[tenancy] claim`);
the real `memory` plugin keeps its graph in the key-value store and the
real `filesystem` plugin works in a root per tenant; a warm Python instance
never serves another tenant; hostile tenant names stay inside the root's
parent; and `wasm-mcp tenant` lists, exports and deletes a tenant's data."""

import json
import os
import shutil
import subprocess
import tarfile
import time

import pytest

from conftest import BINARY, FIXTURES, PLUGINS, RawHost
from identity import IdentityProvider
from test_http_transport import modern


@pytest.fixture
def idp():
    provider = IdentityProvider()
    yield provider
    provider.close()


def plugin_folder(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    for name in ("memory", "filesystem"):
        shutil.copy(PLUGINS / f"{name}.wasm", folder)
        shutil.copy(PLUGINS / f"{name}.toml", folder)
    shutil.copy(FIXTURES / "ask.wasm", folder)
    return folder


def write_config(tmp_path, cache, files, tenancy="", auth=""):
    config = tmp_path / "tenancy.toml"
    config.write_text(
        f'[server]\ncache_dir = "{cache}"\n\n{tenancy}\n'
        f'[state]\nkeyvalue_store = "{tmp_path / "keyvalue.db"}"\n\n'
        f'[audit]\nfile = "{tmp_path / "audit.jsonl"}"\n\n'
        f'[roots.files]\npath = "{files}/{{tenant}}"\nmode = "read-write"\n\n'
        '[plugins.filesystem]\nroots = ["files"]\n\n'
        "[plugins.memory]\nkeyvalue = true\n\n"
        "[plugins.ask.limits]\ncalls_per_instance = 100\nmax_concurrent_calls = 4\n"
        f"{auth}"
    )
    return config


def auth_section(idp):
    return (
        '\n[http.auth]\nauthorization_servers = ["' + idp.issuer + '"]\n'
        f'[http.auth.jwt]\nissuer = "{idp.issuer}"\naudience = "wasm-mcp-test"\n'
        f'jwks_url = "{idp.issuer}/jwks"\n'
    )


def tool(host, token, name, arguments, id_=1):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    reply = modern(host, id_, "tools/call", {"name": name, "arguments": arguments}, **headers)
    return reply


def text(reply) -> str:
    assert reply.status == 200, reply.raw
    body = reply.json()
    assert "result" in body, body
    return "".join(c.get("text", "") for c in body["result"]["content"])


def entity_names(host, token) -> set[str]:
    graph = json.loads(text(tool(host, token, "read_graph", {})))
    return {e["name"] for e in graph["entities"]}


def test_a_team_shares_its_data_and_no_one_else_reaches_it(http_host_factory, host_env, tmp_path, idp):
    key = idp.add("k1", "RS256")
    files = tmp_path / "files"
    files.mkdir()
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    config = write_config(tmp_path, cache, files, '[tenancy]\nclaim = "org.id"\n', auth_section(idp))
    host = http_host_factory(plugin_folder(tmp_path), env=dict(host_env, WASM_MCP_CONFIG=str(config)))
    alice = idp.token(key, "alice", org={"id": "acme"})
    carol = idp.token(key, "carol", org={"id": "acme"})
    bob = idp.token(key, "bob", org={"id": "globex"})

    # Alice writes to her team's graph and folder.
    created = tool(host, alice, "create_entities",
                   {"entities": [{"name": "Launch", "entityType": "plan", "observations": ["Q3"]}]})
    assert "Launch" in text(created)
    assert not tool(host, alice, "write_file",
                    {"path": "/files/note.txt", "content": "acme only"}).json()["result"].get("isError")

    # Carol, of the same team, reads both; Bob, of another, neither.
    assert entity_names(host, carol) == {"Launch"}
    assert text(tool(host, carol, "read_text_file", {"path": "/files/note.txt"})) == "acme only"
    assert entity_names(host, bob) == set()
    assert not tool(host, bob, "search_nodes", {"query": "Launch"}).json()["result"].get("isError")
    assert "Launch" not in text(tool(host, bob, "search_nodes", {"query": "Launch"}))
    missing = tool(host, bob, "read_text_file", {"path": "/files/note.txt"}).json()["result"]
    assert missing.get("isError"), missing

    # On disk: one private folder per team, inside the root's parent.
    assert (files / "acme" / "note.txt").read_text() == "acme only"
    assert sorted(p.name for p in files.iterdir()) == ["acme", "globex"]
    assert oct((files / "acme").stat().st_mode & 0o777) == "0o700"

    # A warm Python instance remembers a global between calls, but only
    # for calls of its own principal and tenant.
    assert text(tool(host, alice, "last_seen", {"value": "alice-secret"})) == ""
    assert text(tool(host, alice, "last_seen", {"value": "alice-again"})) == "alice-secret"
    assert text(tool(host, bob, "last_seen", {"value": "bob"})) == ""
    assert text(tool(host, carol, "last_seen", {"value": "carol"})) == ""
    assert text(tool(host, alice, "last_seen", {"value": "alice-3"})) == "alice-again"

    # A token without the claim, or with one that names no tenant, is
    # refused whole, with a reason.
    for claims in ({}, {"org": {"id": ""}}, {"org": {"id": ["acme"]}}, {"org": "acme"}):
        refused = tool(host, idp.token(key, "mallory", **claims), "read_graph", {})
        assert refused.status == 403, (claims, refused.raw)
        assert refused.json()["error"]["data"]["reason"] == "no_tenant"

    # Hostile names: each lands in a folder of its own inside the parent,
    # or is refused; nothing is written anywhere else.
    before = sorted(p.name for p in tmp_path.iterdir())
    hostile = ["../../x", "a/b", "..", ".", "x" * 10_000, "nul\0in\0it", "\n\r", "ａcme", "ACME"]
    for n, name in enumerate(hostile):
        token = idp.token(key, f"h{n}", org={"id": name})
        reply = tool(host, token, "write_file", {"path": "/files/mine.txt", "content": str(n)}, id_=n + 10)
        assert reply.status in (200, 403), reply.raw
        if reply.status == 200:
            assert not reply.json()["result"].get("isError"), (name, reply.raw)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    written = sorted(files.glob("*/mine.txt"))
    assert len(written) == len(hostile), [p.parent.name for p in written]
    assert {p.read_text() for p in written} == {str(n) for n in range(len(hostile))}
    assert all(p.parent.parent == files for p in written)
    assert not (files / "acme" / "mine.txt").exists()
    assert not (tmp_path / "x").exists() and not (files / "a").exists()

    # The audit log names each call's tenant.
    deadline = time.monotonic() + 10
    while '"tenant":"globex"' not in (tmp_path / "audit.jsonl").read_text():
        assert time.monotonic() < deadline, "the audit log never named tenant globex"
        time.sleep(0.05)
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert {"acme", "globex"} <= {line.get("tenant") for line in lines}

    # The operator's view: list, export, then delete the team's data.
    env = dict(host_env, WASM_MCP_CONFIG=str(config))
    run = lambda *args: subprocess.run([str(BINARY), "tenant", *args], env=env,  # noqa: E731
                                       capture_output=True, text=True, timeout=120)
    listed = run("list")
    assert listed.returncode == 0, listed.stderr
    assert "acme" in listed.stdout and "globex" in listed.stdout
    archive = tmp_path / "acme.tar"
    exported = run("export", "acme", "--out", str(archive))
    assert exported.returncode == 0, exported.stderr
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert any(n.endswith("files/note.txt") for n in names), names
        note = next(n for n in names if n.endswith("files/note.txt"))
        assert tar.extractfile(note).read() == b"acme only"
        store = tar.extractfile(next(n for n in names if n.endswith("keyvalue.jsonl"))).read().decode()
        assert "memory" in store and len(store.splitlines()) >= 1
    deleted = run("delete", "acme")
    assert deleted.returncode == 0, deleted.stderr
    assert "acme" in deleted.stdout
    assert not (files / "acme").exists() and (files / "globex").exists()
    assert entity_names(host, carol) == set()
    assert "acme" not in run("list").stdout


def test_over_stdio_the_one_tenant_is_local_and_its_data_outlives_the_host(host_env, tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    config = write_config(tmp_path, cache, files)
    env = dict(host_env, WASM_MCP_CONFIG=str(config))
    plugins = plugin_folder(tmp_path)

    def call(host, name, arguments):
        response = host.request("tools/call", {"name": name, "arguments": arguments}, timeout=120)
        assert "result" in response and not response["result"].get("isError"), response
        return "".join(c.get("text", "") for c in response["result"]["content"])

    first = RawHost(plugins, env)
    first.initialize()
    try:
        call(first, "create_entities", {"entities": [{"name": "Kept", "entityType": "t", "observations": []}]})
        call(first, "write_file", {"path": "/files/kept.txt", "content": "still here"})
    finally:
        first.close()
    assert (files / "local" / "kept.txt").read_text() == "still here"

    again = RawHost(plugins, env)
    again.initialize()
    try:
        assert "Kept" in call(again, "read_graph", {})
        assert call(again, "read_text_file", {"path": "/files/kept.txt"}) == "still here"
    finally:
        again.close()
    assert os.path.exists(tmp_path / "keyvalue.db")
