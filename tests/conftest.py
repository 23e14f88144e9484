"""Shared fixtures: the built host binary and plugin folders (made by scripts/build)."""

import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "release" / "wasm-mcp"
PLUGINS = ROOT / "dist" / "plugins"
FIXTURES = ROOT / "dist" / "fixtures"
MODERN = "2026-07-28"

# Every host a test starts (whatever environment it builds) answers its
# first requests once all its plugins have loaded, so that a test sees the
# whole folder; tests/test_startup.py covers shorter waits.
os.environ["WASM_MCP_STARTUP_WAIT_MS"] = "600000"


@pytest.fixture
def anyio_backend():
    """The async tests (the Python `mcp` client) run on asyncio."""
    return "asyncio"


def warm_cache() -> tuple[list[Path], Path | None]:
    """What scripts/build compiled into the default compile cache
    (`wasm-mcp warm --plugins dist/plugins`), and the key its artifacts
    are signed with (a host loads only artifacts its key signed). The
    cache keys each artifact by component and engine: one this binary
    cannot use is never loaded."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wasm-mcp"
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    key = state / "wasm-mcp" / "cache.key"
    if not base.is_dir() or not key.is_file():
        return [], None
    return sorted(base.glob("*.cwasm")), key


# What tests made for people to look at (screenshots), named at the end of
# the run.
ARTIFACTS: list[str] = []


@pytest.fixture
def artifacts() -> list[str]:
    """Where a test notes a file it made for people to look at."""
    return ARTIFACTS


def pytest_terminal_summary(terminalreporter):
    for artifact in ARTIFACTS:
        terminalreporter.write_line(f"made: {artifact}")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """One compiled-component cache for the whole run, so each plugin compiles
    once. It starts with the example and real plugins scripts/build already
    compiled (and their key, in the run's state folder), so a test's host
    serves those at once instead of compiling them again: each Python or
    JavaScript one takes a CPU-minute. Tests of compiling use caches of
    their own."""
    cache = tmp_path_factory.mktemp("cache")
    artifacts, key = warm_cache()
    if key is not None:
        keys = cache / "state" / "wasm-mcp"
        keys.mkdir(parents=True, mode=0o700)
        shutil.copy2(key, keys / "cache.key")
        for artifact in artifacts:
            shutil.copy2(artifact, cache / artifact.name)
    return cache


@pytest.fixture(scope="session")
def host_env(cache_dir):
    config = cache_dir / "config.toml"
    config.write_text(f'[server]\ncache_dir = "{cache_dir}"\n')
    # Tasks are stored under the state folder: one of the run's own.
    state = cache_dir / "state"
    env = dict(os.environ, WASM_MCP_CONFIG=str(config), RUST_LOG="info", XDG_STATE_HOME=str(state))
    return env


# The real plugins in dist/plugins (the reference servers' jobs, which
# tests/test_reference_servers.py serves on their own, with their grants;
# the code-mode plugins, which tests/test_code_mode.py serves).
REAL_PLUGINS = {"fetch", "filesystem", "time", "memory", "code", "code-js"}


@pytest.fixture(scope="session")
def all_plugins(tmp_path_factory):
    """The example plugins plus the misbehaving test fixture, in one folder."""
    folder = tmp_path_factory.mktemp("plugins")
    examples = [p for p in PLUGINS.glob("*.wasm") if p.stem not in REAL_PLUGINS]
    for source in examples + [FIXTURES / "crashy.wasm"]:
        shutil.copy(source, folder / source.name)
    return folder


class HostLog:
    """The host's stderr, read on a thread (select() on a buffered pipe would
    miss lines already read into the buffer)."""

    def _start_log(self) -> None:
        self.log_lines: list[str] = []
        self.log_changed = threading.Condition()
        self.log_reader = threading.Thread(target=self._read_log, daemon=True)
        self.log_reader.start()

    def _read_log(self) -> None:
        for line in self.proc.stderr:
            with self.log_changed:
                self.log_lines.append(line.decode(errors="replace"))
                self.log_changed.notify_all()

    def log(self) -> str:
        with self.log_changed:
            return "".join(self.log_lines)

    def status(self, field: str) -> int:
        """A number from /proc/PID/status (VmRSS in KiB, Threads, ...)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise AssertionError(f"no {field}")

    def rss_kib(self) -> int:
        return self.status("VmRSS")

    def wait_for_log(self, text: str, timeout: float = 120.0) -> str:
        """Waits until `text` appears on the host's stderr; returns the log."""
        with self.log_changed:
            found = self.log_changed.wait_for(lambda: text in "".join(self.log_lines), timeout)
        assert found, f"{text!r} never appeared in the log:\n{self.log()[-3000:]}"
        return self.log()


