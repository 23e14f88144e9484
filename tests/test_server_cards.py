"""Server Cards (the io.modelcontextprotocol/server-card extension), against
the real binary: a card per endpoint (the main one and each profile's) at
its URL then /server-card, valid against the extension's own schema
(vendored in fixtures/server-card), an AI Catalog listing them, caching by
a strong ETag that follows a hot reload, and under authentication a card
that is public yet says only how to authenticate."""

import json
import shutil
import subprocess
import time

import jsonschema
import pytest

from conftest import BINARY, PLUGINS, ROOT, modern_meta
from test_http_transport import BASE_HEADERS, request

SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "server-card" / "schema.json").read_text())
CARD_SCHEMA = {**SCHEMA, "$ref": "#/$defs/ServerCard"}
CARD_TYPE = "application/mcp-server-card+json"
CATALOG_PATHS = ["/.well-known/ai-catalog.json", "/.well-known/mcp/catalog.json"]


def valid_card(card: dict) -> dict:
    jsonschema.Draft202012Validator(CARD_SCHEMA).validate(card)
    # What the extension asks beyond the schema: no primitives listed as
    # fields of their own.
    assert not {"tools", "resources", "prompts"} & card.keys()
    return card


def path_of(url: str) -> str:
    return "/" + url.split("/", 3)[3]


def get(host, url_or_path: str, **headers):
    path = path_of(url_or_path) if "://" in url_or_path else url_or_path
    return request(host, "GET", path=path, headers={"Accept": CARD_TYPE, **headers})


def card_of(host, url: str) -> tuple[dict, str]:
    reply = get(host, url)
    assert reply.status == 200, reply.raw
    assert reply.headers["content-type"] == CARD_TYPE
    assert reply.headers["cache-control"] == "public, max-age=300"
    assert reply.headers["access-control-allow-origin"] == "*"
    assert reply.headers["access-control-expose-headers"] == "ETag"
    return valid_card(reply.json()), reply.headers["etag"]


def catalog_of(host) -> list[dict]:
    """The catalog's entries (the same at both of its paths), each a card's."""
    found = []
    for path in CATALOG_PATHS:
        reply = get(host, path)
        assert reply.status == 200, (path, reply.raw)
        assert reply.headers["content-type"] == "application/ai-catalog+json"
        catalog = reply.json()
        assert catalog["specVersion"] == "1.0"
        for entry in catalog["entries"]:
            assert set(entry) == {"identifier", "type", "url"}
            assert entry["type"] == CARD_TYPE
            assert entry["identifier"].startswith("urn:air:")
            assert entry["url"].startswith(f"http://{host.authority}/")
        found.append(catalog["entries"])
    assert found[0] == found[1]
    return found[0]


