"""A tool's input schema cannot make checking a call's arguments a CPU or
memory bomb (plugins/schemas-rust). Schemas that apply themselves more than
once per level of the arguments (anyOf/oneOf/allOf/if recursion, through
$defs, definitions, "#", $dynamicRef), or branch many ways without
recursion, are served, and a call whose check could cost too much is
refused with the bound named; `uniqueItems` is checked in linear time,
comparing values as JSON Schema does. Every attack runs while ping and
another plugin's call are answered within 10 s, and the host's memory stays
under a stated bound. Time appears only as generous liveness bounds."""

import json
import os
import shutil
import threading
import time

import pytest

from conftest import FIXTURES, PLUGINS, RawHost, tool_error_text

MIB = 1024
# During any one call, the host's memory may grow by the check's bound
# (64 MiB) and a little more, plus the arguments' copies: as parsed JSON
# values (up to 16 times their text: `[]` is 2 bytes of text, 56 of
# values) in the request, the check's copy when it runs on a blocking
# thread, and the plugin's own parse.
def growth_bound_kib(arguments) -> int:
    return 80 * MIB + 64 * len(json.dumps(arguments)) // 1024
TOO_LARGE = "too large to check against its input schema"


@pytest.fixture(scope="module")
def host(tmp_path_factory, cache_dir):
    base = tmp_path_factory.mktemp("bombs")
    plugins = base / "plugins"
    plugins.mkdir()
    shutil.copy(FIXTURES / "schemas.wasm", plugins / "schemas.wasm")
    shutil.copy(PLUGINS / "hello.wasm", plugins / "hello.wasm")
    config = base / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n')
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="info",
               XDG_STATE_HOME=str(base / "state"))
    host = RawHost(plugins, env)
    host.initialize(timeout=120)
    yield host
    host.close()


class Peak:
    """The host's largest RSS, sampled on a thread while an attack runs."""

    def __init__(self, host):
        self.host, self.start, self.running = host, host.rss_kib(), True
        self.peak = self.start
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while self.running and self.host.proc.poll() is None:
            try:
                self.peak = max(self.peak, self.host.rss_kib())
            except (OSError, AssertionError):
                return
            time.sleep(0.01)

    def growth(self) -> int:
        self.running = False
        self.thread.join(timeout=10)
        return self.peak - self.start


def call(host, tool, arguments, timeout=60.0):
    """Calls `tool`; while the call is checked and runs, ping and hello's
    greet are answered within 10 s, and the host's RSS grows by less than
    the bound. The response."""
    peak = Peak(host)
    host.next_id += 1
    id_ = host.next_id
    host.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}})
    started = time.monotonic()
    assert "result" in host.request("ping", timeout=10)
    greet = host.request("tools/call", {"name": "greet", "arguments": {"name": "you"}}, timeout=10)
    assert greet["result"]["content"][0]["text"] == "Hello, you!", greet
    assert time.monotonic() - started < 10
    response = host.response(id_, timeout)
    growth = peak.growth()
    assert growth < growth_bound_kib(arguments), f"{tool}: RSS grew by {growth} KiB"
    assert host.status("VmHWM") < 600 * MIB
    return response


def validated(response) -> bool:
    result = response["result"]
    return not result.get("isError") and result["content"][0]["text"] == "validated"


def nested(depth, leaf=1):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_objects(depth):
    value = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_the_reported_recursive_any_of_attack_is_refused_at_once(host):
    """53 bytes against a self-recursive anyOf: 2^23 paths (11.8 s and
    +1.5 GB before); refused with the bound named."""
    arguments = {"a": nested(23)}
    assert len(json.dumps(arguments, separators=(",", ":"))) == 53
    for _ in range(3):
        text = tool_error_text(call(host, "any_of_self", arguments))
        assert TOO_LARGE in text and "20000000 units" in text and "recursion" in text, text
    # Shallow arguments are checked, right or wrong.
    assert validated(call(host, "any_of_self", {"a": [[[]], []]}))
    text = tool_error_text(call(host, "any_of_self", {"a": [[1]]}))
    assert "Invalid arguments for tool any_of_self" in text and "arguments/a" in text, text


@pytest.mark.parametrize("tool, deep, shallow_ok, shallow_bad", [
    ("one_of_root", nested_objects(40), {"b": 1}, {"a": {"a": 1}}),
    ("all_of_contains", {"a": nested(30)}, {"a": [[1]]}, {"a": [[]]}),
    ("dynamic_if", {"a": nested(30)}, {"a": [[2], [3]]}, None),
])
def test_other_recursive_shapes_are_bounded_too(host, tool, deep, shallow_ok, shallow_bad):
    text = tool_error_text(call(host, tool, deep))
    assert TOO_LARGE in text, text
    assert validated(call(host, tool, shallow_ok))
    if shallow_bad is not None:
        text = tool_error_text(call(host, tool, shallow_bad))
        assert f"Invalid arguments for tool {tool}" in text, text


