"""wasm-mcp for Python plugins: plain functions become tools, resources and
prompts, and this module writes the contract's records for them.

    from wasm_mcp import Plugin

    plugin = Plugin()

    @plugin.tool
    def greet(name: str) -> str:
        \"\"\"Says hello to someone.

        Args:
            name: Who to greet.
        \"\"\"
        return f"Hello, {name}!"

    Tools = plugin.Tools

Build with componentize-py against the world that covers what the module
exports (`wasm-mcp dev` picks it: `tools-plugin` here; export `Resources`,
`Prompts` and `Completions` the same way when the module has them). A
resource template's `{name}` matches one path segment. A tool's input
schema comes from its parameters' type hints (str, int, float, bool, list,
dict, Optional; a parameter with a default is optional, and its default
is in the schema), its description
and the parameters' descriptions from its docstring; `input_schema=`,
`output_schema=`, `title=` and `annotations=` (the ToolAnnotations hints
by their Python names, e.g. `read_only_hint=True`) set them outright;
`task_support="optional"` (or `"required"`; the default is `"forbidden"`)
lets a client run the tool as an MCP task. A long tool reports progress,
notices a cancel and goes on as a task at once with the host's imports
(`from wit_world.imports import host`: `host.progress`,
`host.is_cancelled`, `host.continue_as_task`). A
tool returns a str (text), anything JSON can hold (text and structured
content) or `result(...)` (its own text beside structured content); an
exception becomes a tool error with its message (a `ToolError`'s message
alone, else prefixed with the exception's type). `meta=` sets a tool's
`_meta` (a dict).

MCP Apps (interactive HTML views, extension `io.modelcontextprotocol/ui`)
take a line each: `plugin.view("ui://files/tree", html)` serves the view
(a resource; export `Resources = plugin.Resources`), and
`@plugin.tool(view="ui://files/tree")` names it as a tool's view;
`view_only=True` keeps a tool for the views alone (the model is not
offered it; a view still calls it).

`KeyValue.open()` is the plugin's key-value store (wasi:keyvalue), when
the host grants it: get, set, delete, increment, compare-and-swap
(`update` for a read-modify-write), keys and batches.
"""

import importlib
import inspect
import json
import re
import urllib.parse
import types as _pytypes
import typing

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types


def _exported(interface: str):
    """The bindings of an interface the world exports, or None: a world
    without resources (say) has no `wit_world.exports.resources`."""
    try:
        return importlib.import_module(f"wit_world.exports.{interface}")
    except ImportError:
        return None


tools = _exported("tools")
resources = _exported("resources")
prompts = _exported("prompts")
completions = _exported("completions")

# The most suggestions the host passes on.
MAX_COMPLETIONS = 100

# The MIME type of an MCP Apps view (SEP-1865), exactly.
VIEW_MIME_TYPE = "text/html;profile=mcp-app"

# `task_support=` values, and the TaskSupport case each names.
_TASK_SUPPORT = {"forbidden": "FORBIDDEN", "optional": "OPTIONAL", "required": "REQUIRED"}


def _view_uri(uri, what: str) -> str:
    if not isinstance(uri, str) or not uri.startswith("ui://"):
        raise ValueError(f"{what} is a ui:// URI, not {uri!r}")
    return uri


def _tool_meta(meta: dict | None, view: str | None, view_only: bool) -> str | None:
    """A tool's `_meta` as JSON text: `meta`, with `ui.resourceUri` (the
    view) and `ui.visibility` (["app"] when view-only) merged into its
    `ui`."""
    if meta is not None and not isinstance(meta, dict):
        raise TypeError(f"meta is a dict, not {type(meta).__name__}")
    if view is None and not view_only:
        return None if meta is None else json.dumps(meta)
    meta = dict(meta or {})
    ui = dict(meta.get("ui") or {})
    if view is not None:
        ui["resourceUri"] = _view_uri(view, "view=")
    if view_only:
        ui["visibility"] = ["app"]
    meta["ui"] = ui
    return json.dumps(meta)


def _template_matcher(uri_template: str):
    """A function from a URI to the template's variables (or None): each
    `{name}` matches one path segment."""
    names: list[str] = []

    def part(found: re.Match) -> str:
        if found.group(1) is None:
            return re.escape(found.group(0))
        names.append(found.group(1))
        return "([^/]+)"

    pattern = re.compile(re.sub(r"\{([^}]+)\}|[^{]+", part, uri_template) + r"\Z")

    def match(uri: str):
        found = pattern.match(uri)
        if found is None:
            return None
        return {name: urllib.parse.unquote(value) for name, value in zip(names, found.groups())}

    return match

