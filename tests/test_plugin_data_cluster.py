"""Plugin data on three replicas behind HAProxy sharing a real PostgreSQL
server (issue 51): the `memory` plugin granted the key-value store keeps
one graph for all of them. An entity written through one replica is read
through the others; concurrent writes of one tenant through the load
balancer all survive (creates, and observations added to one entity:
compare-and-swap across replicas); a replica killed mid-write loses
nothing it acknowledged. Raw HTTP (2026-07-28, stateless requests each
routed on its own), as tests/test_cluster.py speaks it."""

import http.client
import shutil
import signal
import threading

from cluster import post
from conftest import PLUGINS, modern_meta
from test_cluster import cluster_factory, postgres  # noqa: F401 (fixtures)

STORE = "[plugins.memory]\nkeyvalue = true\n"
WRITERS = 20


def call(authority: str, tool: str, arguments: dict, id_: int = 1):
    """The structured result of a tools/call, or None when it was not
    answered with one (a replica gone, a refusal)."""
    params = {"name": tool, "arguments": arguments, "_meta": modern_meta()}
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
    try:
        status, _, reply = post(authority, {"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                                            "params": params}, headers)
    except (OSError, http.client.HTTPException, ValueError):  # ValueError: HAProxy's own error page
        return None
    if status != 200 or not reply or "result" not in reply or reply["result"].get("isError"):
        return None
    return reply["result"]["structuredContent"]


def must(authority: str, tool: str, arguments: dict) -> dict:
    got = call(authority, tool, arguments)
    assert got is not None, (authority, tool, arguments)
    return got


def at_once(jobs) -> None:
    threads = [threading.Thread(target=job) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
        assert not thread.is_alive(), "a writer never finished"


def test_memory_keeps_one_graph_on_three_replicas_and_loses_no_acknowledged_write(cluster_factory, tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    for suffix in ("wasm", "toml"):
        shutil.copy(PLUGINS / f"memory.{suffix}", folder / f"memory.{suffix}")
    cluster = cluster_factory(folder, config=STORE)
    r1, r2, r3 = (host.authority for host in cluster.replicas.values())

    # Written through one replica, read through each of the others.
    must(r1, "create_entities", {"entities": [{"name": "Ann", "entityType": "person", "observations": []}]})
    for replica in (r2, r3):
        seen = must(replica, "open_nodes", {"names": ["Ann"]})
        assert [e["name"] for e in seen["entities"]] == ["Ann"], replica

    # WRITERS creates and WRITERS observations on Ann at once, through HAProxy.
    created, observed = [], []

    def create(name: str):
        got = call(cluster.front, "create_entities", {"entities": [
            {"name": name, "entityType": "thing", "observations": []}]})
        assert got is not None and [e["name"] for e in got["entities"]] == [name], (name, got)
        created.append(name)

    def observe(text: str):
        got = call(cluster.front, "add_observations", {"observations": [{"entityName": "Ann", "contents": [text]}]})
        assert got is not None and got["results"][0]["addedObservations"] == [text], (text, got)
        observed.append(text)

    at_once([lambda i=i: create(f"e{i:02}") for i in range(WRITERS)]
            + [lambda i=i: observe(f"note {i}") for i in range(WRITERS)])
    assert len(created) == len(observed) == WRITERS
    graphs = [must(replica, "read_graph", {}) for replica in (r1, r2, r3)]
    assert graphs[1:] == graphs[:-1]  # every replica: the same graph, in the same order
    assert sorted(e["name"] for e in graphs[0]["entities"]) == sorted(["Ann"] + created)
    assert sorted(graphs[0]["entities"][0]["observations"]) == sorted(observed)

    # Writers through HAProxy while r1 is killed: every write answered
    # as done is kept; the others may or may not be.
    acknowledged, answered, killed, after_kill = [], threading.Event(), threading.Event(), []

    def writer(w: int):
        for n in range(10):
            name = f"w{w}-{n}"
            got = call(cluster.front, "create_entities", {"entities": [
                {"name": name, "entityType": "thing", "observations": [f"by writer {w}"]}]})
            if got is not None and [e["name"] for e in got["entities"]] == [name]:
                acknowledged.append(name)
                if killed.is_set():
                    after_kill.append(name)
                if len(acknowledged) >= 10:
                    answered.set()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    assert answered.wait(timeout=120), "no writes answered"
    cluster.replicas["r1"].proc.send_signal(signal.SIGKILL)
    cluster.replicas["r1"].proc.wait(timeout=20)
    killed.set()
    for thread in threads:
        thread.join(timeout=300)
        assert not thread.is_alive(), "a writer never finished"
    assert after_kill, "the other replicas took no write after r1 was killed"
    print(f"{len(acknowledged)} of 80 writes acknowledged, {len(after_kill)} after r1 was killed")
    for replica in (r2, r3):
        graph = must(replica, "read_graph", {})
        names = {e["name"] for e in graph["entities"]}
        lost = set(acknowledged) - names
        assert not lost, (replica, sorted(lost))
        assert set(created) <= names
