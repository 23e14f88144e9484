#!/usr/bin/env python3
"""Adds the WIT doc comments of a world to a component built from it.

    wit-docs.py WIT_DIR COMPONENT.wasm

Toolchains drop WIT docs when they build a component. This reads them
with `wasm-tools component wit WIT_DIR --json` and appends them to the
component as a `package-docs` custom section (wit-parser's format: a
version byte, then JSON), where wasm-mcp finds the descriptions of a
plain component's tools. Needs wasm-tools on PATH.
"""

import json
import subprocess
import sys


def leb128(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def docs_of(item: dict) -> dict:
    text = (item.get("docs") or {}).get("contents")
    return {"docs": text} if text else {}


def package_docs(resolve: dict) -> dict:
    worlds, interfaces = {}, {}
    for world in resolve["worlds"]:
        funcs = {
            name: docs_of(export["function"])
            for name, export in world.get("exports", {}).items()
            if "function" in export and docs_of(export["function"])
        }
        entry = docs_of(world)
        if funcs:
            entry["funcs"] = funcs
        if entry:
            worlds[world["name"]] = entry
    for interface in resolve["interfaces"]:
        if not interface.get("name"):
            continue
        funcs = {name: docs_of(f) for name, f in interface.get("functions", {}).items() if docs_of(f)}
        entry = docs_of(interface)
        if funcs:
            entry["funcs"] = funcs
        if entry:
            interfaces[interface["name"]] = entry
    return {"worlds": worlds, "interfaces": interfaces}


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    wit_dir, component = sys.argv[1:]
    resolve = json.loads(
        subprocess.run(
            ["wasm-tools", "component", "wit", wit_dir, "--json"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    name = b"package-docs"
    body = leb128(len(name)) + name + b"\x01" + json.dumps(package_docs(resolve)).encode()
    with open(component, "ab") as f:
        f.write(b"\x00" + leb128(len(body)) + body)


if __name__ == "__main__":
    main()
