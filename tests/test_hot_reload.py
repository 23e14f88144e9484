"""Hot reload over stdio: the plugin folder changes while clients are connected."""

import json
import os
import shutil
import subprocess
import threading
import time

from conftest import BINARY, FIXTURES, PLUGINS, RawHost, modern_meta

LIST_CHANGED = {
    "tools": "notifications/tools/list_changed",
    "resources": "notifications/resources/list_changed",
    "prompts": "notifications/prompts/list_changed",
}


def custom_section(name: str, payload: bytes) -> bytes:
    """A wasm custom section: appended to a component it changes the bytes, not the behaviour."""

    def leb(n: int) -> bytes:
        out = bytearray()
        while True:
            byte = n & 0x7F
            n >>= 7
            out.append(byte | (0x80 if n else 0))
            if not n:
                return bytes(out)

    body = leb(len(name)) + name.encode() + payload
    return b"\x00" + leb(len(body)) + body


def rebuilt(plugin: str, tag: str) -> bytes:
    """The example plugin with different bytes and identical behaviour, like a rebuild."""
    return (PLUGINS / f"{plugin}.wasm").read_bytes() + custom_section("rebuild", tag.encode())


def replace_atomically(path, data: bytes) -> None:
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, path)


def notifications_until(host: RawHost, expected: set, timeout: float = 120.0) -> list:
    """Every notification up to and including the last of `expected` methods,
    starting with any that arrived while a response was awaited."""
    seen = [m for m in host.pending if "method" in m]
    host.pending[:] = [m for m in host.pending if "method" not in m]
    while not expected <= {m["method"] for m in seen}:
        message = host.read(timeout)
        if "method" in message:
            seen.append(message)
        else:
            host.pending.append(message)
    return seen


def methods(messages: list) -> list:
    return sorted(m["method"] for m in messages)


def start(tmp_path, host_env, *plugins: str, initialize: bool = True) -> RawHost:
    for name in plugins:
        shutil.copy(PLUGINS / f"{name}.wasm", tmp_path / f"{name}.wasm")
    host = RawHost(tmp_path, host_env)
    if initialize:
        host.initialize()
    return host


def assert_quiet(host: RawHost) -> None:
    """Nothing but the ping's response is waiting: no stray notification."""
    response = host.request("ping")
    assert response["result"] == {}
    stray = [m for m in host.pending if "method" in m]
    assert stray == []


def test_add_replace_and_remove_announce_exactly_the_lists_that_changed(tmp_path, host_env):
    host = start(tmp_path, host_env, "hello")
    try:
        # Add: notes brings resources, a template and a prompt, no tools.
        shutil.copy(PLUGINS / "notes.wasm", tmp_path / "notes.wasm")
        got = notifications_until(host, {LIST_CHANGED["resources"], LIST_CHANGED["prompts"]})
        assert methods(got) == sorted([LIST_CHANGED["resources"], LIST_CHANGED["prompts"]])
        uris = [r["uri"] for r in host.request("resources/list")["result"]["resources"]]
        assert uris == ["notes://index"]
        assert_quiet(host)

        # Replace: hello.wasm now holds the Python word counter.
        replace_atomically(tmp_path / "hello.wasm", (PLUGINS / "wordcount.wasm").read_bytes())
        got = notifications_until(host, {LIST_CHANGED["tools"]})
        assert methods(got) == [LIST_CHANGED["tools"]]
        names = [t["name"] for t in host.request("tools/list")["result"]["tools"]]
        assert names == ["word_count", "reverse"]
        result = host.request("tools/call", {"name": "reverse", "arguments": {"text": "abc"}})
        assert result["result"]["content"][0]["text"] == "cba"
        assert_quiet(host)

        # Remove.
        (tmp_path / "notes.wasm").unlink()
        got = notifications_until(host, {LIST_CHANGED["resources"], LIST_CHANGED["prompts"]})
        assert methods(got) == sorted([LIST_CHANGED["resources"], LIST_CHANGED["prompts"]])
        assert host.request("resources/list")["result"]["resources"] == []
        assert_quiet(host)
    finally:
        log = host.close()
    assert "plugin added" in log and "plugin reloaded" in log and "plugin removed" in log


