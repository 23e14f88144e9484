"""The container image (scripts/image: buildah from scratch, no daemon),
taken apart and run as a container runtime would run it: unpacked with
umoci, its own entrypoint, command and environment (from the image's
config) started with chroot as uid 65532 on the root filesystem mounted
read-only, with a tmpfs on /tmp, a state folder on /var/lib/wasm-mcp, and
/proc and a few device nodes: nothing else of this machine. Then pushed to
Debian's docker-registry and pulled back with skopeo. Needs root (CI runs
as root), buildah, skopeo and umoci (scripts/test-servers)."""

import http.client
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import BINARY, ROOT
from test_http_transport import call, open_session
from test_oci import Registry

TAG = "test"
SOURCE = "https://example.invalid/wasm-mcp"
REAL = {
    "time": "get_current_time",
    "filesystem": "read_text_file",
    "memory": "create_entities",
    "fetch": "fetch",
}
# What a runtime puts on PATH when the image sets none (docker, podman).
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="building and running the image needs root")


def run(*args, **kwargs):
    return subprocess.run(args, check=True, capture_output=True, text=True, timeout=300, **kwargs)


class Layout:
    """target/image/oci, an OCI image layout, read."""

    def __init__(self, path: Path):
        self.path = path

    def blob(self, digest: str) -> bytes:
        algorithm, hex_ = digest.split(":")
        return (self.path / "blobs" / algorithm / hex_).read_bytes()

    def digest(self, tag: str) -> str:
        index = json.loads((self.path / "index.json").read_text())
        (entry,) = [m for m in index["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == tag]
        return entry["digest"]

    def manifest(self, tag: str) -> dict:
        return json.loads(self.blob(self.digest(tag)))

    def config(self, tag: str) -> dict:
        return json.loads(self.blob(self.manifest(tag)["config"]["digest"]))

    def compressed_size(self, tag: str) -> int:
        manifest = self.manifest(tag)
        return (len(self.blob(self.digest(tag))) + manifest["config"]["size"]
                + sum(layer["size"] for layer in manifest["layers"]))


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    r = Registry(tmp_path_factory.mktemp("registry"))
    yield r
    r.close()


@pytest.fixture(scope="module")
def built(registry):
    """scripts/image run once: both tags written to target/image and pushed."""
    done = run(str(ROOT / "scripts" / "image"), "--no-build", "--tag", TAG, "--source", SOURCE,
               "--push", f"{registry.address}/wasm-mcp:{TAG}", "--insecure", cwd=ROOT)
    return Layout(ROOT / "target" / "image" / "oci"), done.stdout


def unpack(layout: Layout, tag: str, into: Path) -> Path:
    run("umoci", "unpack", "--image", f"{layout.path}:{tag}", str(into / "bundle"))
    return into / "bundle" / "rootfs"


def listing(rootfs: Path) -> dict[str, tuple[str, int, int]]:
    """Every path under the root: its kind and mode, owner and group."""
    found = {}
    for path in [rootfs, *rootfs.rglob("*")]:
        st = path.lstat()
        kind = "l" if path.is_symlink() else "d" if path.is_dir() else "f"
        found["/" + str(path.relative_to(rootfs)).lstrip(".")] = (f"{kind}{st.st_mode & 0o7777:o}", st.st_uid, st.st_gid)
    return found


def linked_libraries() -> set[str]:
    """What ldd resolves for the release binary, and its loader (as the image should hold)."""
    paths = set()
    for line in run("ldd", str(BINARY)).stdout.splitlines():
        match = re.search(r"(/\S+) \(0x", line)
        if match:
            paths.add(match.group(1))
    return paths


def parents(path: str) -> set[str]:
    out, parts = set(), path.strip("/").split("/")
    for i in range(1, len(parts)):
        out.add("/" + "/".join(parts[:i]))
    return out


def test_the_image_holds_the_binary_its_libraries_certificates_and_a_user_and_nothing_else(built, tmp_path):
    layout, printed = built
    rootfs = unpack(layout, TAG, tmp_path)
    files = {"/usr/local/bin/wasm-mcp", "/etc/ssl/certs/ca-certificates.crt", "/etc/passwd", "/etc/group",
             *linked_libraries()}
    assert any("libc.so" in f for f in files) and any("ld-linux" in f for f in files)
    dirs = {"/tmp", "/plugins", "/var/lib/wasm-mcp"}
    expected = {"/"} | files | dirs | {p for f in files | dirs for p in parents(f)}
    found = listing(rootfs)
    assert set(found) == expected
    assert all(found[f][0].startswith("f") for f in files), found
    assert found["/tmp"] == ("d1777", 0, 0)
    assert found["/plugins"][1:] == (65532, 65532)
    assert found["/var/lib/wasm-mcp"][1:] == (65532, 65532)
    assert {owner for path, (_, owner, _) in found.items() if path not in ("/plugins", "/var/lib/wasm-mcp")} == {0}
    # Each library is the machine's own, byte for byte; the binary is the
    # release build without its debug info, and says the same version.
    for library in linked_libraries():
        assert (rootfs / library.lstrip("/")).read_bytes() == Path(os.path.realpath(library)).read_bytes(), library
    assert (rootfs / "etc/ssl/certs/ca-certificates.crt").read_bytes() == Path("/etc/ssl/certs/ca-certificates.crt").read_bytes()
    assert "nonroot:x:65532:65532:" in (rootfs / "etc/passwd").read_text()
    assert "nonroot:x:65532:" in (rootfs / "etc/group").read_text()
    assert not any(any((rootfs / d.lstrip("/")).iterdir()) for d in dirs)

    # The config: user, entrypoint, command, port, state under /var/lib/wasm-mcp, labels.
    version_line = run(str(BINARY), "--version").stdout.strip()
    match = re.fullmatch(r"wasm-mcp (\S+) \(([0-9a-f]{40})\)", version_line)
    assert match, version_line
    version, revision = match.groups()
    config = layout.config(TAG)["config"]
    assert config["User"] == "65532:65532"
    assert config["Entrypoint"] == ["/usr/local/bin/wasm-mcp"]
    assert config["Cmd"] == ["serve", "--http", "0.0.0.0:8080", "--plugins", "/plugins"]
    assert set(config["ExposedPorts"]) == {"8080/tcp"}
    env = dict(e.split("=", 1) for e in config["Env"])
    assert env["HOME"] == "/var/lib/wasm-mcp" and env["XDG_CACHE_HOME"].startswith("/var/lib/wasm-mcp/")
    assert env["XDG_STATE_HOME"] + "/wasm-mcp" == "/var/lib/wasm-mcp"
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == version
    assert labels["org.opencontainers.image.revision"] == revision
    assert labels["org.opencontainers.image.source"] == SOURCE
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    # Created when the commit was (the same commit, the same image).
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH")
                or run("git", "show", "-s", "--format=%ct", revision, cwd=ROOT).stdout)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    assert labels["org.opencontainers.image.created"] == created == layout.config(TAG)["created"]

    # What the script printed: each tag's digest and compressed size.
    for tag in (TAG, f"{TAG}-plugins"):
        size = layout.compressed_size(tag)
        assert f"wasm-mcp:{tag}  {layout.digest(tag)}  {size} bytes compressed" in printed, printed
    # A bound, not a measure: the binary is ~60 MB, ~20 MB compressed.
    assert layout.compressed_size(TAG) < 40_000_000


def test_the_plugins_tag_adds_the_real_plugins_and_nothing_else(built, tmp_path):
    layout, _ = built
    base, plugins = layout.manifest(TAG), layout.manifest(f"{TAG}-plugins")
    assert plugins["layers"][:-1] == base["layers"]  # the same base layer, shared in a registry
    rootfs = unpack(layout, f"{TAG}-plugins", tmp_path)
    added = {p: v for p, v in listing(rootfs).items() if p.startswith("/plugins/")}
    top = {p for p in added if p.count("/") == 2}
    expected = {f"/plugins/{name}.{ext}" for name in REAL for ext in ("wasm", "toml")}
    assert expected <= top and top - expected == {p for p in top if p.endswith(".skills")}
    for name in REAL:
        assert (rootfs / "plugins" / f"{name}.wasm").read_bytes() == (ROOT / "dist" / "plugins" / f"{name}.wasm").read_bytes()
    assert {owner for _, owner, _ in added.values()} == {0}  # the plugins: not the server's to change


class Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the http.server name)
        body = b"<html><body><h1>From the test</h1><p>served on loopback</p></body></html>"
        status = 200 if self.path == "/page.html" else 404
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