__all__ = ["Plugin", "ToolError", "result", "text", "KeyValue", "KeyValueError", "AccessDenied"]


def text(value: str) -> types.Content:
    """A text content block."""
    return types.Content_Text(types.TextContent(text=value, annotations=None, meta=None))


def _doc(func) -> tuple[str | None, dict[str, str]]:
    """The description (the docstring's first paragraph) and the argument
    descriptions (`name: text` lines under `Args:`)."""
    doc = inspect.getdoc(func) or ""
    paragraphs = doc.split("\n\n")
    description = " ".join(paragraphs[0].split()) or None
    args: dict[str, str] = {}
    in_args = False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
        elif in_args and ":" in stripped:
            name, _, rest = stripped.partition(":")
            if name.isidentifier():
                args[name] = rest.strip()
        elif in_args and not stripped:
            continue
    return description, args


def _schema_of(hint) -> tuple[dict, bool]:
    """The JSON schema of a type hint, and whether it admits None."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, _pytypes.UnionType):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(members) < len(typing.get_args(hint))
        if len(members) == 1:
            return _schema_of(members[0])[0], optional
        return {"anyOf": [_schema_of(m)[0] for m in members]}, optional
    if hint is str:
        return {"type": "string"}, False
    if hint is bool:
        return {"type": "boolean"}, False
    if hint is int:
        return {"type": "integer"}, False
    if hint is float:
        return {"type": "number"}, False
    if hint is list or origin is list:
        args = typing.get_args(hint)
        schema = {"type": "array"}
        if args:
            schema["items"] = _schema_of(args[0])[0]
        return schema, False
    if hint is dict or origin is dict:
        return {"type": "object"}, False
    return {}, False


def _input_schema(func) -> dict:
    hints = typing.get_type_hints(func)
    _, described = _doc(func)
    properties, required = {}, []
    for name, param in inspect.signature(func).parameters.items():
        schema, optional = _schema_of(hints.get(name, typing.Any))
        if name in described:
            schema = dict(schema, description=described[name])
        if param.default is not inspect.Parameter.empty:
            try:
                json.dumps(param.default)
                schema = dict(schema, default=param.default)
            except (TypeError, ValueError):
                pass  # a default JSON cannot hold is not shown
        properties[name] = schema
        if param.default is inspect.Parameter.empty and not optional:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}


class ToolError(Exception):
    """A tool failure whose message alone is what the model reads."""


def result(text_: str, structured: dict | None = None, *, is_error: bool = False):
    """A tool result: the text clients read, and the structured content
    (a JSON object) beside it."""
    return tools.CallResult(
        content=[text(text_)],
        structured_content=None if structured is None else json.dumps(structured),
        is_error=is_error,
        meta=None,
    )


def _result(value):
    if tools is not None and isinstance(value, tools.CallResult):
        return value
    if isinstance(value, str):
        return tools.CallResult(content=[text(value)], structured_content=None, is_error=False, meta=None)
    encoded = json.dumps(value)
    structured = encoded if isinstance(value, dict) else None
    return tools.CallResult(content=[text(encoded)], structured_content=structured, is_error=False, meta=None)


def _world_with(interface: str) -> str:
    """The smallest contract world that exports what this build's world
    does and `interface` too."""
    have = {name for name, bindings in (("tools", tools), ("resources", resources),
                                        ("prompts", prompts), ("completions", completions))
            if bindings is not None} | {interface}
    if "completions" in have:
        return "plugin"
    return "-".join(n for n in ("tools", "resources", "prompts") if n in have) + "-plugin"


def _require(bindings, interface: str) -> None:
    if bindings is None:
        cls = interface.title()
        raise RuntimeError(
            f"this component's world does not export {interface}, which app.py uses: build it "
            f"with `wasm-mcp build` (it picks the world from the classes app.py defines), or "
            f"against the world wasm-mcp:plugin/{_world_with(interface)} with "
            f"`{cls} = plugin.{cls}` in app.py"
        )


class Plugin:
    """The tools, resources, prompts and completions of one plugin.
    Decorate functions with `tool`, `resource`, `template`, `prompt` and
    `complete`, then export the classes the module offers: `Tools =
    plugin.Tools`, `Resources = plugin.Resources`, `Prompts =
    plugin.Prompts`, `Completions = plugin.Completions`."""

    def __init__(self):
        self._tools = {}
        self._resources = {}
        self._contents_meta = {}  # uri: the `_meta` of what a read returns
        self._templates = []
        self._prompts = {}
        self._completers = {}
        plugin = self

        # Only the classes of the interfaces the world exports exist.
        self.Tools = self.Resources = self.Prompts = self.Completions = None
        if tools is not None:
            class _Tools(exports.Tools):
                def list_tools(self) -> list[tools.Tool]:
                    return [entry for entry, _ in plugin._tools.values()]

                def call_tool(self, name: str, arguments: str) -> tools.CallResult:
                    if name not in plugin._tools:
                        raise Err(types.Error_NotFound(f"no tool named {name}"))
                    _, func = plugin._tools[name]
                    try:
                        return _result(func(**json.loads(arguments)))
                    except Exception as error:  # a tool error, for the model to see
                        message = str(error) if isinstance(error, ToolError) \
                            else f"{type(error).__name__}: {error}"
                        return tools.CallResult(content=[text(message)], structured_content=None,
                                                is_error=True, meta=None)
            self.Tools = _Tools

        if resources is not None:
            class _Resources(exports.Resources):
                def list_resources(self) -> list[resources.Resource]:
                    return [entry for entry, _ in plugin._resources.values()]

                def list_resource_templates(self) -> list[resources.ResourceTemplate]:
                    return [entry for entry, _, _ in plugin._templates]

                def read_resource(self, uri: str) -> list[types.ResourceContents]:
                    meta = None
                    if uri in plugin._resources:
                        entry, func = plugin._resources[uri]
                        body = func()
                        meta = plugin._contents_meta.get(uri)
                    else:
                        for entry, match, func in plugin._templates:
                            variables = match(uri)
                            if variables is not None:
                                body = func(**variables)
                                break
                        else:
                            raise Err(types.Error_NotFound(f"no resource {uri}"))
                    body = types.ResourceBody_Blob(body) if isinstance(body, bytes) else types.ResourceBody_Text(body)
                    return [types.ResourceContents(uri=uri, mime_type=entry.mime_type, body=body, meta=meta)]
            self.Resources = _Resources

        if prompts is not None:
            class _Prompts(exports.Prompts):
                def list_prompts(self) -> list[prompts.Prompt]:
                    return [entry for entry, _ in plugin._prompts.values()]

                def get_prompt(self, name: str, arguments: list[tuple[str, str]]) -> prompts.PromptResult:
                    if name not in plugin._prompts:
                        raise Err(types.Error_NotFound(f"no prompt named {name}"))
                    entry, func = plugin._prompts[name]
                    said = func(**dict(arguments))
                    messages = [said] if isinstance(said, str) else list(said)
                    return prompts.PromptResult(
                        description=entry.description,
                        messages=[prompts.PromptMessage(role=types.Role.USER, content=text(m)) for m in messages],
                        meta=None,
                    )
            self.Prompts = _Prompts

        if completions is not None:
            class _Completions(exports.Completions):
                def complete(self, request: completions.CompletionRequest) -> completions.Completion:
                    kind = "prompt" if isinstance(request.reference, completions.Reference_Prompt) \
                        else "resource-template"
                    key = (kind, request.reference.value, request.argument_name)
                    suggest = plugin._completers.get(key)
                    if suggest is None:
                        return completions.Completion(values=[], total=None, has_more=False)
                    values = [str(v) for v in suggest(request.argument_value, dict(request.context_arguments))]
                    return completions.Completion(values=values[:MAX_COMPLETIONS], total=len(values),
                                                  has_more=len(values) > MAX_COMPLETIONS)
            self.Completions = _Completions

    def tool(self, func=None, *, name: str | None = None, description: str | None = None,
             title: str | None = None, annotations: dict | None = None,
             input_schema: dict | None = None, output_schema: dict | None = None,
             task_support: str = "forbidden", meta: dict | None = None,
             view: str | None = None, view_only: bool = False):
        """Makes `func` a tool (`@plugin.tool` or `@plugin.tool(name=...)`).

        `meta=` is the tool's `_meta` (a dict). MCP Apps: `view=` names
        the tool's interactive view, the `ui://` URI of a view this plugin
        serves (`plugin.view`), as `_meta.ui.resourceUri`; `view_only=True`
        makes the tool the views' alone (`_meta.ui.visibility = ["app"]`:
        not offered to the model, still called by a view). Both are merged
        into `meta`'s `ui`:

            @plugin.tool(view="ui://files/tree")
            def show_tree(path: str) -> dict: ...

            @plugin.tool(view_only=True)
            def expand(path: str) -> dict: ...
        """

        _require(tools, "tools")
        support = _TASK_SUPPORT.get(task_support)
        if support is None:
            raise ValueError(f"task_support is one of {', '.join(_TASK_SUPPORT)}, not {task_support!r}")
        tool_meta = _tool_meta(meta, view, view_only)

        def register(func):
            doc, _ = _doc(func)
            hints = None
            if annotations is not None:
                fields = dict(title=None, read_only_hint=None, destructive_hint=None,
                              idempotent_hint=None, open_world_hint=None)
                fields.update(annotations)
                hints = tools.ToolAnnotations(**fields)
            entry = tools.Tool(
                name=name or func.__name__,
                title=title,
                description=description or doc,
                input_schema=json.dumps(input_schema if input_schema is not None else _input_schema(func)),
                output_schema=None if output_schema is None else json.dumps(output_schema),
                annotations=hints,
                task_support=getattr(tools.TaskSupport, support),
                icons=[],
                meta=tool_meta,
            )
            self._tools[entry.name] = (entry, func)
            return func

        return register(func) if func is not None else register

    def resource(self, uri: str, *, name: str | None = None, mime_type: str | None = "text/plain",
                 title: str | None = None):
        """Makes `func()` (returning str, or bytes) the resource at `uri`."""

        _require(resources, "resources")

        def register(func):
            doc, _ = _doc(func)
            entry = resources.Resource(
                uri=uri, name=name or func.__name__, title=title, description=doc,
                mime_type=mime_type, size=None, annotations=None, icons=[], meta=None,
            )
            self._resources[uri] = (entry, func)
            self._contents_meta.pop(uri, None)
            return func

        return register

    def view(self, uri: str, html, *, name: str | None = None, title: str | None = None,
             description: str | None = None, ui: dict | None = None) -> None:
        """Serves an MCP Apps view: the resource at `uri` (a `ui://` URI)
        whose MIME type is `text/html;profile=mcp-app` and whose contents
        are `html` (the page, a str, or a function returning it at each
        read). `ui` (a dict) is the view's `_meta.ui`, set on the listed
        resource and on the contents a read returns: `csp`
        (`connectDomains`, `resourceDomains`, `frameDomains`,
        `baseUriDomains`: lists of origins), `permissions` (`camera`,
        `microphone`, `geolocation`, `clipboardWrite`: each `{}`),
        `domain`, `prefersBorder`. `name` defaults to the URI's last
        segment. A tool shows it with `@plugin.tool(view=uri)`.

            plugin.view("ui://files/tree", HTML, name="tree",
                        ui={"csp": {"connectDomains": ["https://api.example.com"]}})
        """
        _require(resources, "resources")
        _view_uri(uri, "a view's URI")
        if ui is not None and not isinstance(ui, dict):
            raise TypeError(f"ui is a dict, not {type(ui).__name__}")
        if not isinstance(html, str) and not callable(html):
            raise TypeError(f"a view's html is a str or a function returning one, not {type(html).__name__}")
        meta = None if ui is None else json.dumps({"ui": ui})
        entry = resources.Resource(
            uri=uri, name=name or uri.rstrip("/").rsplit("/", 1)[-1] or uri, title=title,
            description=description, mime_type=VIEW_MIME_TYPE, size=None, annotations=None,
            icons=[], meta=meta,
        )
        self._resources[uri] = (entry, html if callable(html) else (lambda: html))
        self._contents_meta[uri] = meta

    def template(self, uri_template: str, *, name: str | None = None, mime_type: str | None = "text/plain"):
        """Makes `func(**variables)` (returning str, or bytes) the resources
        matching `uri_template` (`notes://note/{id}` calls `func(id=...)`)."""
        _require(resources, "resources")

        def register(func):
            doc, _ = _doc(func)
            entry = resources.ResourceTemplate(
                uri_template=uri_template, name=name or func.__name__, title=None, description=doc,
                mime_type=mime_type, annotations=None, icons=[], meta=None,
            )
            self._templates.append((entry, _template_matcher(uri_template), func))
            return func

        return register

    def complete(self, *, argument: str, prompt: str | None = None, template: str | None = None):
        """Makes `func(typed, context)` suggest values for `argument` of
        `prompt`, or for the variable `argument` of the resource template
        `template`: it gets what the user typed and the other arguments by
        name, and returns the suggestions, best first."""
        _require(completions, "completions")
        if (prompt is None) == (template is None):
            raise ValueError("complete needs one of prompt= or template=")
        key = ("prompt", prompt, argument) if prompt is not None else ("resource-template", template, argument)

        def register(func):
            self._completers[key] = func
            return func

        return register

    def prompt(self, func=None, *, name: str | None = None):
        """Makes `func` a prompt; its parameters (strings) are the prompt's
        arguments, and it returns a message or a list of them."""

        _require(prompts, "prompts")

        def register(func):
            doc, described = _doc(func)
            arguments = [
                prompts.PromptArgument(
                    name=arg, title=None, description=described.get(arg),
                    required=param.default is inspect.Parameter.empty,
                )
                for arg, param in inspect.signature(func).parameters.items()
            ]
            entry = prompts.Prompt(name=name or func.__name__, title=None, description=doc,
                                   arguments=arguments, icons=[], meta=None)
            self._prompts[entry.name] = (entry, func)
            return func

        return register(func) if func is not None else register


# --- the key-value store (wasi:keyvalue) --------------------------------------

def _imported(interface: str):
    """The bindings of an interface the world imports, or None (a
    component built against a contract older than wasi:keyvalue)."""
    try:
        return importlib.import_module(f"wit_world.imports.{interface}")
    except ImportError:
        return None


_store = _imported("store")
_atomics = _imported("atomics")
_batch = _imported("batch")

# How often `update` and `add` try again when another writer changed the
# key between their read and their write.
UPDATE_RETRIES = 100
# Keys `items` reads with one get_many: well within the host's bounds on a
# batch's keys and bytes.
_ITEMS_CHUNK = 100


class KeyValueError(Exception):
    """A key-value operation the host refused or could not do; the message
    is the host's (a bound, a full quota, the store unreachable)."""