def test_a_folder_named_by_a_relative_path_is_watched_too(tmp_path, host_env):
    """`--plugins plugins`, as a developer types it: a file added is loaded
    and announced (a relative folder was once never reloaded)."""
    shutil.copy(PLUGINS / "hello.wasm", tmp_path / "hello.wasm")
    relative = os.path.relpath(tmp_path)
    assert not os.path.isabs(relative)
    host = RawHost(None, host_env, ["serve", "--plugins", relative])
    try:
        host.initialize()
        shutil.copy(PLUGINS / "notes.wasm", tmp_path / "notes.wasm")
        notifications_until(host, {LIST_CHANGED["resources"]}, timeout=30)
        uris = [r["uri"] for r in host.request("resources/list")["result"]["resources"]]
        assert uris == ["notes://index"]
    finally:
        host.close()


def test_a_rebuild_with_identical_lists_sends_only_resource_updates(tmp_path, host_env):
    host = start(tmp_path, host_env, "hello", "notes")
    try:
        assert host.request("resources/subscribe", {"uri": "notes://note/todo"})["result"] == {}
        replace_atomically(tmp_path / "notes.wasm", rebuilt("notes", "1"))
        got = notifications_until(host, {"notifications/resources/updated"})
        assert got == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "notes://note/todo"},
            }
        ]
        assert_quiet(host)
        read = host.request("resources/read", {"uri": "notes://note/todo"})
        assert "write the README" in read["result"]["contents"][0]["text"]
        # Rewriting the same bytes is no change at all; the next real
        # rebuild (processed after it) shows the watcher went past it.
        replace_atomically(tmp_path / "notes.wasm", rebuilt("notes", "1"))
        time.sleep(0.3)
        replace_atomically(tmp_path / "notes.wasm", rebuilt("notes", "2"))
        got = notifications_until(host, {"notifications/resources/updated"})
        assert methods(got) == ["notifications/resources/updated"]
        assert_quiet(host)
    finally:
        log = host.close()
    assert log.count("plugin reloaded") == 2, log


def test_stateless_listen_streams_get_the_changes_they_asked_for(tmp_path, host_env):
    host = start(tmp_path, host_env, "hello", "notes", initialize=False)
    try:
        host.send(
            {
                "jsonrpc": "2.0",
                "id": "tools-only",
                "method": "subscriptions/listen",
                "params": {
                    "_meta": modern_meta(),
                    "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["notes://index"]},
                },
            }
        )
        ack = host.read()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        # notes changes resources and prompts, which this stream did not ask for,
        # and serves the subscribed URI, which it did.
        (tmp_path / "notes.wasm").write_bytes(rebuilt("notes", "listen"))
        tag = {"io.modelcontextprotocol/subscriptionId": "tools-only"}
        got = notifications_until(host, {"notifications/resources/updated"})
        assert got == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "notes://index", "_meta": tag},
            }
        ]
        replace_atomically(tmp_path / "hello.wasm", (PLUGINS / "wordcount.wasm").read_bytes())
        got = notifications_until(host, {LIST_CHANGED["tools"]})
        assert got == [{"jsonrpc": "2.0", "method": LIST_CHANGED["tools"], "params": {"_meta": tag}}]
    finally:
        host.close()


