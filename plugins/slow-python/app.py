"""A long-running example tool written in Python: it counts the seconds
of a job, reporting progress at each, runs as an MCP task where the
client can take one, and stops when cancelled. The job to try tasks,
cancelling and replicas with (the book's "Several replicas" kills one
under it).

Built into a component with componentize-py against the `tools-plugin`
world of wit/plugin.wit (see scripts/build); wasm_mcp.py (a copy of
sdk-python/wasm_mcp.py, as `wasm-mcp new python` makes) turns the
function below into the contract's records.
"""

import time

from wasm_mcp import Plugin, ToolError
from wit_world.imports import host

plugin = Plugin()

# The longest job one call may ask for, in seconds (the host's
# call_timeout_ms stops a call sooner: 60 s unless the operator says more).
MAX_SECONDS = 3600


@plugin.tool(task_support="optional")
def slow_count(seconds: int = 30) -> str:
    """Counts for `seconds` seconds, one step a second, reporting progress at each step: a long job that runs as a task when the client can take one, and stops when cancelled.

    Args:
        seconds: How long the job lasts, 1 to 3600 seconds.
    """
    if not 1 <= seconds <= MAX_SECONDS:
        raise ToolError(f"seconds is 1 to {MAX_SECONDS}, not {seconds}")
    # The client gets a task at once (where it can take one) rather than
    # waiting for the whole job.
    host.continue_as_task()
    for step in range(seconds):
        if host.is_cancelled():
            raise ToolError(f"cancelled after {step} of {seconds} seconds")
        host.progress(float(step), float(seconds), f"{step} of {seconds} seconds counted")
        time.sleep(1)
    host.progress(float(seconds), float(seconds), f"{seconds} of {seconds} seconds counted")
    return f"Counted {seconds} seconds"


Tools = plugin.Tools