def test_branching_without_recursion_is_counted(host):
    """4^6 paths to every item: a few items are checked, a thousand are
    refused."""
    assert validated(call(host, "branchy", {"a": ["xy", "zw"]}))
    text = tool_error_text(call(host, "branchy", {"a": ["x"]}))
    assert "Invalid arguments for tool branchy" in text, text
    text = tool_error_text(call(host, "branchy", {"a": ["xy"] * 1000}))
    assert TOO_LARGE in text, text


def test_schemas_that_recurse_once_per_level_check_large_arguments(host):
    node = {"name": "leaf"}
    for i in range(50):
        node = {"name": f"n{i}", "children": [node, {"name": "x"}]}
    assert validated(call(host, "tree", {"root": node}))
    broken = {"name": "top", "children": [{"children": []}]}
    text = tool_error_text(call(host, "tree", {"root": broken}))
    assert "arguments/root/children/0" in text and "name" in text, text
    wide = {"name": "top", "children": [{"name": str(i)} for i in range(20_000)]}
    assert validated(call(host, "tree", {"root": wide}))
    # contains over nested arrays, each level's items all visited.
    assert validated(call(host, "contains_nested", {"a": nested(60)}))
    assert validated(call(host, "contains_nested", {"a": [[[1], [2]] for _ in range(2000)]}))
    text = tool_error_text(call(host, "contains_nested", {"a": [["x"]]}))
    assert "Invalid arguments for tool contains_nested" in text, text


def colliding(count):
    """`count` distinct items the schema library hashes alike: arrays of
    `[]` and `[[]]` (its hash writes nothing for an array)."""
    return [[[[]] if i >> bit & 1 else [] for bit in range(16)] for i in range(count)]


def test_unique_items_over_many_colliding_items_is_linear(host):
    """40 000 items the library hashes alike (12 s before)."""
    items = colliding(40_000)
    assert validated(call(host, "unique", {"items": items}))
    text = tool_error_text(call(host, "unique", {"items": items + [items[123]]}))
    assert "items 123 and 40000 are equal" in text, text


def test_unique_items_compares_values_as_json_schema_does(host):
    cases = [
        ([1, 2, 1.0], "items 0 and 2"),
        ([0, -0.0], "items 0 and 1"),
        ([{"a": 1, "b": [1, {"c": None}]}, {"b": [1.0, {"c": None}], "a": 1}], "items 0 and 1"),
        (["x" * 100_000 + "a", "x" * 100_000 + "b", "x" * 100_000 + "a"], "items 0 and 2"),
        ([True, 1, "1", [1], {"1": 1}, None, False, 0], None),
        ([[], {}, "", 0, [[]], [{}]], None),
    ]
    for items, expected in cases:
        response = call(host, "unique", {"items": items})
        if expected is None:
            assert validated(response), (items, response)
        else:
            assert expected in tool_error_text(response), items


def test_huge_arrays_are_checked_or_refused_within_the_bound(host):
    numbers = list(range(300_000))
    assert validated(call(host, "unique", {"items": numbers}))
    text = tool_error_text(call(host, "unique", {"items": numbers + [7.0]}))
    assert "items 7 and 300000 are equal" in text, text
    strings = [f"{i:08}" * 200 for i in range(3000)]
    assert validated(call(host, "unique", {"items": strings}))
    # Big arguments against a branching schema: refused, not worked through.
    text = tool_error_text(call(host, "any_of_self", {"a": [[[[[[[[[[[]]]]]]]]]]] * 2000}))
    assert TOO_LARGE in text, text
    # Wrong and large against anyOf: not matching, without listing why.
    text = tool_error_text(call(host, "contains_nested", {"a": [["x"]] * 50_000}))
    assert "Invalid arguments for tool contains_nested" in text and "do not match" in text, text


def test_schemas_that_cannot_be_bounded_are_left_out_at_load(host):
    tools = {t["name"] for t in host.request("tools/list")["result"]["tools"]}
    served = {"any_of_self", "one_of_root", "all_of_contains", "dynamic_if", "branchy",
              "tree", "contains_nested", "unique", "big_enum", "plain", "greet"}
    assert served <= tools, served - tools
    assert not {"remote_ref", "loop_in_place", "nested_id"} & tools, tools
    log = host.wait_for_log("nested_id")
    for reason in ["has a $ref this host cannot bound", "applies itself to the same value without end",
                   "has a nested $id"]:
        assert reason in log, log[-3000:]
