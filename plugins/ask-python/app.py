"""A test fixture in Python: a tool that asks the user a question through
the host's `elicit` import and answers with what the user said, and one
that shows what an instance kept warm between calls remembers (a module
global), for the tests of which calls may share an instance.

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


def _result(text: str, is_error: bool = False) -> tools.CallResult:
    return tools.CallResult(content=[_text(text)], structured_content=None, is_error=is_error, meta=None)


# What the call before this one in the same instance left, if any.
_LAST_SEEN = ""


class Tools(exports.Tools):
    def list_tools(self) -> list[tools.Tool]:
        return [
            tools.Tool(
                name="last_seen",
                title=None,
                description="Answers the value the previous call in this instance left, and leaves its own",
                input_schema=json.dumps(
                    {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
                ),
                output_schema=None,
                annotations=None,
                task_support=tools.TaskSupport.FORBIDDEN,
                icons=[],
                meta=None,
            ),
            tools.Tool(
                name="ask_name",
                title=None,
                description="Asks the user for their name and greets them",
                input_schema=json.dumps({"type": "object", "properties": {}}),
                output_schema=None,
                annotations=None,
                task_support=tools.TaskSupport.FORBIDDEN,
                icons=[],
                meta=None,
            )
        ]

    def call_tool(self, name: str, arguments: str) -> tools.CallResult:
        global _LAST_SEEN
        if name == "last_seen":
            previous, _LAST_SEEN = _LAST_SEEN, json.loads(arguments)["value"]
            return _result(previous)
        if name != "ask_name":
            raise Err(types.Error_NotFound(f"no tool named {name}"))
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        request = host.ElicitationRequest(
            message="What is your name?", mode=host.ElicitationMode_Form(json.dumps(schema))
        )
        try:
            answer = host.elicit(request)
        except Err as e:
            return _result(f"could not ask: {e.value}", is_error=True)
        if answer.action != host.ElicitationAction.ACCEPT or answer.content is None:
            return _result("the user did not say")
        return _result(f"Hello from Python, {json.loads(answer.content)['name']}!")
