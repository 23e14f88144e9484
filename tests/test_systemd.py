"""deploy/systemd: the unit, its replicas drop-in and the configs they serve.

`systemd-analyze verify` checks the unit (and the unit with its drop-in)
when it is installed (the Debian package `systemd`; it needs no systemd
running), else every key is checked against the list below; either way the
hardening the book describes is asserted key by key, and `systemd-analyze
security --offline=true` must rate the unit's exposure at most
`MAX_EXPOSURE`. Without systemd as PID 1 nothing here starts the unit
itself: the host is run as the unit would run it (its ExecStart, its
Environment, an unprivileged user, umask 077, a state and a cache folder of
that user's alone), under `strace` when it is installed, so that every
system call the host makes is checked against the unit's
SystemCallFilter."""

import json
import os
import re
import shlex
import shutil
import signal
import sys
import stat
import subprocess
import tempfile
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from cluster import Postgres
from conftest import BINARY, PLUGINS, ROOT, HostLog
from test_cluster import modern
from test_operations import call, initialize, ready

SYSTEMD = ROOT / "deploy" / "systemd"
UNIT = SYSTEMD / "wasm-mcp.service"
DROPIN = SYSTEMD / "wasm-mcp.service.d" / "replicas.conf"
CONFIG = SYSTEMD / "wasm-mcp.toml"
REPLICA_CONFIG = SYSTEMD / "replica.toml"
ANALYZE = shutil.which("systemd-analyze")
STRACE = shutil.which("strace")
# `systemd-analyze security`: 0 is a unit that can do nothing, 10 one that
# may do anything; below 2 is rated "OK". What keeps this unit above 0 is
# what a network server that compiles code needs (see the book's page).
MAX_EXPOSURE = 2.0
NOBODY = 65534

# The hardening of the book's page, key by key: one value, or every value
# of a key given several times, in order.
HARDENING = {
    "Type": "exec",
    "DynamicUser": "yes",
    "StateDirectory": "wasm-mcp",
    "StateDirectoryMode": "0700",
    "CacheDirectory": "wasm-mcp",
    "CacheDirectoryMode": "0700",
    "UMask": "0077",
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "PrivateUsers": "yes",
    "PrivateMounts": "yes",
    "ProtectProc": "invisible",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
    "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "RemoveIPC": "yes",
    "SystemCallArchitectures": "native",
    "SystemCallFilter": ["@system-service", "~@privileged"],
    "SystemCallErrorNumber": "EPERM",
    "DevicePolicy": "closed",
    # wasmtime makes compiled code executable with mprotect (asserted below).
    "MemoryDenyWriteExecute": "no",
    "KillSignal": "SIGTERM",
    "Restart": "on-failure",
}
# Keys the unit and its drop-in may use when `systemd-analyze verify` is not
# there to say whether systemd knows them.
KNOWN_KEYS = {
    "Unit": {"Description", "Documentation", "After", "Wants", "Requires"},
    "Service": set(HARDENING) | {
        "ExecStart", "Environment", "LoadCredential", "ReadOnlyPaths", "ReadWritePaths",
        "MemoryMax", "MemoryHigh", "TasksMax", "LimitNOFILE", "TimeoutStopSec",
        "TimeoutStartSec", "RestartSec"},
    "Install": {"WantedBy"},
}


def entries(path: Path) -> list[tuple[str, str, str]]:
    """(section, key, value) of every assignment of a unit file, in order."""
    found, section, pending = [], None, ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        found.append((section, key.strip(), value.strip()))
    return found


def values(path: Path, key: str, section: str = "Service") -> list[str]:
    return [v for s, k, v in entries(path) if s == section and k == key]


def one(path: Path, key: str) -> str:
    got = values(path, key)
    assert len(got) == 1, (key, got)
    return got[0]


def seconds(value: str) -> float:
    """A systemd time span ("45", "45s", "1min 30s") in seconds."""
    units = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "ms": 0.001}
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", value):
        total += float(number) * units[unit]
    return total


