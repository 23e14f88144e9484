"""HTTPS without a proxy: the host serves TLS from PEM files ([http]
tls_cert_file, tls_key_file) over HTTP/1.1 and HTTP/2, and takes up a
certificate replaced on disk without a restart. Driven by the real Python
`mcp` client and by Node's HTTP/2 client."""

import datetime
import ipaddress
import json
import os
import shutil
import socket
import ssl
import subprocess
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import Client

from conftest import PLUGINS

pytestmark = pytest.mark.anyio


class Authority:
    """A throwaway certificate authority, and server certificates for 127.0.0.1."""

    def __init__(self, folder):
        self.folder = folder
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "wasm-mcp test CA")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.name = name
        self.cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.ca_file = folder / "ca.pem"
        self.ca_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, cert_file, key_file) -> bytes:
        """A new key and certificate for 127.0.0.1, written by rename (as
        certificate managers do); its DER."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(self.name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(self.key, hashes.SHA256())
        )
        for path, data in (
            (key_file, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption())),
            (cert_file, cert.public_bytes(serialization.Encoding.PEM)),
        ):
            fresh = path.with_suffix(".new")
            fresh.write_bytes(data)
            os.replace(fresh, path)
        return cert.public_bytes(serialization.Encoding.DER)


def served_certificate(authority: str, ca_file) -> bytes:
    context = ssl.create_default_context(cafile=str(ca_file))
    host, port = authority.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname=host) as tls:
            return tls.getpeercert(binary_form=True)


@pytest.fixture
def https_host(http_host_factory, host_env, tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    ca = Authority(tmp_path)
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    first = ca.issue(cert, key)
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    config = tmp_path / "https.toml"
    config.write_text(f'[server]\ncache_dir = "{cache}"\n[http]\ntls_cert_file = "server.pem"\n'
                      'tls_key_file = "server.key"\n')
    host = http_host_factory(folder, env=dict(host_env, WASM_MCP_CONFIG=str(config)))
    return host, ca, cert, key, first


async def test_the_python_client_over_https_and_a_certificate_rotated(https_host, monkeypatch):
    host, ca, cert, key, first = https_host
    assert host.url.startswith("https://127.0.0.1:")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.ca_file))
    for mode in ("legacy", "2026-07-28"):
        async with Client(host.url, mode=mode, read_timeout_seconds=120) as c:
            greet = await c.call_tool("greet", {"name": "tls"})
            assert greet.content[0].text == "Hello, tls!"
    assert served_certificate(host.authority, ca.ca_file) == first

    # Replaced on disk: new connections get the new certificate.
    second = ca.issue(cert, key)
    deadline = time.time() + 30
    while time.time() < deadline and served_certificate(host.authority, ca.ca_file) != second:
        time.sleep(0.2)
    assert served_certificate(host.authority, ca.ca_file) == second
    async with Client(host.url, mode="legacy", read_timeout_seconds=120) as c:
        assert (await c.call_tool("greet", {"name": "again"})).content[0].text == "Hello, again!"

    # A broken replacement keeps the pair that was serving.
    cert.write_text("not a certificate")
    host.wait_for_log("do not load (the old pair is served)", timeout=30)
    assert served_certificate(host.authority, ca.ca_file) == second
    # Plain HTTP on the TLS port is not served.
    with socket.create_connection(tuple([host.authority.split(":")[0], int(host.authority.split(":")[1])]),
                                  timeout=10) as raw:
        raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        raw.settimeout(10)
        try:
            answer = raw.recv(1024)
        except (ConnectionResetError, socket.timeout):
            answer = b""
        assert not answer.startswith(b"HTTP/1.1 200")


NODE_H2 = r"""
const http2 = require("node:http2");
const fs = require("node:fs");
const [url, ca] = process.argv.slice(1);
const target = new URL(url);
const session = http2.connect(target.origin, { ca: fs.readFileSync(ca) });
session.on("error", (e) => { console.error(e); process.exit(2); });
const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call",
  params: { name: "greet", arguments: { name: "h2" }, _meta: {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": { name: "h2", version: "1" } } } });
const request = session.request({ ":method": "POST", ":path": target.pathname,
  "content-type": "application/json", accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "greet" });
let text = "";
let status = 0;
request.on("response", (headers) => { status = headers[":status"]; });
request.setEncoding("utf8");
request.on("data", (chunk) => { text += chunk; });
request.on("end", () => {
  console.log(JSON.stringify({ status, alpn: session.alpnProtocol, text }));
  session.close();
});
request.end(body);
"""


def test_http2_over_tls(https_host, host_env):
    host, ca, *_ = https_host
    node = shutil.which("node", path=host_env.get("PATH"))
    assert node, "node is not on PATH (scripts/test installs it)"
    run = subprocess.run([node, "-e", NODE_H2, host.url, str(ca.ca_file)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert answer["status"] == 200 and answer["alpn"] == "h2", answer
    assert "Hello, h2!" in answer["text"]
