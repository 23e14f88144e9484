"""Example tools written in Python: count words and reverse text.

Built into a component with componentize-py against the `tools-plugin`
world of wit/plugin.wit (see scripts/build); wasm_mcp.py (a copy of
sdk-python/wasm_mcp.py, as `wasm-mcp new python` makes) turns the
functions below into the contract's records.
"""

from wasm_mcp import Plugin
from wit_world.imports import host, types

plugin = Plugin()


@plugin.tool
def word_count(text: str) -> str:
    """Counts the words in a text.

    Args:
        text: The text to work on.
    """
    count = len(text.split())
    host.log(types.LogLevel.INFO, f"counted {count} words")
    return str(count)


@plugin.tool
def reverse(text: str) -> str:
    """Reverses a text.

    Args:
        text: The text to work on.
    """
    return text[::-1]


Tools = plugin.Tools