def bytes_of(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([KMGT]?)", value).groups()
    return int(number) << (10 * " KMGT".index(unit or " "))


def exec_start(path: Path) -> list[str]:
    """The command line of the unit's (last) ExecStart."""
    return shlex.split([v for v in values(path, "ExecStart") if v][-1])


def test_the_unit_carries_every_hardening_key_with_its_value():
    for key, expected in HARDENING.items():
        got = values(UNIT, key)
        if isinstance(expected, list):
            assert got == expected, (key, got)
        else:
            assert got == [expected], (key, got)
    # Bounds: present, and neither absent nor "infinity".
    assert bytes_of(one(UNIT, "MemoryMax")) >= 512 << 20
    assert bytes_of(one(UNIT, "MemoryHigh")) < bytes_of(one(UNIT, "MemoryMax"))
    assert 64 <= int(one(UNIT, "TasksMax")) <= 4096
    assert int(one(UNIT, "LimitNOFILE")) >= 1024
    # The command: HTTP, the plugin folder, the config where the book puts it.
    command = exec_start(UNIT)
    assert command[:2] == ["/usr/local/bin/wasm-mcp", "serve"], command
    assert {"--http", "--plugins", "--config"} <= set(command)
    assert command[command.index("--config") + 1] == "/etc/wasm-mcp/wasm-mcp.toml"
    # State and cache land in StateDirectory= and CacheDirectory=.
    environment = dict(a.split("=", 1) for v in values(UNIT, "Environment") for a in shlex.split(v))
    assert environment == {"RUST_LOG": "info", "XDG_STATE_HOME": "%S", "XDG_CACHE_HOME": "%C"}
    assert values(UNIT, "WantedBy", "Install") == ["multi-user.target"]


def test_every_key_is_one_systemd_knows():
    """`systemd-analyze verify` on the unit, and on the unit with its
    replicas drop-in beside it, prints nothing (it exits 0 even on an
    unknown key, so its output is what counts). It wants the ExecStart
    binary to exist: the units are verified with the built binary's path
    in it. Without systemd-analyze, the keys are checked against a list."""
    for path in (UNIT, DROPIN):
        for section, key, _ in entries(path):
            assert key in KNOWN_KEYS.get(section, set()), f"{path.name}: [{section}] {key}"
    if ANALYZE is None:
        return
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        (folder / "wasm-mcp.service").write_text(UNIT.read_text().replace("/usr/local/bin/wasm-mcp", str(BINARY)))
        verified = subprocess.run([ANALYZE, "verify", "--man=no", str(folder / "wasm-mcp.service")],
                                  capture_output=True, text=True, timeout=60)
        assert verified.returncode == 0 and verified.stdout + verified.stderr == "", verified
        # The drop-in is read from the folder beside the unit.
        dropins = folder / "wasm-mcp.service.d"
        dropins.mkdir()
        (dropins / "replicas.conf").write_text(DROPIN.read_text().replace("/usr/local/bin/wasm-mcp", str(BINARY)))
        verified = subprocess.run([ANALYZE, "verify", "--man=no", str(folder / "wasm-mcp.service")],
                                  capture_output=True, text=True, timeout=60)
        assert verified.returncode == 0 and verified.stdout + verified.stderr == "", verified
        # ... and what it says of a key it does not know, so that the
        # empty output above means something.
        (dropins / "typo.conf").write_text("[Service]\nProtectSystm=strict\n")
        verified = subprocess.run([ANALYZE, "verify", "--man=no", str(folder / "wasm-mcp.service")],
                                  capture_output=True, text=True, timeout=60)
        assert "Unknown key 'ProtectSystm'" in verified.stderr, verified


def test_systemd_analyze_security_rates_the_unit_ok(record_property):
    if ANALYZE is None:
        # The rating is systemd's; without it the hardening keys above are
        # what is checked.
        test_the_unit_carries_every_hardening_key_with_its_value()
        return
    rated = subprocess.run([ANALYZE, "security", "--offline=true", "--no-pager", str(UNIT)],
                           capture_output=True, text=True, timeout=60)
    assert rated.returncode == 0, rated
    found = re.search(r"Overall exposure level for wasm-mcp\.service: (\d+\.\d+) (\w+)", rated.stdout)
    assert found, rated.stdout[-2000:]
    exposure = float(found.group(1))
    record_property("exposure", exposure)
    print(f"systemd-analyze security: {exposure} {found.group(2)}")
    assert exposure <= MAX_EXPOSURE and found.group(2) == "OK", rated.stdout
    # What it holds against the unit is what the book's page explains.
    flagged = {line.split()[1] for line in rated.stdout.splitlines() if line.startswith("✗")}
    assert flagged <= {
        "SystemCallFilter=~@resources", "RootDirectory=/RootImage=", "MemoryDenyWriteExecute=",
        "RestrictAddressFamilies=~AF_UNIX", "RestrictAddressFamilies=~AF_(INET|INET6)",
        "PrivateNetwork=", "DeviceAllow=", "IPAddressDeny=", "ProcSubset="}, flagged


def test_the_shipped_configs_pass_config_check_and_the_stop_timeout_covers_the_drain():
    checked = subprocess.run([str(BINARY), "config", "check", str(CONFIG)],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "warning" not in checked.stdout + checked.stderr, checked
    # The replica's config names its password credential, a file only
    # there while the unit runs.
    checked = subprocess.run([str(BINARY), "config", "check", "--no-files", str(REPLICA_CONFIG)],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    replica = tomllib.loads(REPLICA_CONFIG.read_text())
    assert replica["state"]["password"] == {"file": "/run/credentials/wasm-mcp.service/db-password"}
    assert "db-password:/etc/wasm-mcp/db-password" in values(DROPIN, "LoadCredential")
    assert exec_start(DROPIN)[exec_start(DROPIN).index("--config") + 1] == "/etc/wasm-mcp/replica.toml"
    assert values(DROPIN, "ExecStart")[0] == "", "the drop-in must reset ExecStart before setting it"
    # SIGTERM: a replica drains for up to drain_secs, then hands its tasks
    # back (one query, at most [state] timeout_ms) and exits; systemd must
    # not kill it before.
    stop = seconds(one(UNIT, "TimeoutStopSec"))
    for path in (CONFIG, REPLICA_CONFIG):
        config = tomllib.loads(path.read_text())
        drain = config.get("cluster", {}).get("drain_secs", 30)
        query = config.get("state", {}).get("timeout_ms", 5000) / 1000
        assert stop > drain + query, (path.name, stop, drain, query)


def stop_as_systemd(host, pid: int) -> int:
    """Sends SIGTERM to `pid` (the host, or its process under strace) as
    systemd stops the unit, and waits for `host` to exit within the unit's
    TimeoutStopSec (else kills it and fails, as systemd would kill it);
    its exit code."""
    stop = seconds(one(UNIT, "TimeoutStopSec"))
    os.kill(pid, signal.SIGTERM)
    try:
        code = host.proc.wait(timeout=stop)
    except subprocess.TimeoutExpired:
        host.proc.kill()
        raise AssertionError(f"still running {stop} s after SIGTERM (TimeoutStopSec)")
    host.log_reader.join(timeout=20)
    return code


def allowed_system_calls() -> set[str]:
    """The system calls the unit's SystemCallFilter lines allow, in order:
    an allow list, then what a `~` line takes away."""
    def expand(name: str) -> set[str]:
        if not name.startswith("@"):
            return {name}
        listed = subprocess.run([ANALYZE, "syscall-filter", name], capture_output=True, text=True,
                                check=True, timeout=30).stdout.splitlines()[1:]
        names = set()
        for line in listed:
            line = line.strip()
            if line and not line.startswith("#"):
                names |= expand(line)
        return names

    allowed: set[str] = set()
    for value in values(UNIT, "SystemCallFilter"):
        if value.startswith("~"):
            allowed -= set().union(*(expand(n) for n in value[1:].split()))
        else:
            allowed |= set().union(*(expand(n) for n in value.split()))
    return allowed


PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
NO_MDWE = 99


def before_exec(deny_write_execute: bool) -> None:
    """In the child, before it runs the host: UMask=0077, and what
    MemoryDenyWriteExecute=yes does on Linux 6.3 and later (the kernel's
    own switch, kept across exec; systemd before 254 installs a seccomp
    filter refusing the same calls). A kernel without it exits NO_MDWE."""
    os.umask(0o077)
    if deny_write_execute:
        import ctypes
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
            os._exit(NO_MDWE)


class UnitLikeHost(HostLog):
    """The unit's ExecStart and Environment, in a folder standing for /:
    the binary, plugin folder and config copied where the unit names them,
    %S and %C its var/lib and var/cache, run as nobody with umask 077;
    under strace (its output in `trace`) when strace is installed."""

    def __init__(self, root: Path, trace: Path | None, unit: Path = UNIT, deny_write_execute: bool = False):
        """`unit`: the file whose ExecStart runs (the unit, or a drop-in);
        `deny_write_execute`: as MemoryDenyWriteExecute=yes would run it."""
        self.root = root
        command = exec_start(unit)
        at = {"/usr/local/": root / "usr" / "local", "/etc/": root / "etc"}
        for i, word in enumerate(command):
            for prefix, there in at.items():
                if word.startswith(prefix):
                    command[i] = str(there / word[len(prefix):])
        command[command.index("--http") + 1] = "127.0.0.1:0"
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
        for value in values(UNIT, "Environment"):
            for assignment in shlex.split(value):
                key, _, setting = assignment.partition("=")
                env[key] = setting.replace("%S", str(root / "var" / "lib")).replace(
                    "%C", str(root / "var" / "cache"))
        self.binary = Path(command[0])
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        if trace is not None:
            prefix += [STRACE, "-f", "-qq", "-o", str(trace)]
        self.proc = subprocess.Popen(prefix + command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd="/",
                                     preexec_fn=lambda: before_exec(deny_write_execute))
        self._start_log()
        line = self.proc.stdout.readline().decode().strip()
        assert line.startswith("http://"), f"no URL on stdout: {line!r}\n{self.log()[-3000:]}"
        self.url = line
        self.base = line.rsplit("/", 1)[0]

    def host_pid(self) -> int:
        """The host's own process (under strace, strace's child)."""
        if STRACE is None:
            return self.proc.pid
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
                for child in (task / "children").read_text().split():
                    if os.readlink(f"/proc/{child}/exe") == str(self.binary):
                        return int(child)
            time.sleep(0.1)
        raise AssertionError("the host's process was not found under strace")


@pytest.fixture
def unit_root():
    """A folder standing for /, that nobody (uid 65534) may traverse (pytest's
    own temporary folders are root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="wasm-mcp-unit-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def lay_out(root: Path, plugins: list[Path], config: str, text: str) -> tuple[Path, Path]:
    """What the book's installation makes, under `root`: the binary, the
    plugin folder and /etc/wasm-mcp/`config` (holding `text`), root's and
    read-only to others; and what StateDirectory= and CacheDirectory= make,
    the service user's alone (0700). Returns those two folders."""
    binary = root / "usr" / "local" / "bin" / "wasm-mcp"
    folder = root / "usr" / "local" / "lib" / "wasm-mcp" / "plugins"
    for made in (binary.parent, folder, root / "etc" / "wasm-mcp"):
        made.mkdir(parents=True)
    for path in root.rglob("*"):
        path.chmod(0o755)
    shutil.copy(BINARY, binary)
    for plugin in plugins:
        shutil.copy(plugin, folder / plugin.name)
    (root / "etc" / "wasm-mcp" / config).write_text(text)
    state, cache = root / "var" / "lib" / "wasm-mcp", root / "var" / "cache" / "wasm-mcp"
    for made in (state, cache):
        made.mkdir(parents=True)
        os.chown(made, NOBODY, NOBODY)
        made.chmod(0o700)
    for made in (root / "var", root / "var" / "lib", root / "var" / "cache"):
        made.chmod(0o755)
    return state, cache


def test_the_host_runs_as_the_unit_runs_it_and_stops_on_sigterm(unit_root, record_property):
    root = unit_root
    plugins = [PLUGINS / name for name in ("time.wasm", "memory.wasm", "memory.toml", "time.toml")]
    state, cache = lay_out(root, plugins, "wasm-mcp.toml", CONFIG.read_text())
    trace = None
    if STRACE is not None:
        traces = root / "trace"
        traces.mkdir()
        os.chown(traces, NOBODY, NOBODY)
        trace = traces / "calls"
    before = sorted(p for p in root.rglob("*") if not p.is_relative_to(root / "var")
                    and not p.is_relative_to(root / "trace"))

    host = UnitLikeHost(root, trace)
    pid = host.host_pid()
    try:
        assert os.stat(f"/proc/{pid}").st_uid == NOBODY
        ready(host.base)
        with urllib.request.urlopen(f"{host.base}/healthz", timeout=10) as answer:
            assert answer.status == 200
        session = initialize(host.url)
        now = call(host.url, session, "get_current_time", {"timezone": "UTC"}, 1)
        assert "result" in now and not now["result"].get("isError"), now
        made = call(host.url, session, "create_entities", {"entities": [
            {"name": "unit", "entityType": "service", "observations": ["runs sandboxed"]}]}, 2)
        assert "result" in made and not made["result"].get("isError"), made
        graph = call(host.url, session, "read_graph", {}, 3)
        assert "runs sandboxed" in str(graph["result"]), graph
    finally:
        code = stop_as_systemd(host, pid)
    assert code == 0, host.log()[-3000:]

    # The state is in the state folder, the compiled plugins in the cache
    # folder, all the service user's alone (UMask=0077), and nothing was
    # written anywhere else.
    for name in ("tasks.db", "keyvalue.db", "cache.key"):
        path = state / name
        assert path.is_file() and path.stat().st_uid == NOBODY, name
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, (name, oct(path.stat().st_mode))
    # (a plugin compiled in the background may not be written yet)
    assert list(cache.glob("*.cwasm")), sorted(cache.iterdir())
    after = sorted(p for p in root.rglob("*") if not p.is_relative_to(root / "var")
                   and not p.is_relative_to(root / "trace"))
    assert after == before

    if trace is None:
        return
    calls = trace.read_text()
    made = set(re.findall(r"^\d+\s+([a-z0-9_]+)\(", calls, re.M))
    record_property("system_calls", len(made))
    # Compiled code is made executable with mprotect: MemoryDenyWriteExecute
    # must stay off.
    assert re.search(r"mprotect\(0x[0-9a-f]+, \d+, PROT_READ\|PROT_EXEC\)\s+= 0", calls), \
        "no mprotect(PROT_EXEC): is MemoryDenyWriteExecute=no still needed?"
    if ANALYZE is not None:
        refused = sorted(made - allowed_system_calls())
        assert refused == [], f"the unit's SystemCallFilter refuses what the host calls: {refused}"


def test_the_book_shows_the_replica_config_as_shipped():
    page = (ROOT / "docs" / "src" / "running" / "systemd.md").read_text()
    blocks = [tomllib.loads(b) for b in re.findall(r"^```toml\n(.*?)^```", page, re.S | re.M)]
    assert tomllib.loads(REPLICA_CONFIG.read_text()) in blocks
    assert "1.2 OK" in page or ANALYZE is None


def test_memory_deny_write_execute_would_load_no_plugin(unit_root):
    """Why the unit leaves MemoryDenyWriteExecute off: with it, wasmtime
    cannot make a compiled plugin executable, and the host serves none.
    (On a kernel without PR_SET_MDWE, the strace of the test above shows
    the mprotect(PROT_EXEC) calls the setting refuses.)"""
    probe = subprocess.run([sys.executable, "-c", "import ctypes, sys; sys.exit(ctypes.CDLL(None)"
                            f".prctl({PR_SET_MDWE}, {PR_MDWE_REFUSE_EXEC_GAIN}, 0, 0, 0) != 0)"], timeout=30)
    if probe.returncode != 0:
        assert values(UNIT, "MemoryDenyWriteExecute") == ["no"]
        return
    lay_out(unit_root, [PLUGINS / "time.wasm"], "wasm-mcp.toml", CONFIG.read_text())
    host = UnitLikeHost(unit_root, None, deny_write_execute=True)
    try:
        host.wait_for_log("unable to make memory executable")
        ready(host.base)
        tools = call(host.url, initialize(host.url), "get_current_time", {"timezone": "UTC"}, 1)
        assert "result" not in tools or tools["result"].get("isError"), tools
    finally:
        host.proc.terminate()
        host.proc.wait(timeout=60)


def test_a_replica_run_as_the_drop_in_runs_it_reads_its_credential_and_drains_within_the_stop_timeout(
        unit_root, tmp_path):
    """The drop-in's command line and replica.toml against a real PostgreSQL
    (trust authentication: the password file is read, not checked), the
    password where LoadCredential= puts it (the service user's, 0400), and
    a task running longer than drain_secs: on SIGTERM the replica drains
    for all of drain_secs, hands the task back, and still exits with 0
    before TimeoutStopSec."""
    postgres = Postgres(tmp_path / "postgres")
    try:
        root = unit_root
        credentials = root / "run" / "credentials" / "wasm-mcp.service"
        config = re.sub(r'(?m)^url = "[^"]*"', f'url = "{postgres.url}"', REPLICA_CONFIG.read_text())
        config = config.replace("/run/credentials/wasm-mcp.service", str(credentials))
        assert str(credentials) in config and postgres.url in config
        plugins = [PLUGINS / "memory.wasm", PLUGINS / "memory.toml", ROOT / "dist" / "conformance" / "conformance.wasm"]
        lay_out(root, plugins, "replica.toml", config)
        credentials.mkdir(parents=True)
        for made in (root / "run", root / "run" / "credentials"):
            made.chmod(0o755)
        (credentials / "db-password").write_text("not-needed-with-trust\n")
        for path, mode in ((credentials / "db-password", 0o400), (credentials, 0o500)):
            os.chown(path, NOBODY, NOBODY)
            path.chmod(mode)

        host = UnitLikeHost(root, None, DROPIN)
        try:
            ready(host.base)
            with urllib.request.urlopen(f"{host.base}/readyz", timeout=10) as answer:
                assert json.loads(answer.read())["store"] == "reachable"
            session = initialize(host.url)
            made = call(host.url, session, "create_entities", {"entities": [
                {"name": "replica", "entityType": "service", "observations": ["kept in PostgreSQL"]}]}, 1)
            assert "result" in made and not made["result"].get("isError"), made
            authority = host.base.split("/")[2]
            task = modern(authority, 2, "tools/call", {
                "name": "slow_compute", "arguments": {"seconds": 600, "detach": True}})["result"]
            assert task["resultType"] == "task", task
        finally:
            code = stop_as_systemd(host, host.proc.pid)
        assert code == 0, host.log()[-3000:]
        log = host.log()
        assert "draining" in log and "running tasks handed back" in log, log[-3000:]
        # Its data went to PostgreSQL, not to the state folder.
        assert not (root / "var" / "lib" / "wasm-mcp" / "keyvalue.db").exists()
    finally:
        postgres.stop()
