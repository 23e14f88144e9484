"""{{name}}: a wasm-mcp plugin in Python with one tool.

Built with componentize-py against the `tools-plugin` world of
wit/plugin.wit (see README.md).
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import tools
from wit_world.imports import types


def text(value: str) -> types.Content:
    return types.Content_Text(types.TextContent(text=value, annotations=None, meta=None))


GREET_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Who to greet."}},
    "required": ["name"],
}


class Tools(exports.Tools):
    def list_tools(self) -> list[tools.Tool]:
        return [
            tools.Tool(
                name="greet",
                title=None,
                description="Says hello to someone",
                input_schema=json.dumps(GREET_SCHEMA),
                output_schema=None,
                annotations=None,
                task_support=tools.TaskSupport.FORBIDDEN,
                icons=[],
                meta=None,
            )
        ]

    def call_tool(self, name: str, arguments: str) -> tools.CallResult:
        if name != "greet":
            raise Err(types.Error_NotFound(f"no tool named {name}"))
        who = json.loads(arguments)["name"]
        return tools.CallResult(
            content=[text(f"Hello, {who}!")], structured_content=None, is_error=False, meta=None
        )