# Run inside `unshare --mount --pid --fork`: the root filesystem bound
# read-only, then what a runtime adds (tmpfs /tmp, the state volume, its
# /etc/hosts, /proc, device nodes in a tmpfs /dev), then the image's
# entrypoint via chroot.
CONTAINER = r"""
set -eu
rootfs=$1 mnt=$2 state=$3 hosts=$4; shift 4
mount --make-rprivate /
mount --bind "$rootfs" "$mnt"
mount -o remount,bind,ro,nosuid,nodev "$mnt"
mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m tmpfs "$mnt/tmp"
mount --bind "$state" "$mnt/var/lib/wasm-mcp"
mount --bind -o ro "$hosts" "$mnt/etc/hosts"
mount -t proc -o nosuid,nodev,noexec proc "$mnt/proc"
mount -t tmpfs -o mode=755,nosuid,size=1m tmpfs "$mnt/dev"
for node in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
    IFS=: read -r name major minor <<<"$node"
    mknod -m 666 "$mnt/dev/$name" c "$major" "$minor"
done
exec chroot --userspec=65532:65532 "$mnt" "$@"
"""


class Container:
    def __init__(self, rootfs: Path, state: Path, hosts: Path, argv: list[str], env: dict, work: Path):
        script = work / "container.sh"
        script.write_text(CONTAINER)
        (work / "mnt").mkdir()
        self.stderr = open(work / "stderr.log", "wb")
        self.proc = subprocess.Popen(
            ["unshare", "--mount", "--pid", "--fork", "--kill-child", "bash", str(script),
             str(rootfs), str(work / "mnt"), str(state), str(hosts), *argv],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr, env=env,
            start_new_session=True)
        self.log_path = work / "stderr.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # unshare passes it on to nobody: the group gets it
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.stderr.close()


