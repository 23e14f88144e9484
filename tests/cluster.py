"""Replicas sharing a real PostgreSQL server behind a real HAProxy, on
loopback: what tests/test_cluster.py and scripts/bench-cluster.py start.
The HAProxy configuration is examples/cluster/haproxy.cfg itself, with its
addresses moved to free ports."""

import http.client
import json
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

from conftest import BINARY, ROOT, HttpHost

EXAMPLE = ROOT / "examples" / "cluster" / "haproxy.cfg"
THROWAWAY_POSTGRES = ROOT / "scripts" / "throwaway-postgres"


def until(check, what: str, timeout: float = 60.0, explain=lambda: ""):
    """`check()`'s first truthy value, polled every 0.1 s; fails after
    `timeout` seconds saying `what` it waited for (and `explain()`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}\n{explain()}".rstrip())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ready(authority: str) -> bool:
    try:
        conn = http.client.HTTPConnection(authority, timeout=5)
        conn.request("GET", "/readyz")
        status = conn.getresponse().status
        conn.close()
        return status == 200
    except OSError:
        return False


class Postgres:
    """A throwaway PostgreSQL server (scripts/throwaway-postgres)."""

    def __init__(self, folder: Path, tls: bool = False):
        """With `tls`, it takes TLS connections only; its certificate is `ca`."""
        self.folder = folder
        command = "start-tls" if tls else "start"
        run = subprocess.run([str(THROWAWAY_POSTGRES), command, str(folder)], capture_output=True, text=True,
                             timeout=120)
        self.ca = folder / "ca.pem"
        assert run.returncode == 0, f"PostgreSQL did not start (scripts/test-servers installs it):\n{run.stderr}"
        self.url = run.stdout.strip()

    def stop(self) -> None:
        subprocess.run([str(THROWAWAY_POSTGRES), "stop", str(self.folder)], timeout=60)

    def down(self) -> None:
        """Stops the server, keeping its data (an outage)."""
        subprocess.run([str(THROWAWAY_POSTGRES), "down", str(self.folder)], timeout=60, check=True)

    def up(self) -> None:
        """Starts it again, on the same port with the same data."""
        subprocess.run([str(THROWAWAY_POSTGRES), "up", str(self.folder)], timeout=120, check=True)


class Replica(HttpHost):
    """The host `binary` (this tree's by default, or another version's)
    serving Streamable HTTP on `http` (a free loopback port by default)."""

    def __init__(self, plugins: Path, env: dict, args: list[str] | None = None, binary: Path = BINARY,
                 http: str = "127.0.0.1:0"):
        self.binary = Path(binary)
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--plugins", str(plugins), "--http", http] + (args or []),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._start_log()
        line = self.proc.stdout.readline().decode().strip()
        assert line.startswith(("http://", "https://")), f"no URL on stdout: {line!r}\n{self.log()[-3000:]}"
        self.url = line
        self.authority = line.split("/")[2]


class Cluster:
    """`count` replicas named r1.. serving `plugins` (one folder each when a
    list is given), sharing `postgres`, behind HAProxy. `binaries` (one
    path, or one per replica) runs another build of the host than this
    tree's (`replace` swaps one replica for another build)."""

    def __init__(self, tmp_path: Path, postgres: Postgres, plugins, env: dict, count: int = 3,
                 config: str = "", cluster: str = "", args: list[str] | None = None,
                 binaries: Path | list[Path] | None = None):
        self.tmp_path, self.postgres, self.env = tmp_path, postgres, dict(env)
        cache = re.search(r'cache_dir = "([^"]*)"', Path(env["WASM_MCP_CONFIG"]).read_text()).group(1)
        config_file = tmp_path / "replica.toml"
        config_file.write_text(f'[server]\ncache_dir = "{cache}"\n\n[cluster]\nlease_secs = 3\n{cluster}\n\n{config}')
        self.env["WASM_MCP_CONFIG"] = str(config_file)
        # What happens to tasks across replicas is said at debug level.
        self.env["RUST_LOG"] = "info,wasm_mcp::server::tasks=debug"
        folders = plugins if isinstance(plugins, list) else [plugins] * count
        if binaries is None or isinstance(binaries, (str, Path)):
            binaries = [binaries or BINARY] * len(folders)
        self.args = args or []
        self.folders: dict[str, Path] = {}
        self.replicas: dict[str, HttpHost] = {}
        #: Replicas `replace` stopped, with their names, in order: their logs stay readable.
        self.retired: list[tuple[str, HttpHost]] = []
        for i, (folder, binary) in enumerate(zip(folders, binaries), 1):
            name = f"r{i}"
            self.folders[name] = folder
            self.replicas[name] = Replica(folder, self.env, self._replica_args(name), binary)
        deadline = time.monotonic() + 300
        for host in self.replicas.values():
            self._wait_ready(host, deadline)
        self.front = f"127.0.0.1:{free_port()}"
        text = EXAMPLE.read_text().replace("127.0.0.1:8080", self.front)
        for i, host in enumerate(self.replicas.values(), 1):
            text = text.replace(f"127.0.0.1:808{i}", host.authority)
        for i in range(len(self.replicas) + 1, 4):
            text = re.sub(rf"\n\s*(use-)?server r{i} [^\n]*", "", text)
        self.haproxy_cfg = tmp_path / "haproxy.cfg"
        self.haproxy_cfg.write_text(text)
        self.haproxy = subprocess.Popen(["haproxy", "-db", "-f", str(self.haproxy_cfg)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while not ready(self.front):
            assert self.haproxy.poll() is None, self.haproxy.stderr.read().decode()
            assert time.monotonic() < deadline, "HAProxy never answered"
            time.sleep(0.1)
        #: The MCP endpoint clients use.
        self.url = f"http://{self.front}/mcp"

    def _replica_args(self, name: str) -> list[str]:
        return ["--state", self.postgres.url, "--replica", name] + self.args

    @staticmethod
    def _wait_ready(host: HttpHost, deadline: float) -> None:
        while not ready(host.authority):
            assert host.proc.poll() is None, f"a replica exited before it was ready:\n{host.log()[-3000:]}"
            assert time.monotonic() < deadline, f"a replica never became ready:\n{host.log()[-3000:]}"
            time.sleep(0.1)

    def replace(self, name: str, binary: Path, timeout: float = 120) -> HttpHost:
        """Replaces replica `name` by `binary`, as an operator's rollout
        does: SIGTERM (it drains and exits), then the new one on the same
        port, under the same name, with the same plugins and arguments;
        returns it once it answers /readyz with 200. The stopped one goes to
        `retired`, its log complete."""
        old = self.replicas[name]
        old.proc.send_signal(signal.SIGTERM)
        old.proc.wait(timeout=timeout)
        old.log_reader.join(timeout=20)
        self.retired.append((name, old))
        new = Replica(self.folders[name], self.env, self._replica_args(name), binary, http=old.authority)
        self.replicas[name] = new
        assert new.authority == old.authority, (new.authority, old.authority)
        self._wait_ready(new, time.monotonic() + timeout)
        return new

    def logs(self) -> list[tuple[str, str]]:
        """Every replica's log, stopped ones first: (name, text)."""
        return [(name, host.log()) for name, host in self.retired + list(self.replicas.items())]

    def close(self) -> None:
        if self.haproxy.poll() is None:
            self.haproxy.terminate()
            self.haproxy.wait(timeout=20)
        # Every replica is told at once (each drains for 2 s once idle),
        # then each is waited for.
        running = [host for host in self.replicas.values() if host.proc.poll() is None]
        for host in running:
            host.proc.terminate()
        for host in running:
            try:
                host.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                host.proc.kill()
                raise
        for host in self.replicas.values():
            host.close()

    def metric(self, name: str, replica: str, labels: str = "") -> float:
        """The sum of metric `name` (samples whose labels contain `labels`) on `replica`."""
        conn = http.client.HTTPConnection(self.replicas[replica].authority, timeout=30)
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
        conn.close()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and labels in line:
                total += float(line.rsplit(" ", 1)[1])
        return total


def post(authority: str, body: dict, headers: dict, timeout: float = 120):
    """POSTs `body` to /mcp at `authority`: (status, headers, the JSON-RPC reply with an id, or None)."""
    conn = http.client.HTTPConnection(authority, timeout=timeout)
    conn.request("POST", "/mcp", body=json.dumps(body), headers=dict(
        {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, **headers))
    response = conn.getresponse()
    raw = response.read().decode()
    conn.close()
    reply = None
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in raw.splitlines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if "id" in message:
                    reply = message
    elif raw:
        reply = json.loads(raw)
    return response.status, response.headers, reply