def test_a_corrupt_or_half_written_file_keeps_the_old_version_serving(tmp_path, host_env):
    host = start(tmp_path, host_env, "hello")
    try:
        assert host.request("logging/setLevel", {"level": "error"})["result"] == {}
        good = (PLUGINS / "hello.wasm").read_bytes()
        (tmp_path / "hello.wasm").write_bytes(good[: len(good) // 2])
        got = notifications_until(host, {"notifications/message"})
        assert [m["method"] for m in got] == ["notifications/message"]
        error = got[0]["params"]
        assert error["level"] == "error"
        assert "hello" in error["data"] and "previous version keeps serving" in error["data"]
        greet = host.request("tools/call", {"name": "greet", "arguments": {"name": "still"}})
        assert greet["result"]["content"][0]["text"] == "Hello, still!"

        (tmp_path / "hello.wasm").write_bytes(b"garbage")
        got = notifications_until(host, {"notifications/message"})
        assert "not a WebAssembly file" in got[0]["params"]["data"]
        greet = host.request("tools/call", {"name": "greet", "arguments": {"name": "again"}})
        assert greet["result"]["content"][0]["text"] == "Hello, again!"
        assert_quiet(host)
    finally:
        host.close()


def test_a_file_written_in_several_steps_is_reloaded_once(tmp_path, host_env):
    host = start(tmp_path, host_env, "hello")
    try:
        assert host.request("logging/setLevel", {"level": "debug"})["result"] == {}
        data = (PLUGINS / "wordcount.wasm").read_bytes()
        step = len(data) // 8 + 1
        with open(tmp_path / "hello.wasm", "wb") as f:
            for start_at in range(0, len(data), step):
                f.write(data[start_at : start_at + step])
                f.flush()
                time.sleep(0.03)
        got = notifications_until(host, {LIST_CHANGED["tools"]})
        # One reload, no failed attempt on a partial file in between.
        assert methods(got) == [LIST_CHANGED["tools"]]
        assert_quiet(host)
    finally:
        log = host.close()
    assert log.count("plugin reloaded") == 1, log
    assert "not reloaded" not in log


def test_calls_in_flight_finish_on_the_version_they_started_with(tmp_path, host_env):
    host = start(tmp_path, host_env, "hello")
    try:
        host.send(
            {
                "jsonrpc": "2.0",
                "id": "slow",
                "method": "tools/call",
                "params": {"name": "countdown", "arguments": {"steps": 10, "delay_ms": 100}},
            }
        )
        replace_atomically(tmp_path / "hello.wasm", (PLUGINS / "wordcount.wasm").read_bytes())
        notifications_until(host, {LIST_CHANGED["tools"]})
        gone = host.request("tools/call", {"name": "countdown", "arguments": {"steps": 1}})
        assert gone["error"]["code"] == -32602
        slow = host.response("slow")
        assert slow["result"]["content"][0]["text"] == "counted down from 10"
        assert not slow["result"].get("isError")
    finally:
        host.close()


def test_a_reload_storm_loses_and_corrupts_no_response(tmp_path, host_env):
    """60 replacements of a plugin while at least 1200 calls to it run concurrently."""
    shutil.copy(PLUGINS / "hello.wasm", tmp_path / "hello.wasm")
    proc = subprocess.Popen(
        [str(BINARY), "serve", "--plugins", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=host_env,
    )
    write_lock = threading.Lock()

    def send(message: dict) -> None:
        with write_lock:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()

    responses: dict = {}
    others: list = []

    def read_all() -> None:
        for line in proc.stdout:
            message = json.loads(line)
            if "id" in message and "method" not in message:
                responses.setdefault(message["id"], []).append(message)
            else:
                others.append(message)

    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    send(
        {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        }
    )
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    storm_over = threading.Event()
    sent = []

    def call_until_the_storm_is_over() -> None:
        i = 0
        while not storm_over.is_set() or i < 1200:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "greet", "arguments": {"name": f"caller {i}"}},
                }
            )
            i += 1
            if i % 20 == 0:
                time.sleep(0.02)
        sent.append(i)

    caller = threading.Thread(target=call_until_the_storm_is_over)
    caller.start()
    target = tmp_path / "hello.wasm"
    for n in range(60):
        data = rebuilt("hello", f"storm {n}")
        if n % 2:
            replace_atomically(target, data)
        else:
            target.write_bytes(data)
        time.sleep(0.05 + (n % 4) * 0.05)
    storm_over.set()
    caller.join()
    calls = sent[0]

    deadline = time.monotonic() + 300
    while len(responses) < calls + 1 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    try:
        missing = [i for i in range(calls) if i not in responses]
        assert missing == [], f"{len(missing)} calls got no response"
        for i in range(calls):
            [response] = responses[i]
            assert response["result"]["content"] == [{"type": "text", "text": f"Hello, caller {i}!"}], response
        # The lists never changed, so nothing was announced.
        assert [m for m in others if "list_changed" in m.get("method", "")] == []
        # The watcher survived: a real change is still picked up.
        replace_atomically(target, (PLUGINS / "wordcount.wasm").read_bytes())
        deadline = time.monotonic() + 120
        while not any(m.get("method") == LIST_CHANGED["tools"] for m in others):
            assert time.monotonic() < deadline, "no list_changed after the storm"
            time.sleep(0.05)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    log = proc.stderr.read().decode()
    # Reloads really happened while the calls ran (a burst coalesces into one).
    assert log.count("plugin reloaded") >= 5, log