class RawHost(HostLog):
    """The host over stdio, spoken to one JSON line at a time."""

    def __init__(self, plugins: Path | None, env: dict, args: list[str] | None = None):
        self.proc = subprocess.Popen(
            [str(BINARY)] + (args if args is not None else ["serve", "--plugins", str(plugins)]),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.pending: list[dict] = []
        self.next_id = 1000
        # A thread reads stdout too, for the same reason as stderr.
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read_lines, daemon=True).start()
        self._start_log()

    def _read_lines(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(b"")


    def send_line(self, text: str) -> None:
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_line(json.dumps(message))

    def read(self, timeout: float = 60.0) -> dict:
        """The next message on stdout; every line must be one JSON object."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no message from the host in time") from None
        assert line, f"the host closed stdout; stderr: {self.log()[-2000:]}"
        message = json.loads(line)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line
        return message

    def response(self, id_, timeout: float = 60.0) -> dict:
        """The response to request `id_`, keeping other messages for later."""
        for i, message in enumerate(self.pending):
            if message.get("id") == id_ and "method" not in message:
                return self.pending.pop(i)
        while True:
            message = self.read(timeout)
            if message.get("id") == id_ and "method" not in message:
                return message
            self.pending.append(message)

    def request(self, method: str, params: dict | None = None, timeout: float = 60.0) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.response(self.next_id, timeout)

    def initialize(self, version: str = "2025-11-25", timeout: float = 60.0, capabilities: dict | None = None) -> dict:
        result = self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": capabilities or {},
             "clientInfo": {"name": "raw", "version": "1"}},
            timeout,
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def close(self) -> str:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self.log_reader.join(timeout=20)
        return self.log()


def tool_error_text(response: dict) -> str:
    """The text of a response that is a tool execution error (`isError`),
    asserted to be one."""
    result = response.get("result")
    assert result and result.get("isError") is True, response
    return "".join(c.get("text", "") for c in result["content"])


def modern_meta(**extra) -> dict:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    meta.update(extra)
    return meta


@pytest.fixture
def raw_host(all_plugins, host_env):
    host = RawHost(all_plugins, host_env)
    yield host
    if host.proc.poll() is None:
        host.close()


CONFORMANCE = ROOT / "dist" / "conformance"


@pytest.fixture
def conformance_folder(tmp_path):
    """A plugin folder with the conformance fixture plugin alone."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(CONFORMANCE / "conformance.wasm", folder / "conformance.wasm")
    return folder


class HttpHost(HostLog):
    """The host serving Streamable HTTP on a free loopback port."""

    def __init__(self, plugins: Path, env: dict, args: list[str] | None = None):
        self.proc = subprocess.Popen(
            [str(BINARY), "serve", "--plugins", str(plugins), "--http", "127.0.0.1:0"] + (args or []),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._start_log()
        line = self.proc.stdout.readline().decode().strip()
        assert line.startswith(("http://", "https://")), f"no URL on stdout: {line!r}\n{self.log()[-3000:]}"
        #: The MCP endpoint, e.g. http://127.0.0.1:41234/mcp.
        self.url = line
        #: host:port
        self.authority = line.split("/")[2]

    def close(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise
        self.log_reader.join(timeout=20)
        return self.log()


@pytest.fixture
def http_host_factory(host_env):
    hosts = []

    def start(plugins: Path, args: list[str] | None = None, env: dict | None = None) -> HttpHost:
        host = HttpHost(plugins, env or host_env, args)
        hosts.append(host)
        return host

    yield start
    for host in hosts:
        host.close()
