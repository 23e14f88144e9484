"""Code mode in Python: one tool, `run_python`, that runs a script which
calls the other plugins' tools as Python functions.

Built into a component with componentize-py against the
`tools-calling-plugin` world of wit/plugin.wit (see scripts/build), as
dist/plugins/code.wasm; the tools a script reaches are those the
operator's `[plugins.code] call_tools` grants and the caller may use
(none without the grant: then `tools.call` raises the host's refusal).
runner.py runs the script (and runs under plain CPython too);
wasm_mcp.py is a copy of sdk-python/wasm_mcp.py, as `wasm-mcp new
python` makes.
"""

import json

from componentize_py_types import Err
from wasm_mcp import Plugin, result
from wit_world.imports import tool_calls

import runner
import stdlib  # noqa: F401 (the modules scripts may import)

plugin = Plugin()


def _call_tool(name: str, arguments: str) -> str:
    """The host's call-tool; a call that did not run raises ToolError."""
    try:
        return tool_calls.call_tool(name, arguments)
    except Err as error:
        raise runner.ToolError(error.value.message, code=error.value.code) from None


@plugin.tool(name="run_python", title="Run Python", description=runner.DESCRIPTION,
             input_schema=runner.INPUT_SCHEMA, output_schema=runner.OUTPUT_SCHEMA,
             task_support="optional")
def run_python(script: str):
    outcome = runner.run(script, tool_calls.search_tools, _call_tool)
    if outcome["ok"]:
        structured = {"result": outcome["result"], "output": outcome["output"]}
        return result(json.dumps(structured, ensure_ascii=False), structured)
    text = outcome["error"]
    if outcome["output"]:
        text += "\n\nPrinted before the error:\n" + outcome["output"]
    return result(text, is_error=True)


Tools = plugin.Tools
