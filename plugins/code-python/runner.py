"""The script runner of `run_python`: the `tools` object a script calls
tools through, and running a script (its `return`, its last expression,
its printed output, its uncaught exception).

Plain Python, free of the component's bindings: `run` gets the host's
`search-tools` and `call-tool` as two functions, so the runner also runs
(and is checked) under ordinary CPython.
"""

import ast
import builtins
import contextlib
import importlib
import io
import json
import keyword
import linecache
import re
import traceback

__all__ = ["DESCRIPTION", "INPUT_SCHEMA", "OUTPUT_SCHEMA", "ToolError", "Tools", "run"]

# The longest script taken (characters).
MAX_SCRIPT = 100_000
# The most printed output kept (UTF-8 bytes); the rest is cut, with a note.
MAX_OUTPUT = 64 * 1024
# The most of a traceback kept: its last lines, then its last characters.
MAX_TRACEBACK_LINES = 40
MAX_TRACEBACK_CHARS = 8_000
# The most tools one search-tools asks for (the host's cap).
CATALOGUE = 100
# The most characters of a tool's description in a signature line.
MAX_SUMMARY = 120

# The file name scripts run under, in tracebacks.
SCRIPT = "<script>"
# The function a script's body becomes.
_FUNCTION = "__wasm_mcp_script__"
_IMPORT_STAR = "__wasm_mcp_import_star__"

DESCRIPTION = """\
Runs a Python 3 script in a sandbox and returns its result. The tools you \
may use are functions of `tools`: `tools.<plugin>.<tool>(arg=value, ...)` \
(names as identifiers: `-` and other characters become `_`; positional \
arguments go in the order the signature shows; None leaves an optional \
argument out), or `tools.call("tool_name", {"arg": value})`. A call returns \
the tool's structured content when it has some (a dict: print one to see \
its shape), else its text (a str). A \
refused call or a failed tool raises `ToolError` (`.message`; `.code`: the \
JSON-RPC error code, None when the tool itself failed), which the script \
may catch. Find tools with `tools.search("words", limit=20)`: a list of \
one-line signatures such as `notes.add_note(text: str, tags: list[str] = \
None) — Adds a note`, best matches first ("" lists all); the server's `search_tools` tool, when offered, finds the same \
tools. `dir(tools)` lists the plugins, `dir(tools.<plugin>)` their tools. \
The result is the script's `return` value, else the value of its last \
expression (JSON; other values as their repr); what it prints (at most 64 \
KiB) comes back as `output`. An uncaught exception makes a tool error \
holding the traceback and the output. Common standard modules import \
(json, re, math, datetime, collections, itertools, statistics, csv, \
decimal, sqlite3, ...); files and the network only through tools. Every \
run starts afresh."""

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "script": {
            "type": "string",
            "maxLength": MAX_SCRIPT,
            "description": "Python source; `return` (or a last expression) gives the result.",
        },
    },
    "required": ["script"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "result": {"description": "What the script returned (its repr when JSON cannot hold it)."},
        "output": {"type": "string", "description": "What the script printed."},
    },
    "required": ["result", "output"],
}