class AccessDenied(KeyValueError):
    """The plugin is not granted the store (`[plugins.NAME] keyvalue = true`
    in the host's config)."""


def _error(error) -> KeyValueError:
    if isinstance(error, _store.Error_AccessDenied):
        return AccessDenied("this plugin is not granted the key-value store "
                            "([plugins.NAME] keyvalue = true in the host's config)")
    if isinstance(error, _store.Error_NoSuchStore):
        return KeyValueError("no such key-value store")
    return KeyValueError(error.value)


def _call(func, *args):
    try:
        return func(*args)
    except Err as e:
        raise _error(e.value) from None


def _bytes(value) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"a key-value value is bytes or str, not {type(value).__name__}")


_UNREAD = object()


class Snapshot:
    """A key's value as `KeyValue.snapshot` read it, to write with
    `compare_and_swap` only if nobody wrote the key since."""

    __slots__ = ("key", "_cas", "_value")

    def __init__(self, key: str, cas):
        self.key = key
        self._cas = cas
        self._value = _UNREAD

    @property
    def value(self) -> bytes | None:
        """The value read (None: the key had none)."""
        if self._value is _UNREAD:
            if self._cas is None:
                raise KeyValueError(f"the snapshot of {self.key!r} was written already")
            self._value = _call(self._cas.current)
        return self._value


