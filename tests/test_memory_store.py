"""The `memory` plugin with its graph in the host's key-value store
(`[plugins.memory] keyvalue = true`, the default SQLite store): two hosts
on one store serve one graph, concurrent writes through both (creates,
and observations added to one entity: compare-and-swap on one key) lose
nothing, and the graph outlives both hosts. Real hosts over stdio, the
real Python `mcp` client. (Its answers against the reference server, in
store mode too: tests/test_reference_servers.py; on three replicas over
PostgreSQL: tests/test_plugin_data_cluster.py.)"""

import anyio
import pytest

from test_reference_servers import ours, outcome

pytestmark = pytest.mark.anyio

STORE = '[plugins.memory]\nkeyvalue = true\n'
# Writes each host takes at once: more than its 16 concurrent calls.
WRITERS = 20


async def succeeded(client, tool: str, arguments: dict) -> dict:
    got = await outcome(client, tool, arguments)
    assert not got["is_error"] and "protocol_error" not in got, (tool, arguments, got)
    return got["structured"]


async def test_two_hosts_on_one_store_share_the_graph_and_lose_no_write(tmp_path, cache_dir):
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    # Both made before either starts: each copies the plugin into place.
    first, second = (ours(tmp_path, cache_dir, "memory", STORE, env) for _ in range(2))
    async with first as a, second as b:
        created = await succeeded(a, "create_entities", {"entities": [
            {"name": "Ann", "entityType": "person", "observations": ["first"]}]})
        assert [e["name"] for e in created["entities"]] == ["Ann"]
        # Written through one host, read through the other.
        seen = await succeeded(b, "open_nodes", {"names": ["Ann"]})
        assert seen["entities"] == created["entities"]
        # Creating it again through the other host adds nothing.
        again = await succeeded(b, "create_entities", {"entities": [
            {"name": "Ann", "entityType": "robot", "observations": []}]})
        assert again["entities"] == []

        # At once, through both hosts: WRITERS new entities each, WRITERS
        # observations each on Ann, and a relation from each new entity.
        acknowledged = []

        async def create(client, name: str):
            got = await succeeded(client, "create_entities", {"entities": [
                {"name": name, "entityType": "thing", "observations": [f"made as {name}"]}]})
            assert [e["name"] for e in got["entities"]] == [name]
            await succeeded(client, "create_relations", {"relations": [
                {"from": name, "to": "Ann", "relationType": "knows"}]})
            acknowledged.append(name)

        async def observe(client, text: str):
            got = await succeeded(client, "add_observations", {"observations": [
                {"entityName": "Ann", "contents": [text]}]})
            assert got["results"] == [{"entityName": "Ann", "addedObservations": [text]}]

        with anyio.fail_after(300):
            async with anyio.create_task_group() as group:
                for i in range(WRITERS):
                    for client, host in ((a, "a"), (b, "b")):
                        group.start_soon(create, client, f"{host}{i:02}")
                        group.start_soon(observe, client, f"{host} says {i}")
        assert len(acknowledged) == 2 * WRITERS

        graph = await succeeded(a, "read_graph", {})
        assert await succeeded(b, "read_graph", {}) == graph  # the same, in the same order
        names = [e["name"] for e in graph["entities"]]
        assert names[0] == "Ann" and sorted(names[1:]) == sorted(acknowledged)
        ann = graph["entities"][0]
        expected = ["first"] + [f"{h} says {i}" for i in range(WRITERS) for h in "ab"]
        assert sorted(ann["observations"]) == sorted(expected)
        assert sorted(r["from"] for r in graph["relations"]) == sorted(acknowledged)

        # A delete through one host takes the entity's relations with it,
        # seen through the other.
        await succeeded(b, "delete_entities", {"entityNames": ["a00", "b00"]})
        after = await succeeded(a, "search_nodes", {"query": "made as"})
        assert {e["name"] for e in after["entities"]} == set(acknowledged) - {"a00", "b00"}
        assert {r["from"] for r in after["relations"]} == set(acknowledged) - {"a00", "b00"}
        graph = await succeeded(a, "read_graph", {})

    # Both hosts gone: a new one finds the same graph.
    async with ours(tmp_path, cache_dir, "memory", STORE, env) as c:
        assert await succeeded(c, "read_graph", {}) == graph