class ToolError(Exception):
    """A tool call that did not run (`code`: the JSON-RPC error code the
    host gave) or a tool that failed (`code` is None; `result` is its
    CallToolResult)."""

    def __init__(self, message: str, code: int | None = None, result: dict | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.result = result

    def __str__(self) -> str:
        return self.message if self.code is None else f"{self.message} (code {self.code})"


# Tracebacks and reprs name it as scripts do: `ToolError`, not `runner.ToolError`.
ToolError.__module__ = "builtins"


# ---------------------------------------------------------------- naming

def identifier(name: str) -> str:
    """`name` as a Python identifier: other characters become `_`, a
    leading digit or a keyword gets one more `_`."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII) or "_"
    if ident[0].isdigit():
        ident = "_" + ident
    if keyword.iskeyword(ident):
        ident += "_"
    return ident


# ------------------------------------------------------------ signatures

_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
          "null": "None", "object": "dict", "array": "list"}


def _type(schema, depth: int = 0) -> str:
    """A Python-looking type for a JSON Schema."""
    if not isinstance(schema, dict) or depth > 3:
        return "Any"
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list):
        values = [json.dumps(v) for v in schema["enum"][:8]]
        return " | ".join(values + (["…"] if len(schema["enum"]) > 8 else [])) or "Any"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            members = []
            for member in schema[key]:
                rendered = _type(member, depth + 1)
                if rendered not in members:
                    members.append(rendered)
            return " | ".join(members) or "Any"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type(dict(schema, type=k), depth + 1) for k in kind) or "Any"
    if kind == "array" and isinstance(schema.get("items"), dict) and schema["items"]:
        return f"list[{_type(schema['items'], depth + 1)}]"
    return _TYPES.get(kind, "Any")


def _summary(description: str | None) -> str:
    """The first sentence of a description, bounded."""
    line = " ".join((description or "").strip().split("\n\n")[0].split())
    line = re.split(r"(?<=[.!?]) (?=[A-Z])", line, maxsplit=1)[0]
    return line if len(line) <= MAX_SUMMARY else line[: MAX_SUMMARY - 1].rstrip() + "…"


class _Param:
    def __init__(self, name: str, schema, required: bool):
        self.name = name  # as the schema names it
        self.ident = identifier(name)  # as Python passes it
        self.schema = schema if isinstance(schema, dict) else {}
        self.required = required

    def render(self) -> str:
        text = f"{self.ident}: {_type(self.schema)}"
        if not self.required:
            text += " = " + (json.dumps(self.schema["default"]) if "default" in self.schema else "None")
        return text


def _params(schema) -> list[_Param]:
    """The parameters of an input schema: the required ones first, each
    group in the schema's order."""
    if not isinstance(schema, dict):
        return []
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = [n for n in schema.get("required") or [] if isinstance(n, str)]
    params = [_Param(n, properties.get(n), True) for n in required]
    params += [_Param(n, s, False) for n, s in properties.items() if n not in required]
    return params


# ----------------------------------------------------------------- tools

class _Catalogue:
    """The tools the caller may use, from search-tools, fetched when a
    script first needs them."""

    def __init__(self, search_tools, call_tool):
        self._search_tools = search_tools
        self._call_tool = call_tool
        self._plugins = None  # identifier -> {tool identifier -> function}
        self._names = {}  # "plugin.tool" identifiers -> the tool's name
        self.complete = True

    def _add(self, info) -> None:
        plugin = identifier(info.plugin)
        tools = self._plugins.setdefault(plugin, {})
        ident = identifier(info.name)
        if ident not in tools:  # the first of names that read the same wins
            tools[ident] = self._function(plugin, ident, info)
            self._names[f"{plugin}.{ident}"] = info.name

    def plugins(self) -> dict:
        if self._plugins is None:
            self._plugins = {}
            found = self._search_tools("", CATALOGUE)
            self.complete = len(found) < CATALOGUE
            for info in found:
                self._add(info)
        return self._plugins

    def find(self, plugin: str, ident: str):
        tools = self.plugins().get(plugin, {})
        if ident not in tools and not self.complete:
            # More tools than one search returns: look for this one.
            for info in self._search_tools(" ".join(w for w in ident.split("_") if w), CATALOGUE):
                if identifier(info.plugin) == plugin and identifier(info.name) == ident:
                    self._add(info)
            tools = self.plugins().get(plugin, {})
        return tools.get(ident)

    def name_of(self, name: str) -> str:
        """The tool's name for `name`, which may be `plugin.tool` as
        signatures show it."""
        self.plugins()
        return self._names.get(name, name)

    def call(self, name: str, arguments: dict):
        """Calls tool `name`: its structured content, else its text."""
        if not isinstance(arguments, dict):
            raise TypeError(f"a tool's arguments are a dict, not {type(arguments).__name__}")
        result = json.loads(self._call_tool(name, json.dumps(arguments)))
        content = result.get("content") or []
        texts = [c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"]
        if result.get("isError"):
            raise ToolError("\n".join(texts) or f"the tool {name} failed", result=result)
        if result.get("structuredContent") is not None:
            return result["structuredContent"]
        if texts or not content:
            return "\n".join(texts)
        return content

    def _function(self, plugin: str, ident: str, info):
        try:
            schema = json.loads(info.input_schema)
        except ValueError:
            schema = {}
        params = _params(schema)
        by_ident = {p.ident: p for p in params}
        qualname = f"{plugin}.{ident}"
        catalogue = self
        name = info.name

        def tool(*args, **kwargs):
            if len(args) > len(params):
                raise TypeError(f"{qualname}() takes at most {len(params)} positional arguments "
                                f"({len(args)} given)")
            arguments = {}
            for param, value in zip(params, args):
                if value is not None or param.required:
                    arguments[param.name] = value
            for key, value in kwargs.items():
                param = by_ident.get(key)
                real = param.name if param is not None else key
                if real in arguments:
                    raise TypeError(f"{qualname}() got multiple values for argument {key!r}")
                if value is None and param is not None and not param.required:
                    continue  # None leaves an optional argument out
                arguments[real] = value
            return catalogue.call(name, arguments)

        tool.__name__ = ident
        tool.__qualname__ = qualname
        tool.signature = f"{qualname}({', '.join(p.render() for p in params)})"
        tool.__doc__ = (tool.signature + "\n\n" + (info.description or "")).strip()
        tool.tool_name = name
        tool.input_schema = schema
        return tool


class _Plugin:
    """The tools of one plugin, as attributes."""

    def __init__(self, catalogue: _Catalogue, ident: str):
        self._catalogue = catalogue
        self._ident = ident

    def __getattr__(self, ident: str):
        if ident.startswith("__"):
            raise AttributeError(ident)
        found = self._catalogue.find(self._ident, ident)
        if found is None:
            raise AttributeError(f"no tool tools.{self._ident}.{ident} you may use "
                                 f"(tools.search(...) finds them)")
        return found

    def __getitem__(self, name: str):
        try:
            return getattr(self, identifier(name))
        except AttributeError as error:
            raise KeyError(name) from error

    def __dir__(self):
        return sorted(self._catalogue.plugins().get(self._ident, {}))

    def __repr__(self) -> str:
        return f"<tools.{self._ident}: {', '.join(self.__dir__())}>"


class Tools:
    """`tools` of a script: `tools.<plugin>.<tool>(...)`, `tools.call`,
    `tools.search`."""

    def __init__(self, search_tools, call_tool):
        self._catalogue = _Catalogue(search_tools, call_tool)
        self._search_tools = search_tools

    def __getattr__(self, ident: str):
        if ident.startswith("__"):
            raise AttributeError(ident)
        plugins = self._catalogue.plugins()
        if ident not in plugins and self._catalogue.complete:
            raise AttributeError(f"no plugin tools.{ident} with tools you may use "
                                 f"(tools.search(...) finds them)")
        return _Plugin(self._catalogue, ident)

    def __getitem__(self, name: str):
        """The plugin `name` (even one named `call` or `search`)."""
        try:
            return Tools.__getattr__(self, identifier(name))
        except AttributeError as error:
            raise KeyError(name) from error

    def __dir__(self):
        return ["call", "search"] + sorted(self._catalogue.plugins())

    def __repr__(self) -> str:
        return f"<tools: {', '.join(sorted(self._catalogue.plugins()))}>"

    def call(self, name: str, arguments: dict | None = None, /, **kwargs):
        """Calls the tool `name` (as listed, or `plugin.tool` as signatures
        show it) with `arguments` (or the keyword arguments)."""
        if arguments is None:
            arguments = kwargs
        elif kwargs:
            raise TypeError("tools.call takes the arguments as a dict or as keywords, not both")
        return self._catalogue.call(self._catalogue.name_of(name), arguments)

    def search(self, query: str = "", limit: int = 20) -> list[str]:
        """One line per matching tool: `plugin.tool(params) — description`."""
        found = self._search_tools(str(query), max(0, min(int(limit), CATALOGUE)))
        lines = []
        for info in found:
            plugin = identifier(info.plugin)
            function = self._catalogue.find(plugin, identifier(info.name))
            if function is None or function.tool_name != info.name:
                # Not reachable as an attribute (its identifier is taken).
                line = f'tools.call({json.dumps(info.name)}, {{...}})'
            else:
                line = function.signature
            summary = _summary(info.description)
            lines.append(f"{line} — {summary}" if summary else line)
        return lines


# ---------------------------------------------------------------- running

class _Output(io.TextIOBase):
    """Printed text, kept up to `limit` UTF-8 bytes."""

    def __init__(self, limit: int):
        self._parts: list[str] = []
        self._left = limit
        self.cut = False

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.cut:
            return len(text)
        encoded = text.encode("utf-8", "surrogatepass")
        if len(encoded) <= self._left:
            self._parts.append(text)
            self._left -= len(encoded)
        else:
            self._parts.append(encoded[: self._left].decode("utf-8", "ignore"))
            self._left = 0
            self.cut = True
        return len(text)

    def text(self) -> str:
        printed = "".join(self._parts)
        if self.cut:
            printed += f"\n[output cut: more than {MAX_OUTPUT // 1024} KiB was printed]"
        return printed


class _TopLevel(ast.NodeTransformer):
    """Makes a module's statements fit a function body: a top-level
    `global` goes, an annotated name is assigned plainly (a global name
    cannot be annotated in a function), `from m import *` becomes a call."""

    def visit_FunctionDef(self, node):
        return node  # its own scope

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_Global(self, node):
        return ast.copy_location(ast.Pass(), node)

    def visit_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            return node
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        target = ast.Name(id=node.target.id, ctx=ast.Store())
        return ast.copy_location(ast.Assign(targets=[ast.copy_location(target, node.target)],
                                            value=node.value), node)

    def visit_ImportFrom(self, node):
        if not any(alias.name == "*" for alias in node.names):
            return node
        call = ast.Call(func=ast.Name(id=_IMPORT_STAR, ctx=ast.Load()),
                        args=[ast.Constant(value=node.module or ""), ast.Constant(value=node.level)],
                        keywords=[])
        return ast.copy_location(ast.Expr(value=call), node)


def _bound(tree) -> set[str]:
    """Every name the script binds anywhere. Declaring all of them global
    in the function the script becomes keeps its top-level names the
    module's globals; for a name bound only in an inner scope the
    declaration changes nothing."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def _compile(script: str):
    """The script as a module defining one function: its body, with its
    last expression returned."""
    tree = ast.parse(script, SCRIPT, "exec")
    names = _bound(tree)
    body = [_TopLevel().visit(statement) for statement in tree.body]
    if body and isinstance(body[-1], ast.Expr):
        body[-1] = ast.copy_location(ast.Return(value=body[-1].value), body[-1])
    function = ast.parse(f"def {_FUNCTION}():\n    pass\n").body[0]
    function.body = ([ast.Global(names=sorted(names))] if names else []) + (body or [ast.Pass()])
    module = ast.Module(body=[function], type_ignores=[])
    ast.fix_missing_locations(module)
    return compile(module, SCRIPT, "exec")


def _import_star(module: str, level: int) -> dict:
    """The names `from module import *` binds."""
    if level:
        raise ImportError("a script has no package to import from relatively")
    imported = importlib.import_module(module)
    public = getattr(imported, "__all__", None)
    if public is None:
        public = [n for n in vars(imported) if not n.startswith("_")]
    return {n: getattr(imported, n) for n in public}


def jsonable(value, depth: int = 0):
    """`value` as JSON can hold it: what JSON cannot hold as its repr."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else repr(value)
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if depth < 64 and isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if depth < 64 and isinstance(value, dict) and all(
            k is None or isinstance(k, (str, int, float, bool)) for k in value):
        return {k if isinstance(k, str) else json.dumps(k): jsonable(v, depth + 1) for k, v in value.items()}
    try:
        return repr(value)
    except Exception as error:  # a repr that fails
        return f"<{type(value).__name__} object (repr failed: {type(error).__name__})>"


def _traceback(error: BaseException, hidden: set[str]) -> str:
    """The traceback of an uncaught exception from the script's own frame
    on, without the runner's frames, bounded to its last lines."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != SCRIPT:
        tb = tb.tb_next
    report = traceback.TracebackException(type(error), error, tb, compact=True)
    seen = set()
    pending = [report]
    while pending:
        part = pending.pop()
        if part is None or id(part) in seen:
            continue
        seen.add(id(part))
        frames = [f for f in part.stack if f.filename not in hidden]
        for frame in frames:
            if frame.name == _FUNCTION:
                frame.name = "<module>"
        part.stack = traceback.StackSummary.from_list(frames)
        pending += [part.__cause__, part.__context__] + list(getattr(part, "exceptions", None) or [])
    lines = "".join(report.format()).splitlines()
    cut = len(lines) > MAX_TRACEBACK_LINES
    text = "\n".join(lines[-MAX_TRACEBACK_LINES:])
    if len(text) > MAX_TRACEBACK_CHARS:
        text, cut = text[-MAX_TRACEBACK_CHARS:], True
    return ("[traceback cut to its end]\n" if cut else "") + text


def _clean(text: str) -> str:
    """`text` without lone surrogates (which neither JSON nor the
    component model's strings hold)."""
    return text.encode("utf-8", "replace").decode("utf-8")


def run(script: str, search_tools, call_tool) -> dict:
    """Runs `script`. `search_tools(query, limit)` returns the host's
    tool-info records; `call_tool(name, arguments_json)` returns a
    CallToolResult as JSON or raises `ToolError`. The outcome:
    `{"ok": True, "result": ..., "output": ...}` or
    `{"ok": False, "error": traceback, "output": ...}`."""
    hidden = {run.__code__.co_filename}
    for function in (search_tools, call_tool):
        code = getattr(function, "__code__", None)
        if code is not None:
            hidden.add(code.co_filename)
    output = _Output(MAX_OUTPUT)
    namespace = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "tools": Tools(search_tools, call_tool),
        "ToolError": ToolError,
    }
    namespace[_IMPORT_STAR] = lambda module, level: namespace.update(_import_star(module, level))
    try:
        code = _compile(script)
    except (SyntaxError, ValueError) as error:  # ValueError: a NUL in the source
        text = "".join(traceback.format_exception_only(type(error), error)).rstrip()
        return {"ok": False, "error": _clean(text), "output": ""}
    linecache.cache[SCRIPT] = (len(script), None, script.splitlines(True), SCRIPT)
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            exec(code, namespace)
            value = namespace[_FUNCTION]()
    except SystemExit as stop:  # exit(): the end, an error unless its code is 0 or None
        if stop.code in (None, 0):
            return {"ok": True, "result": None, "output": _clean(output.text())}
        return {"ok": False, "error": f"SystemExit: {stop.code!r}", "output": _clean(output.text())}
    except BaseException as error:
        return {"ok": False, "error": _clean(_traceback(error, hidden)), "output": _clean(output.text())}
    finally:
        linecache.cache.pop(SCRIPT, None)
    # A round trip through JSON text drops lone surrogates anywhere in it.
    result = json.loads(_clean(json.dumps(jsonable(value), ensure_ascii=False)))
    return {"ok": True, "result": result, "output": _clean(output.text())}
