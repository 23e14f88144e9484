"""Runs the TypeScript SDK client tests (tests/ts, node:test) against the host."""

import shutil
import subprocess
from pathlib import Path

TS = Path(__file__).resolve().parent / "ts"


def test_typescript_sdk_over_stdio(all_plugins, host_env):
    from conftest import BINARY

    node = shutil.which("node", path=host_env.get("PATH"))
    assert node, "node is not on PATH (scripts/test installs it)"
    env = dict(host_env, WASM_MCP_BINARY=str(BINARY), WASM_MCP_PLUGINS=str(all_plugins))
    run = subprocess.run(
        [node, "--test", "--test-reporter=spec", "stdio.test.mjs"],
        cwd=TS, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert "fail 0" in run.stdout, run.stdout[-2000:]