class KeyValue:
    """One bucket of the plugin's key-value store: its data of the calling
    tenant, kept by the host (on every replica the same).

        kv = KeyValue.open()
        kv.set("greeting", "hello")
        kv.get("greeting")                        # b"hello"
        kv.increment("visits")                    # 1, then 2, ...
        kv.update("names", lambda old: (old or b"") + b"Ann\\n")

    Open it in the call that uses it. Every method is one atomic operation
    of the host's (batches included: all or nothing), and raises
    `KeyValueError` with the host's text when refused (`AccessDenied` when
    the plugin is not granted the store). Keys are strings; values bytes
    (a str is stored as UTF-8). The host bounds key and value sizes, the
    keys in one page or batch, the operations in one call and what a
    tenant may keep; over a bound, the operation fails and writes nothing.
    """

    def __init__(self, bucket, name: str):
        self._bucket = bucket
        self.name = name

    @classmethod
    def open(cls, name: str = "default") -> "KeyValue":
        """The bucket `name` (made on first write)."""
        if _store is None:
            raise KeyValueError("this component was built without wasi:keyvalue: build it "
                                "against a contract that imports it (`wasm-mcp wit`)")
        return cls(_call(_store.open, name), name)

    def get(self, key: str) -> bytes | None:
        """The value of `key`, None when it has none."""
        return _call(self._bucket.get, key)

    def set(self, key: str, value: bytes | str) -> None:
        """Sets `key` to `value`."""
        _call(self._bucket.set, key, _bytes(value))

    def delete(self, key: str) -> None:
        """Deletes `key` (no error when it has no value)."""
        _call(self._bucket.delete, key)

    def exists(self, key: str) -> bool:
        """Whether `key` has a value."""
        return _call(self._bucket.exists, key)

    def __contains__(self, key: str) -> bool:
        return self.exists(key)

    def increment(self, key: str, delta: int = 1) -> int:
        """Adds `delta` to the integer at `key` (0 when it has none), kept as
        decimal text, and returns the sum: a counter every writer shares."""
        return _call(_atomics.increment, self._bucket, key, delta)

    def keys(self, prefix: str | None = None):
        """Every key (starting with `prefix`), page by page as the host
        lists them; a key written meanwhile may or may not be in it."""
        for page in self._pages():
            yield from (k for k in page if prefix is None or k.startswith(prefix))

    def items(self, prefix: str | None = None):
        """Every (key, value) pair (keys starting with `prefix`), their
        values read a batch at a time."""
        for page in self._pages():
            wanted = [k for k in page if prefix is None or k.startswith(prefix)]
            for start in range(0, len(wanted), _ITEMS_CHUNK):
                yield from self.get_many(wanted[start:start + _ITEMS_CHUNK]).items()

    def _pages(self):
        cursor = None
        while True:
            page = _call(self._bucket.list_keys, cursor)
            yield page.keys
            cursor = page.cursor
            if cursor is None:
                return

    def get_many(self, keys: list[str]) -> dict[str, bytes]:
        """The keys that have a value, with it, in the order asked (at most
        a page of keys)."""
        found = _call(_batch.get_many, self._bucket, list(keys))
        return {pair[0]: pair[1] for pair in found if pair is not None}

    def set_many(self, items) -> None:
        """Sets every (key, value) of `items` (a dict or pairs): all or none."""
        pairs = items.items() if hasattr(items, "items") else items
        _call(_batch.set_many, self._bucket, [(k, _bytes(v)) for k, v in pairs])

    def delete_many(self, keys) -> None:
        """Deletes every key: all or none."""
        _call(_batch.delete_many, self._bucket, list(keys))

    def snapshot(self, key: str) -> Snapshot:
        """`key`'s value (`.value`), to write back with `compare_and_swap`."""
        return Snapshot(key, _call(_atomics.Cas.new, self._bucket, key))

    def compare_and_swap(self, snapshot: Snapshot, value: bytes | str) -> bool:
        """Writes `value` if the key is unchanged since `snapshot` was read.
        True if it did; False if another writer came first: the snapshot
        then holds the newer value, ready to try again."""
        if snapshot._cas is None:
            raise KeyValueError(f"the snapshot of {snapshot.key!r} was written already")
        cas, snapshot._cas = snapshot._cas, None
        try:
            _atomics.swap(cas, _bytes(value))
        except Err as e:
            if isinstance(e.value, _atomics.CasError_CasFailed):
                snapshot._cas, snapshot._value = e.value.value, _UNREAD
                return False
            raise _error(e.value.value) from None
        snapshot._value = _bytes(value)
        return True

    def update(self, key: str, change, retries: int = UPDATE_RETRIES) -> bytes | None:
        """Read-modify-write, safe against every other writer: `change(old)`
        (old: the value, or None) returns the new value, or None to write
        nothing; it runs again on the newer value whenever another writer
        came first (so it should only compute). Returns what was written,
        or None. Fails after `retries` lost races."""
        snapshot = self.snapshot(key)
        for _ in range(retries):
            new = change(snapshot.value)
            if new is None:
                return None
            if self.compare_and_swap(snapshot, new):
                return _bytes(new)
        raise KeyValueError(f"{key!r} changed {retries} times while being updated; nothing was written")

    def add(self, key: str, value: bytes | str) -> bool:
        """Sets `key` only if it has no value; whether it did."""
        return self.update(key, lambda old: value if old is None else None) is not None
