"""The knowledge-graph tools of the reference server
`@modelcontextprotocol/server-memory`, as a sandboxed component: entities
(a name, a type, observations) and relations between them.

Where the graph is kept:

- In the host's key-value store (wasi:keyvalue), when the host grants it
  (`[plugins.memory] keyvalue = true`): each tenant's graph apart, and
  every replica's the same. One key per entity (in the bucket `entities`,
  named by the SHA-256 of its name) and one per relation (`relations`,
  by the SHA-256 of its three fields), each a JSON record with its place
  in the graph (`seq`, from the counter in `counters`): concurrent
  creates touch different keys, a change of one entity is a
  compare-and-swap loop on its key, so no write of any replica is lost,
  and the graph reads back in the order it was written, as the
  reference's does.
- Otherwise as JSON lines in a file of a read-write root, as the reference
  keeps it: `/memory/memory.jsonl` (the root the host grants as
  `memory`), or the path in MEMORY_FILE_PATH when the host grants that
  variable. Each change is written to a temporary file beside it and
  renamed over it, so a reader never sees half a graph.

Built with componentize-py against the `tools-resources-plugin` world
(see scripts/build).
"""

import hashlib
import json
import os

from wasm_mcp import AccessDenied, KeyValue, KeyValueError, Plugin, ToolError, result
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
# Keys in one batch (and compare-and-swap handles open at once): well
# under the host's bounds.
BATCH = 100


def memory_path() -> str:
    return os.environ.get("MEMORY_FILE_PATH") or DEFAULT_PATH


def same_relation(a: dict, b: dict) -> bool:
    return a["from"] == b["from"] and a["to"] == b["to"] and a["relationType"] == b["relationType"]


# --- the graph in a file -----------------------------------------------------

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


class FileGraph:
    """The graph as the reference keeps it: read whole, changed, rewritten
    (one change at a time: the host's max_concurrent_calls = 1)."""

    def read(self) -> dict:
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

    def save(self, graph: dict) -> None:
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

    def create_entities(self, entities: list) -> list:
        graph = self.read()
        known = {e["name"] for e in graph["entities"]}
        new = [e for e in entities if e["name"] not in known]
        graph["entities"].extend(new)
        self.save(graph)
        return new

    def create_relations(self, relations: list) -> list:
        graph = self.read()
        new = [r for r in relations if not any(same_relation(r, old) for old in graph["relations"])]
        graph["relations"].extend(new)
        self.save(graph)
        return new

    def add_observations(self, observations: list) -> list:
        graph = self.read()
        results = []
        for o in observations:
            entity = next((e for e in graph["entities"] if e["name"] == o["entityName"]), None)
            if entity is None:
                raise ToolError(f"Entity with name {o['entityName']} not found")
            added = [c for c in o["contents"] if c not in entity["observations"]]
            entity["observations"].extend(added)
            results.append({"entityName": o["entityName"], "addedObservations": added})
        self.save(graph)
        return results

    def delete_entities(self, names: set) -> None:
        graph = self.read()
        graph["entities"] = [e for e in graph["entities"] if e["name"] not in names]
        graph["relations"] = [r for r in graph["relations"] if r["from"] not in names and r["to"] not in names]
        self.save(graph)

    def delete_observations(self, deletions: list) -> None:
        graph = self.read()
        for d in deletions:
            for entity in graph["entities"]:
                if entity["name"] == d["entityName"]:
                    entity["observations"] = [o for o in entity["observations"] if o not in d["observations"]]
                    break
        self.save(graph)

    def delete_relations(self, relations: list) -> None:
        graph = self.read()
        graph["relations"] = [r for r in graph["relations"]
                              if not any(same_relation(r, gone) for gone in relations)]
        self.save(graph)


# --- the graph in the key-value store ----------------------------------------

def digest(*parts: str) -> str:
    """A key for a name (or a relation's fields): fixed length, whatever
    the name holds."""
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()


def encode(record: dict) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode(value: bytes, what: str) -> dict:
    try:
        record = json.loads(value)
    except ValueError as e:
        raise ToolError(f"A stored {what} is not JSON: {e}") from None
    if not isinstance(record, dict):
        raise ToolError(f"A stored {what} is not a JSON object")
    return record


ENTITY_FIELDS = ("name", "entityType", "observations")
RELATION_FIELDS = ("from", "to", "relationType")