def children_of(proc: Path, parent: int) -> bool:
    try:
        stat = (proc / "stat").read_text()
    except OSError:
        return False
    return int(stat.rsplit(")", 1)[1].split()[1]) == parent


def answer(reply) -> dict:
    messages = reply.json()
    messages = messages if isinstance(messages, list) else [messages]
    (message,) = [m for m in messages if "id" in m]
    assert "result" in message, message
    return message["result"]


def test_the_image_serves_the_real_plugins_read_only_as_uid_65532(built, tmp_path):
    layout, _ = built
    rootfs = unpack(layout, f"{TAG}-plugins", tmp_path)
    # Mount points a runtime makes before it mounts the root read-only.
    (rootfs / "proc").mkdir()
    (rootfs / "dev").mkdir()
    (rootfs / "etc" / "hosts").touch()
    # The hosts file a runtime writes: the fetch plugin is granted a name.
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n127.0.0.1 site.test\n")
    # The state volume: the config (grants), and a folder to grant.
    state = tmp_path / "state"
    (state / "files").mkdir(parents=True)
    (state / "files" / "note.txt").write_text("hello from the image\n")
    (state / "config.toml").write_text(
        '[roots.files]\npath = "/var/lib/wasm-mcp/files"\nmode = "read-only"\n\n'
        '[plugins.filesystem]\nroots = ["files"]\n\n'
        '[plugins.memory]\nkeyvalue = true\n\n'
        '[plugins.fetch]\nhosts = ["site.test"]\n')
    shutil.chown(state, 65532, 65532)
    os.chmod(state, 0o700)
    for path in state.rglob("*"):
        shutil.chown(path, 65532, 65532)

    config = layout.config(f"{TAG}-plugins")["config"]
    cmd = [("127.0.0.1:0" if arg == "0.0.0.0:8080" else arg) for arg in config["Cmd"]]
    assert cmd != config["Cmd"]
    env = {"PATH": PATH, **dict(e.split("=", 1) for e in config["Env"]),
           "WASM_MCP_CONFIG": "/var/lib/wasm-mcp/config.toml", "RUST_LOG": "info",
           "WASM_MCP_STARTUP_WAIT_MS": "600000"}

    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    container = Container(rootfs, state, hosts, config["Entrypoint"] + cmd, env, tmp_path)
    try:
        line = container.proc.stdout.readline().decode().strip()
        assert line.startswith("http://127.0.0.1:"), f"no URL on stdout: {line!r}\n{container.log()[-3000:]}"

        class Host:
            url = line
            authority = line.split("/")[2]

        connection = http.client.HTTPConnection(Host.authority, timeout=60)
        connection.request("GET", "/healthz")
        assert connection.getresponse().status == 200
        connection.close()

        session = open_session(Host)
        listed = {t["name"] for t in answer(call(Host, session, 2, "tools/list"))["tools"]}
        assert set(REAL.values()) <= listed, listed

        def tool(id_, name, arguments) -> str:
            result = answer(call(Host, session, id_, "tools/call", {"name": name, "arguments": arguments}))
            assert not result.get("isError"), result
            return "".join(c.get("text", "") for c in result["content"])

        assert "UTC" in tool(3, "get_current_time", {"timezone": "UTC"})
        assert "hello from the image" in tool(4, "read_text_file", {"path": "/files/note.txt"})
        tool(5, "create_entities", {"entities": [{"name": "image", "entityType": "test", "observations": ["ran"]}]})
        assert '"image"' in tool(6, "read_graph", {})
        page = f"http://site.test:{site.server_address[1]}/page.html"  # through /etc/hosts
        fetched = tool(7, "fetch", {"url": page})
        assert fetched.startswith(f"Contents of {page}:") and "served on loopback" in fetched, fetched

        # The server is the image's binary, as 65532:65532, on a read-only root.
        (pid,) = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and children_of(p, container.proc.pid)]
        status = Path(f"/proc/{pid}/status").read_text()
        assert "\nUid:\t65532\t65532\t65532\t65532\n" in status and "\nGid:\t65532\t65532\t65532\t65532\n" in status
        mounts = {fields[4]: fields[5].split(",") for fields in
                  (line.split() for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines())}
        assert "ro" in mounts["/"] and "rw" in mounts["/tmp"] and "rw" in mounts["/var/lib/wasm-mcp"], mounts
        assert set(mounts) == {"/", "/tmp", "/var/lib/wasm-mcp", "/etc/hosts", "/proc", "/dev"}, mounts
        # It wrote where the image says state goes, as 65532; nowhere else could it.
        for name in ("keyvalue.db", "tasks.db", "cache.key"):
            assert (state / name).stat().st_uid == 65532, name
        assert any((state / "cache").rglob("*")), "the compile cache is under /var/lib/wasm-mcp"
        assert "Read-only file system" not in container.log() and "Permission denied" not in container.log()
    finally:
        container.close()
        site.shutdown()
    assert not any((rootfs / "tmp").iterdir())


