#!/usr/bin/env python3
"""Benchmark (not a test): tools/call requests per second on the stateless
2026-07-28 wire with a trivial Rust tool (hello's `greet`), against a bare
axum JSON echo endpoint measured in the same run on the same machine.

    cargo build --release --example http_bench
    .cache/venv/bin/python scripts/bench-http.py [SECONDS] [CONNECTIONS]
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECONDS = sys.argv[1] if len(sys.argv) > 1 else "10"
CONNECTIONS = sys.argv[2] if len(sys.argv) > 2 else "32"
BENCH = ROOT / "target/release/examples/http_bench"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def start(args):
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    url = proc.stdout.readline().decode().strip()
    assert url.startswith("http://"), url
    return proc, url


def load(url, body_file, headers):
    out = subprocess.run([str(BENCH), "load", url, str(body_file), SECONDS, CONNECTIONS, *headers],
                         capture_output=True, text=True, check=True).stdout.split()
    done, errors = int(out[0]), int(out[1])
    assert errors == 0, f"{errors} errors"
    return done / float(SECONDS)


def main() -> None:
    subprocess.run(["cargo", "build", "--release", "--quiet", "--example", "http_bench"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        config = tmp / "config.toml"
        config.write_text(f'[server]\ncache_dir = "{tmp}"\nwatch = false\n')
        plugins = tmp / "plugins"
        plugins.mkdir()
        (plugins / "hello.wasm").write_bytes((ROOT / "dist/plugins/hello.wasm").read_bytes())
        body = tmp / "call.json"
        body.write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "greet", "arguments": {"name": "bench"}, "_meta": META}}))
        headers = ["MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: greet"]

        echo, echo_url = start([str(BENCH), "echo", "127.0.0.1:0"])
        host, host_url = start([str(ROOT / "target/release/wasm-mcp"), "serve", "--plugins", str(plugins),
                                "--config", str(config), "--http", "127.0.0.1:0"])
        try:
            load(host_url, body, headers)  # warm-up
            echo_rps = load(echo_url, body, headers)
            host_rps = load(host_url, body, headers)
        finally:
            echo.terminate()
            host.terminate()
    print(f"{CONNECTIONS} keep-alive connections, {SECONDS} s each")
    print(f"bare axum JSON echo:          {echo_rps:10.0f} requests/s")
    print(f"wasm-mcp tools/call (greet):  {host_rps:10.0f} requests/s")
    print(f"ratio host/echo:              {host_rps / echo_rps:10.3f}")


if __name__ == "__main__":
    main()
