#!/usr/bin/env python3
"""How quickly a new author gets a served tool, per language: the time from
`wasm-mcp new LANG` to the first answered `greet` under `wasm-mcp dev`, and
from an edit of the tool's description to `notifications/tools/list_changed`.
C and Go, which `dev` does not build, run the folder's `./build.sh` instead
(served by `serve --plugins FOLDER`, which reloads the rebuilt file): new ->
build.sh -> served, and edit -> build.sh -> list_changed.

    .cache/venv/bin/python scripts/bench-new.py [--cold-rust]

Run after scripts/test (it uses the toolchains that installs). Rust reuses
the dev tests' Cargo target folder unless --cold-rust gives it an empty one.
"""

import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest import BINARY, RawHost  # noqa: E402

FILES = {"rust": "src/lib.rs", "python": "app.py", "js": "app.js", "c": "plugin.c", "go": "wit/world.wit"}
DESCRIPTION = {"rust": '"Says hello to someone"', "python": "Says hello to someone.", "js": '"Says hello to someone"',
               "c": '"Says hello to someone."', "go": "func(name: string)"}
EDITED = {"go": "func(who: string)"}


def main() -> None:
    tmp = pathlib.Path(tempfile.mkdtemp())
    (tmp / "config.toml").write_text(f'[server]\ncache_dir = "{tmp}/cache"\n')
    target = tmp / "target" if "--cold-rust" in sys.argv else ROOT / ".cache" / "dev-test-target"
    tools = (f"{ROOT}/plugins/shout-js/node_modules/.bin:{ROOT}/.cache/venv/bin:{ROOT}/.cache/cargo/bin:"
             f"{BINARY.parent}")
    env = dict(os.environ, WASM_MCP_CONFIG=str(tmp / "config.toml"), CARGO_TARGET_DIR=str(target),
               PATH=f"{tools}:{os.environ['PATH']}", XDG_STATE_HOME=str(tmp / "state"),
               GOTOOLCHAIN="local", GOPROXY="off")
    languages = [("rust", "bench-rust"), ("python", "bench_python"), ("js", "bench-js"), ("c", "bench-c"),
                 ("go", "bench-go")]
    for language, name in languages:
        started = time.monotonic()
        subprocess.run([str(BINARY), "new", language, name, "--dir", str(tmp)], check=True, env=env,
                       capture_output=True)
        folder = tmp / name
        built_by_hand = language in ("c", "go")
        if built_by_hand:
            subprocess.run([str(folder / "build.sh")], check=True, env=env, capture_output=True)
            host = RawHost(folder, env)
        else:
            host = RawHost(None, env, ["dev", str(folder)])
        try:
            host.initialize(timeout=900)
            greet = host.request("tools/call", {"name": "greet", "arguments": {"name": "x"}}, timeout=120)
            assert greet["result"]["content"][0]["text"] == "Hello, x!", greet
            served = time.monotonic() - started
            source = tmp / name / FILES[language]
            text = source.read_text()
            edited = time.monotonic()
            edit = EDITED.get(language, DESCRIPTION[language].replace("hello", "hi"))
            assert DESCRIPTION[language] in text
            source.write_text(text.replace(DESCRIPTION[language], edit))
            if built_by_hand:
                subprocess.run([str(folder / "build.sh")], check=True, env=env, capture_output=True)
            while host.read(600).get("method") != "notifications/tools/list_changed":
                pass
            print(f"{language}: new -> served tool {served:.1f} s; "
                  f"edit -> list_changed {time.monotonic() - edited:.1f} s", flush=True)
        finally:
            host.close()


if __name__ == "__main__":
    main()