def test_a_plugin_that_says_its_tools_changed_is_relisted(tmp_path, host_env):
    shutil.copy(FIXTURES / "shifty.wasm", tmp_path / "shifty.wasm")
    host = RawHost(tmp_path, host_env)
    try:
        host.initialize()

        def names():
            return sorted(t["name"] for t in host.request("tools/list")["result"]["tools"])

        before = names()
        said = host.request("tools/call", {"name": "relist", "arguments": {}})
        assert said["result"]["content"][0]["text"] == "the host was told"
        got = notifications_until(host, {LIST_CHANGED["tools"]})
        assert methods(got) == [LIST_CHANGED["tools"]]
        after = names()
        assert before != after
        assert [n for n in after if not n.startswith("shifting_")] == ["relist"]
        assert_quiet(host)
    finally:
        host.close()


def test_a_plugin_that_does_not_load_is_listed_as_failing_until_it_does(tmp_path, host_env):
    """Not silently absent: the instructions every client receives name the
    plugin and why (without host paths), until a good file replaces it."""
    (tmp_path / "broken.wasm").write_bytes(b"\0asm\x0d\0\x01\0 this is no component")
    shutil.copy(PLUGINS / "hello.wasm", tmp_path / "hello.wasm")
    host = RawHost(tmp_path, host_env)
    try:
        said = "plugin broken did not load (it is not served)"
        instructions = host.initialize(timeout=120)["result"].get("instructions", "")
        # Lists wait for the first load; initialize does not: a client that
        # initialized before the failure is told it at once.
        host.request("tools/list", timeout=120)
        told = [m["params"]["data"] for m in host.pending if m.get("method") == "notifications/message"]
        deadline = time.monotonic() + 10
        while said not in instructions and not any(said in t for t in told):
            # The message may follow the list's answer closely.
            assert time.monotonic() < deadline, (instructions, told)
            message = host.read(timeout=10)
            if message.get("method") == "notifications/message":
                told.append(message["params"]["data"])
        assert all(str(tmp_path) not in t for t in [instructions, *told])
        instructions = host.request("server/discover", {"_meta": modern_meta()})["result"]["instructions"]
        assert said in instructions and str(tmp_path) not in instructions, instructions

        replace_atomically(tmp_path / "broken.wasm", (PLUGINS / "wordcount.wasm").read_bytes())
        deadline = time.monotonic() + 60
        while "word_count" not in [t["name"] for t in host.request("tools/list")["result"]["tools"]]:
            assert time.monotonic() < deadline, "the fixed plugin was not loaded"
            time.sleep(0.2)
        discovered = host.request("server/discover", {"_meta": modern_meta()}, timeout=30)["result"]
        assert "did not load" not in discovered.get("instructions", ""), discovered

        replace_atomically(tmp_path / "broken.wasm", b"\0asm\x0d\0\x01\0 broken again")
        deadline = time.monotonic() + 60
        while True:
            discovered = host.request("server/discover", {"_meta": modern_meta()}, timeout=30)["result"]
            if "plugin broken did not load (the previous version keeps serving)" in discovered.get("instructions", ""):
                break
            assert time.monotonic() < deadline, discovered
            time.sleep(0.2)
    finally:
        host.close()


def test_every_list_keeps_its_order_across_reloads(tmp_path, host_env):
    """The lists are in a deterministic order (plugins by name, then each
    plugin's own order), whatever order the plugins loaded or reloaded in."""
    host = start(tmp_path, host_env, "wordcount", "notes", "hello")
    lists = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")
    try:
        before = {method: host.request(method)["result"] for method in lists}
        assert [t["name"] for t in before["tools/list"]["tools"]][:3] == ["greet", "add", "countdown"]
        # hello leaves and comes back: it is listed first again, not last.
        moved = tmp_path.parent / "hello.wasm.away"
        os.replace(tmp_path / "hello.wasm", moved)
        notifications_until(host, {LIST_CHANGED["tools"]})
        os.replace(moved, tmp_path / "hello.wasm")
        notifications_until(host, {LIST_CHANGED["tools"]})
        # notes is rebuilt (same lists, new bytes): nothing moves either.
        replace_atomically(tmp_path / "notes.wasm", rebuilt("notes", "order"))
        host.wait_for_log("plugin reloaded", timeout=60)
        deadline = time.time() + 60
        while time.time() < deadline:
            after = {method: host.request(method)["result"] for method in lists}
            if after == before:
                break
            time.sleep(0.2)
        assert after == before
    finally:
        host.close()
