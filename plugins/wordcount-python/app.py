"""Example tools written in Python: count words and reverse text.

Built into a component with componentize-py against the `tools-plugin`
world of wit/plugin.wit (see scripts/build).
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports import tools
from wit_world.imports import host, types


def _text(text: str) -> types.Content:
    return types.Content_Text(types.TextContent(text=text, annotations=None, meta=None))


def _schema(properties: dict, required: list) -> str:
    return json.dumps({"type": "object", "properties": properties, "required": required})


TEXT_ARG = {"text": {"type": "string", "description": "The text to work on."}}


class Tools(exports.Tools):
    def list_tools(self) -> list[tools.Tool]:
        def tool(name: str, description: str) -> tools.Tool:
            return tools.Tool(
                name=name,
                title=None,
                description=description,
                input_schema=_schema(TEXT_ARG, ["text"]),
                output_schema=None,
                annotations=tools.ToolAnnotations(
                    title=None,
                    read_only_hint=True,
                    destructive_hint=None,
                    idempotent_hint=True,
                    open_world_hint=None,
                ),
                task_support=tools.TaskSupport.FORBIDDEN,
                icons=[],
                meta=None,
            )

        return [
            tool("word_count", "Counts the words in a text"),
            tool("reverse", "Reverses a text"),
        ]

    def call_tool(self, name: str, arguments: str) -> tools.CallResult:
        text = json.loads(arguments)["text"]
        if name == "word_count":
            count = len(text.split())
            host.log(types.LogLevel.INFO, f"counted {count} words")
            answer = str(count)
        elif name == "reverse":
            answer = text[::-1]
        else:
            raise Err(types.Error_NotFound(f"no tool named {name}"))
        return tools.CallResult(content=[_text(answer)], structured_content=None, is_error=False, meta=None)
