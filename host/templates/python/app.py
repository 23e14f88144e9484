"""{{name}}: a wasm-mcp plugin in Python with a tool, a resource, a resource
template, a prompt and completions for it.

Built with componentize-py (see README.md); wasm_mcp.py turns the functions
below into the contract's records.
"""

from wasm_mcp import Plugin

plugin = Plugin()


@plugin.tool
def greet(name: str) -> str:
    """Says hello to someone.

    Args:
        name: Who to greet.
    """
    return f"Hello, {name}!"


@plugin.resource("plugin://{{name}}/about")
def about() -> str:
    """What this plugin is."""
    return "{{name}} was made with wasm-mcp new."


@plugin.template("plugin://{{name}}/greeting/{who}")
def greeting(who: str) -> str:
    """A greeting for someone."""
    return f"Hello, {who}!"


@plugin.prompt
def introduce(speaker: str, sentences: str = "2") -> str:
    """Asks for an introduction.

    Args:
        speaker: Who is speaking.
        sentences: How many sentences.
    """
    return f"Introduce {speaker} in {sentences} sentences."


@plugin.complete(prompt="introduce", argument="speaker")
def speakers(typed: str, context: dict) -> list[str]:
    """Suggests speakers that start with what was typed."""
    return [name for name in ("Ada", "Alan", "Grace") if name.startswith(typed)]


Tools = plugin.Tools
Resources = plugin.Resources
Prompts = plugin.Prompts
Completions = plugin.Completions
