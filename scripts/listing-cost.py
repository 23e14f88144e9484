#!/usr/bin/env python3
"""What a folder of plugins' `tools/list` costs a model, estimated at about
4 bytes of JSON a token (as `wasm-mcp inspect` does per plugin), with tool
search off, offered beside the tools, or alone. Not a test.

    scripts/listing-cost.py [--binary target/release/wasm-mcp] [--plugins dist/plugins]
"""

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BYTES_PER_TOKEN = 4


def listing(binary: Path, plugins: Path, tool_search: str) -> list:
    """Every tool the host lists over stdio, all pages."""
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text("" if tool_search == "off" else f"[server]\ntool_search = {tool_search}\n")
        env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="error")
        host = subprocess.Popen([str(binary), "serve", "--plugins", str(plugins)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

        def ask(id_, method, params):
            host.stdin.write((json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                                          "params": params}) + "\n").encode())
            host.stdin.flush()
            while True:
                message = json.loads(host.stdout.readline())
                if message.get("id") == id_:
                    return message["result"]

        try:
            ask(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "listing-cost", "version": "1"}})
            tools, cursor, id_ = [], None, 2
            while True:
                page = ask(id_, "tools/list", {"cursor": cursor} if cursor else {})
                tools += page["tools"]
                cursor, id_ = page.get("nextCursor"), id_ + 1
                if not cursor:
                    return tools
        finally:
            host.terminate()
            host.wait(timeout=20)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", type=Path, default=ROOT / "target" / "release" / "wasm-mcp")
    parser.add_argument("--plugins", type=Path, default=ROOT / "dist" / "plugins")
    args = parser.parse_args()
    for mode in ("off", "true", '"only"'):
        tools = listing(args.binary, args.plugins, mode)
        size = len(json.dumps({"tools": tools}, separators=(",", ":")))
        print(f"tool_search = {mode:7} {len(tools):4} tools  {size:7} bytes  "
              f"~{-(-size // BYTES_PER_TOKEN)} tokens")


if __name__ == "__main__":
    main()