def test_pushed_and_pulled_back_the_digests_agree(built, registry, tmp_path):
    layout, printed = built
    for tag in (TAG, f"{TAG}-plugins"):
        assert f"pushed {registry.address}/wasm-mcp:{tag}" in printed
        remote = f"docker://{registry.address}/wasm-mcp:{tag}"
        inspected = json.loads(run("skopeo", "inspect", "--tls-verify=false", remote).stdout)
        assert inspected["Digest"] == layout.digest(tag)
        assert inspected["Labels"]["org.opencontainers.image.source"] == SOURCE
        pulled = tmp_path / "pulled"
        run("skopeo", "copy", "--quiet", "--src-tls-verify=false", "--preserve-digests", remote, f"oci:{pulled}:{tag}")
        back = Layout(pulled)
        assert back.digest(tag) == layout.digest(tag)
        assert back.manifest(tag) == layout.manifest(tag)
        for layer in back.manifest(tag)["layers"]:
            assert back.blob(layer["digest"]) == layout.blob(layer["digest"])


def test_the_same_commit_builds_the_same_image(built):
    """Run last: it builds again over target/image (the same bytes, if it passes)."""
    layout, _ = built
    before = {tag: layout.digest(tag) for tag in (TAG, f"{TAG}-plugins")}
    run(str(ROOT / "scripts" / "image"), "--no-build", "--tag", TAG, "--source", SOURCE, cwd=ROOT)
    assert {tag: layout.digest(tag) for tag in before} == before