def discover(host, url: str, **headers) -> dict:
    """`server/discover`'s result at the endpoint `url`."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}
    headers = {**BASE_HEADERS, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover", **headers}
    reply = request(host, "POST", body, headers, path=path_of(url))
    assert reply.status == 200, reply.raw
    return reply.json()["result"]


def config(tmp_path, host_env, text: str) -> dict:
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    path = tmp_path / "cards.toml"
    path.write_text(f'[server]\ncache_dir = "{cache}"\n{text}')
    return dict(host_env, WASM_MCP_CONFIG=str(path))


def until_changed(host, url: str, tag: str, timeout: float = 60) -> tuple[dict, str]:
    """The card once its tag is no longer `tag` (a reload shows)."""
    deadline = time.monotonic() + timeout
    while True:
        card, now = card_of(host, url)
        if now != tag:
            return card, now
        assert time.monotonic() < deadline, f"the card never changed:\n{host.log()[-3000:]}"
        time.sleep(0.1)


def test_a_card_per_endpoint_listed_in_the_catalog_and_tagged_through_reloads(
        http_host_factory, host_env, tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    env = config(tmp_path, host_env, '[profiles.greeter]\ninclude = ["hello.greet"]\n')
    host = http_host_factory(folder, env=env)

    entries = catalog_of(host)
    assert [e["identifier"] for e in entries] == [
        "urn:air:wasm-mcp.local:mcp:wasm-mcp", "urn:air:wasm-mcp.local:mcp:wasm-mcp-greeter"]
    cards = [card_of(host, e["url"])[0] for e in entries]
    main, greeter = cards
    assert entries[0]["url"] == host.url + "/server-card"
    assert main["name"] == "local.wasm-mcp/wasm-mcp"
    assert main["remotes"][0]["url"] == host.url
    assert main["_meta"]["dev.wasm-mcp/offers"] == {"plugins": ["hello"], "tools": ["add", "countdown", "greet"]}
    assert greeter["name"] == "local.wasm-mcp/wasm-mcp-greeter"
    assert greeter["remotes"][0]["url"] == host.url + "/greeter"
    assert greeter["_meta"]["dev.wasm-mcp/offers"] == {"plugins": ["hello"], "tools": ["greet"]}
    # (The schema does refuse what breaks it.)
    with pytest.raises(jsonschema.ValidationError):
        valid_card({**main, "name": "wasm-mcp"})

    # What a card says, its endpoint says too once connected.
    for card in cards:
        discovered = discover(host, card["remotes"][0]["url"])
        assert card["version"] == discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["version"]
        assert card["remotes"][0]["supportedProtocolVersions"] == discovered["supportedVersions"]

    # Revalidation: the tag held answers 304, with the tag again.
    _, tag = card_of(host, host.url + "/server-card")
    held = get(host, host.url + "/server-card", **{"If-None-Match": tag})
    assert held.status == 304 and held.raw == b"" and held.headers["etag"] == tag

    # A plugin added: the card names it, under a new tag; the old tag no
    # longer matches, the new one does.
    shutil.copy(PLUGINS / "notes.wasm", folder / "notes.wasm")
    added, new_tag = until_changed(host, host.url + "/server-card", tag)
    assert added["_meta"]["dev.wasm-mcp/offers"]["plugins"] == ["hello", "notes"]
    assert get(host, host.url + "/server-card", **{"If-None-Match": tag}).status == 200
    assert get(host, host.url + "/server-card", **{"If-None-Match": new_tag}).status == 304
    # The profile offers notes nothing: its card is as it was.
    assert card_of(host, host.url + "/greeter/server-card")[0] == greeter

    # Removed again: the card is the first one, tag and all.
    (folder / "notes.wasm").unlink()
    removed, last_tag = until_changed(host, host.url + "/server-card", new_tag)
    assert removed == main and last_tag == tag


def test_under_auth_a_card_is_public_and_says_only_how_to_authenticate(
        http_host_factory, host_env, tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    env = config(tmp_path, host_env,
                 'name = "com.example/tools"\ndescription = "Greetings and sums"\n'
                 'website = "https://example.com/tools"\n'
                 '[[server.icons]]\nsrc = "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4="\n'
                 'mime_type = "image/svg+xml"\nsizes = ["any"]\ntheme = "light"\n'
                 '[profiles.greeter]\ninclude = ["hello.greet"]\n'
                 '[http.auth]\ntokens = ["s3cret"]\n')
    host = http_host_factory(folder, env=env)

    # No token, and a page of another origin: the endpoint refuses, the
    # cards and the catalog do not.
    foreign = {"Origin": "https://elsewhere.example"}
    refused = request(host, "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}, BASE_HEADERS)
    assert refused.status == 401
    entries = catalog_of(host)
    assert [e["identifier"] for e in entries] == [
        "urn:air:example.com:mcp:tools", "urn:air:example.com:mcp:tools-greeter"]
    for entry, endpoint in zip(entries, [host.url, host.url + "/greeter"]):
        reply = get(host, entry["url"], **foreign)
        assert reply.status == 200, reply.raw
        card = valid_card(reply.json())
        assert card["description"] == "Greetings and sums"
        assert card["websiteUrl"] == "https://example.com/tools"
        assert card["icons"] == [{"src": "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=",
                                  "mimeType": "image/svg+xml", "sizes": ["any"], "theme": "light"}]
        remote = card["remotes"][0]
        assert remote["url"] == endpoint
        assert remote["headers"] == [{
            "name": "Authorization", "description": remote["headers"][0]["description"],
            "isRequired": True, "isSecret": True}]
        # Nothing a caller would need a token to see.
        assert "dev.wasm-mcp/offers" not in card["_meta"]
        assert "hello" not in reply.raw.decode() and "countdown" not in reply.raw.decode()
        # Where to learn how to authenticate: the metadata the endpoint's
        # own challenge names, served without a token.
        metadata_url = card["_meta"]["dev.wasm-mcp/authorization"]["resourceMetadata"]
        challenge = request(host, "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                            BASE_HEADERS, path=path_of(endpoint))
        assert challenge.status == 401
        assert f'resource_metadata="{metadata_url}"' in challenge.headers["www-authenticate"]
        metadata = get(host, metadata_url)
        assert metadata.status == 200, metadata.raw
        assert metadata.json()["resource"] == host.url
        # With the token, the endpoint answers as its card says.
        discovered = discover(host, endpoint, Authorization="Bearer s3cret")
        assert remote["supportedProtocolVersions"] == discovered["supportedVersions"]


def test_a_bad_server_name_stops_the_host_naming_the_key(host_env, tmp_path):
    env = config(tmp_path, host_env, 'name = "wasm mcp"\n')
    started = subprocess.run([str(BINARY), "serve", "--plugins", str(tmp_path), "--http", "127.0.0.1:0"],
                             env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert started.returncode != 0
    assert started.stdout == ""
    assert 'server.name "wasm mcp" is not a server card name' in started.stderr, started.stderr
