"""The knowledge-graph tools of the reference server
`@modelcontextprotocol/server-memory`, as a sandboxed component: entities
(a name, a type, observations) and relations between them, kept as JSON
lines in a file of a read-write root.

The file is `/memory/memory.jsonl` (the root the host grants as `memory`),
or the path in MEMORY_FILE_PATH when the host grants that variable. Each
change is written to a temporary file beside it and renamed over it, so a
reader never sees half a graph. Built with componentize-py against the
`tools-resources-plugin` world (see scripts/build).
"""

import json
import os

from wasm_mcp import Plugin, ToolError, result
from wit_world.imports import host

plugin = Plugin()

GRAPH_URI = "memory://knowledge-graph"
DEFAULT_PATH = "/memory/memory.jsonl"
# The largest memory file read, so that a huge file fails clearly rather
# than exhausting the instance's memory.
MAX_FILE_BYTES = 64 << 20
# What one read asks for: the file's size is not known beforehand (a stat
# would be one more file operation of the host's).
READ_CHUNK = 1 << 20


def memory_path() -> str:
    return os.environ.get("MEMORY_FILE_PATH") or DEFAULT_PATH


# --- the graph on disk ------------------------------------------------------

def read_file(path: str) -> bytes | None:
    """The file's bytes, at most MAX_FILE_BYTES + 1 of them; None if it
    does not exist. With os.open and os.read: each is one file operation of
    the host's, where open() adds a stat and a buffer, and read(n) of a
    buffered file allocates n bytes up front (64 MiB here) before it reads."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(READ_CHUNK, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def load_graph() -> dict:
    path = memory_path()
    try:
        data = read_file(path)
    except OSError as e:
        raise ToolError(f"Cannot read {path}: {e.strerror or e}") from None
    if data is None:
        return {"entities": [], "relations": []}
    if len(data) > MAX_FILE_BYTES:
        raise ToolError(f"{path} is larger than {MAX_FILE_BYTES >> 20} MiB")
    graph = {"entities": [], "relations": []}
    for number, line in enumerate(data.decode("utf-8").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            raise ToolError(f"{path} line {number} is not JSON: {e}") from None
        if not isinstance(item, dict):
            continue
        if item.get("type") == "entity":
            graph["entities"].append({
                "name": item.get("name"),
                "entityType": item.get("entityType"),
                "observations": item.get("observations"),
            })
        elif item.get("type") == "relation":
            graph["relations"].append({
                "from": item.get("from"),
                "to": item.get("to"),
                "relationType": item.get("relationType"),
            })
    return graph


def save_graph(graph: dict) -> None:
    lines = [json.dumps({"type": "entity", **e}, ensure_ascii=False, separators=(",", ":"))
             for e in graph["entities"]]
    lines += [json.dumps({"type": "relation", **r}, ensure_ascii=False, separators=(",", ":"))
              for r in graph["relations"]]
    path = memory_path()
    temp = f"{path}.{os.urandom(16).hex()}.tmp"
    try:
        with open(temp, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        os.rename(temp, path)
    except BaseException as e:
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise ToolError(f"Cannot write {path}: {e.strerror or e} "
                            "(the plugin needs its root granted read-write)") from None
        raise
    host.resource_updated(GRAPH_URI)


# --- arguments, checked as the reference's schemas check them ----------------

def strings(value, where: str) -> list:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolError(f"Invalid arguments: {where} must be an array of strings")
    return value


def records(value, where: str, fields: dict) -> list:
    """A list of objects whose `fields` are strings or string arrays."""
    if not isinstance(value, list):
        raise ToolError(f"Invalid arguments: {where} must be an array")
    checked = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise ToolError(f"Invalid arguments: {where}[{i}] must be an object")
        record = {}
        for field, kind in fields.items():
            got = item.get(field)
            if kind is str and not isinstance(got, str):
                raise ToolError(f"Invalid arguments: {where}[{i}].{field} must be a string")
            if kind is list:
                strings(got, f"{where}[{i}].{field}")
            record[field] = got
        checked.append(record)
    return checked


ENTITY = {"name": str, "entityType": str, "observations": list}
RELATION = {"from": str, "to": str, "relationType": str}


def pretty(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def same_relation(a: dict, b: dict) -> bool:
    return a["from"] == b["from"] and a["to"] == b["to"] and a["relationType"] == b["relationType"]


def subgraph(graph: dict, keep) -> dict:
    """The entities `keep` accepts, and every relation touching one."""
    entities = [e for e in graph["entities"] if keep(e)]
    names = {e["name"] for e in entities}
    relations = [r for r in graph["relations"] if r["from"] in names or r["to"] in names]
    return {"entities": entities, "relations": relations}


# --- schemas, as the reference lists them ------------------------------------

DRAFT = "http://json-schema.org/draft-07/schema#"


def _entity_schema(closed: bool) -> dict:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name of the entity"},
            "entityType": {"type": "string", "description": "The type of the entity"},
            "observations": {"type": "array", "items": {"type": "string"},
                             "description": "An array of observation contents associated with the entity"},
        },
        "required": ["name", "entityType", "observations"],
    }
    return dict(schema, additionalProperties=False) if closed else schema


def _relation_schema(closed: bool) -> dict:
    schema = {
        "type": "object",
        "properties": {
            "from": {"type": "string", "description": "The name of the entity where the relation starts"},
            "to": {"type": "string", "description": "The name of the entity where the relation ends"},
            "relationType": {"type": "string", "description": "The type of the relation"},
        },
        "required": ["from", "to", "relationType"],
    }
    return dict(schema, additionalProperties=False) if closed else schema


def _input(properties: dict) -> dict:
    return {"$schema": DRAFT, "type": "object", "properties": properties, "required": list(properties)}


def _output(properties: dict) -> dict:
    return {"$schema": DRAFT, "type": "object", "properties": properties,
            "required": list(properties), "additionalProperties": False}


GRAPH_OUTPUT = _output({
    "entities": {"type": "array", "items": _entity_schema(True)},
    "relations": {"type": "array", "items": _relation_schema(True)},
})
DONE_OUTPUT = _output({"success": {"type": "boolean"}, "message": {"type": "string"}})


def _hints(read_only: bool, destructive: bool, idempotent: bool) -> dict:
    return dict(read_only_hint=read_only, destructive_hint=destructive,
                idempotent_hint=idempotent, open_world_hint=False)


WRITES = _hints(False, False, False)
DELETES = _hints(False, True, True)
READS = _hints(True, False, True)


def done(message: str):
    return result(message, {"success": True, "message": message})


# --- the tools ---------------------------------------------------------------

@plugin.tool(
    title="Create Entities",
    description="Create multiple new entities in the knowledge graph",
    annotations=WRITES,
    input_schema=_input({"entities": {"type": "array", "items": _entity_schema(False)}}),
    output_schema=_output({"entities": {"type": "array", "items": _entity_schema(True)}}),
)
def create_entities(entities=None, **_unknown):
    entities = records(entities, "entities", ENTITY)
    graph = load_graph()
    known = {e["name"] for e in graph["entities"]}
    new = [e for e in entities if e["name"] not in known]
    graph["entities"].extend(new)
    save_graph(graph)
    return result(pretty(new), {"entities": new})


@plugin.tool(
    title="Create Relations",
    description="Create multiple new relations between entities in the knowledge graph. "
                "Relations should be in active voice",
    annotations=WRITES,
    input_schema=_input({"relations": {"type": "array", "items": _relation_schema(False)}}),
    output_schema=_output({"relations": {"type": "array", "items": _relation_schema(True)}}),
)
def create_relations(relations=None, **_unknown):
    relations = records(relations, "relations", RELATION)
    graph = load_graph()
    new = [r for r in relations if not any(same_relation(r, old) for old in graph["relations"])]
    graph["relations"].extend(new)
    save_graph(graph)
    return result(pretty(new), {"relations": new})


@plugin.tool(
    title="Add Observations",
    description="Add new observations to existing entities in the knowledge graph",
    annotations=WRITES,
    input_schema=_input({"observations": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "entityName": {"type": "string", "description": "The name of the entity to add the observations to"},
            "contents": {"type": "array", "items": {"type": "string"},
                         "description": "An array of observation contents to add"},
        },
        "required": ["entityName", "contents"],
    }}}),
    output_schema=_output({"results": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "entityName": {"type": "string"},
            "addedObservations": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["entityName", "addedObservations"],
        "additionalProperties": False,
    }}}),
)
def add_observations(observations=None, **_unknown):
    observations = records(observations, "observations", {"entityName": str, "contents": list})
    graph = load_graph()
    results = []
    for o in observations:
        entity = next((e for e in graph["entities"] if e["name"] == o["entityName"]), None)
        if entity is None:
            raise ToolError(f"Entity with name {o['entityName']} not found")
        added = [c for c in o["contents"] if c not in entity["observations"]]
        entity["observations"].extend(added)
        results.append({"entityName": o["entityName"], "addedObservations": added})
    save_graph(graph)
    return result(pretty(results), {"results": results})


@plugin.tool(
    title="Delete Entities",
    description="Delete multiple entities and their associated relations from the knowledge graph",
    annotations=DELETES,
    input_schema=_input({"entityNames": {"type": "array", "items": {"type": "string"},
                                         "description": "An array of entity names to delete"}}),
    output_schema=DONE_OUTPUT,
)
def delete_entities(entityNames=None, **_unknown):
    names = set(strings(entityNames, "entityNames"))
    graph = load_graph()
    graph["entities"] = [e for e in graph["entities"] if e["name"] not in names]
    graph["relations"] = [r for r in graph["relations"] if r["from"] not in names and r["to"] not in names]
    save_graph(graph)
    return done("Entities deleted successfully")


@plugin.tool(
    title="Delete Observations",
    description="Delete specific observations from entities in the knowledge graph",
    annotations=DELETES,
    input_schema=_input({"deletions": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "entityName": {"type": "string", "description": "The name of the entity containing the observations"},
            "observations": {"type": "array", "items": {"type": "string"},
                             "description": "An array of observations to delete"},
        },
        "required": ["entityName", "observations"],
    }}}),
    output_schema=DONE_OUTPUT,
)
def delete_observations(deletions=None, **_unknown):
    deletions = records(deletions, "deletions", {"entityName": str, "observations": list})
    graph = load_graph()
    for d in deletions:
        for entity in graph["entities"]:
            if entity["name"] == d["entityName"]:
                entity["observations"] = [o for o in entity["observations"] if o not in d["observations"]]
                break
    save_graph(graph)
    return done("Observations deleted successfully")


@plugin.tool(
    title="Delete Relations",
    description="Delete multiple relations from the knowledge graph",
    annotations=DELETES,
    input_schema=_input({"relations": dict({"type": "array", "items": _relation_schema(False)},
                                           description="An array of relations to delete")}),
    output_schema=DONE_OUTPUT,
)
def delete_relations(relations=None, **_unknown):
    relations = records(relations, "relations", RELATION)
    graph = load_graph()
    graph["relations"] = [r for r in graph["relations"]
                          if not any(same_relation(r, gone) for gone in relations)]
    save_graph(graph)
    return done("Relations deleted successfully")


@plugin.tool(
    title="Read Graph",
    description="Read the entire knowledge graph",
    annotations=READS,
    input_schema={"$schema": DRAFT, "type": "object", "properties": {}},
    output_schema=GRAPH_OUTPUT,
)
def read_graph(**_ignored):
    graph = load_graph()
    return result(pretty(graph), graph)


@plugin.tool(
    title="Search Nodes",
    description="Search for nodes in the knowledge graph based on a query",
    annotations=READS,
    input_schema=_input({"query": {"type": "string", "description":
                                   "The search query to match against entity names, types, and observation content"}}),
    output_schema=GRAPH_OUTPUT,
)
def search_nodes(query=None, **_unknown):
    if not isinstance(query, str):
        raise ToolError("Invalid arguments: query must be a string")
    needle = query.lower()

    def matches(e: dict) -> bool:
        return (needle in e["name"].lower() or needle in e["entityType"].lower()
                or any(needle in o.lower() for o in e["observations"]))

    found = subgraph(load_graph(), matches)
    return result(pretty(found), found)


@plugin.tool(
    title="Open Nodes",
    description="Open specific nodes in the knowledge graph by their names",
    annotations=READS,
    input_schema=_input({"names": {"type": "array", "items": {"type": "string"},
                                   "description": "An array of entity names to retrieve"}}),
    output_schema=GRAPH_OUTPUT,
)
def open_nodes(names=None, **_unknown):
    wanted = set(strings(names, "names"))
    found = subgraph(load_graph(), lambda e: e["name"] in wanted)
    return result(pretty(found), found)


@plugin.resource(GRAPH_URI, name="knowledge-graph", title="Knowledge Graph", mime_type="application/json")
def knowledge_graph() -> str:
    """The full knowledge graph with all entities and relations"""
    return pretty(load_graph())


Tools = plugin.Tools
Resources = plugin.Resources