class StoreGraph:
    """The graph in the host's key-value store (see the module's doc)."""

    def __init__(self, entities: KeyValue):
        self.entities = entities
        self.relations = KeyValue.open("relations")
        self.counters = KeyValue.open("counters")

    def _records(self, bucket: KeyValue, what: str, fields: tuple) -> list:
        records = [decode(value, what) for _, value in bucket.items()]
        records.sort(key=lambda r: r.get("seq", 0))
        return [{f: r.get(f) for f in fields} for r in records]

    def read(self) -> dict:
        return {"entities": self._records(self.entities, "entity", ENTITY_FIELDS),
                "relations": self._records(self.relations, "relation", RELATION_FIELDS)}

    def _create(self, bucket: KeyValue, items: list, key) -> list:
        """Each item whose key has no value yet, written with its place in
        the graph; those written (a key another writer took first is not).
        BATCH at a time, so that few compare-and-swap handles are open."""
        created = []
        for start in range(0, len(items), BATCH):
            absent = []
            for item in items[start:start + BATCH]:
                snapshot = bucket.snapshot(key(item))
                if snapshot.value is None:
                    absent.append((item, snapshot))
            if not absent:
                continue
            last = self.counters.increment("seq", len(absent))
            for seq, (item, snapshot) in enumerate(absent, start=last - len(absent) + 1):
                if bucket.compare_and_swap(snapshot, encode({"seq": seq, **item})):
                    created.append(item)
        return created

    def create_entities(self, entities: list) -> list:
        return self._create(self.entities, entities, lambda e: digest(e["name"]))

    def create_relations(self, relations: list) -> list:
        return self._create(self.relations, relations,
                            lambda r: digest(r["from"], r["to"], r["relationType"]))

    def add_observations(self, observations: list) -> list:
        # As the reference: a missing entity fails the call before any change.
        keys = [digest(o["entityName"]) for o in observations]
        found = set()
        for start in range(0, len(keys), BATCH):
            found.update(self.entities.get_many(keys[start:start + BATCH]))
        for o, key in zip(observations, keys):
            if key not in found:
                raise ToolError(f"Entity with name {o['entityName']} not found")
        results = []
        for o, key in zip(observations, keys):
            added = []

            def change(old):
                if old is None:
                    raise ToolError(f"Entity with name {o['entityName']} not found")
                record = decode(old, "entity")
                added[:] = [c for c in o["contents"] if c not in record["observations"]]
                record["observations"] = record["observations"] + added
                return encode(record)

            self.entities.update(key, change)
            results.append({"entityName": o["entityName"], "addedObservations": list(added)})
        return results

    def _delete(self, bucket: KeyValue, keys: list) -> None:
        for start in range(0, len(keys), BATCH):
            bucket.delete_many(keys[start:start + BATCH])

    def delete_entities(self, names: set) -> None:
        self._delete(self.entities, [digest(name) for name in names])
        touching = [key for key, value in self.relations.items()
                    if {decode(value, "relation").get(f) for f in ("from", "to")} & names]
        self._delete(self.relations, touching)

    def delete_observations(self, deletions: list) -> None:
        for d in deletions:
            def change(old):
                if old is None:
                    return None
                record = decode(old, "entity")
                kept = [o for o in record["observations"] if o not in d["observations"]]
                if kept == record["observations"]:
                    return None
                record["observations"] = kept
                return encode(record)

            self.entities.update(digest(d["entityName"]), change)

    def delete_relations(self, relations: list) -> None:
        self._delete(self.relations, [digest(r["from"], r["to"], r["relationType"]) for r in relations])


def graph_store():
    """Where this call's graph is: the store when the host grants it, the
    root's file when it does not."""
    try:
        return StoreGraph(KeyValue.open("entities"))
    except AccessDenied:
        return FileGraph()
    except KeyValueError as e:
        raise ToolError(str(e)) from None


def changed() -> None:
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
    new = graph_store().create_entities(entities)
    changed()
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
    new = graph_store().create_relations(relations)
    changed()
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
    results = graph_store().add_observations(observations)
    changed()
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
    graph_store().delete_entities(names)
    changed()
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
    graph_store().delete_observations(deletions)
    changed()
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
    graph_store().delete_relations(relations)
    changed()
    return done("Relations deleted successfully")


@plugin.tool(
    title="Read Graph",
    description="Read the entire knowledge graph",
    annotations=READS,
    input_schema={"$schema": DRAFT, "type": "object", "properties": {}},
    output_schema=GRAPH_OUTPUT,
)
def read_graph(**_ignored):
    graph = graph_store().read()
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

    found = subgraph(graph_store().read(), matches)
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
    found = subgraph(graph_store().read(), lambda e: e["name"] in wanted)
    return result(pretty(found), found)


@plugin.resource(GRAPH_URI, name="knowledge-graph", title="Knowledge Graph", mime_type="application/json")
def knowledge_graph() -> str:
    """The full knowledge graph with all entities and relations"""
    return pretty(graph_store().read())


Tools = plugin.Tools
Resources = plugin.Resources
