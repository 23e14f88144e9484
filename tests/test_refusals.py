"""A refused caller is told why, and so is the operator: each kind of bad
token gets a 401 whose `error_description` names the reason and a log line
with it (and the principal and client address where known); a flood of
bad tokens is logged bounded, with a count of the lines left out; a rate
refusal says when to retry over HTTP and over stdio."""

import base64
import http.client
import json
import re
import shutil
import time

import jwt
import pytest

from conftest import PLUGINS, RawHost, modern_meta
from identity import AUDIENCE, IdentityProvider, Key
from test_http_transport import BASE_HEADERS, modern, post, request

REFUSED = "wasm_mcp::refused: refused a request"


@pytest.fixture
def idp():
    provider = IdentityProvider()
    yield provider
    provider.close()


@pytest.fixture
def hello(tmp_path):
    folder = tmp_path / "plugins"
    folder.mkdir()
    shutil.copy(PLUGINS / "hello.wasm", folder / "hello.wasm")
    return folder


def start(http_host_factory, folder, host_env, tmp_path, idp, server="", rest=""):
    config = tmp_path / "refusals.toml"
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    config.write_text(
        f'[server]\ncache_dir = "{cache}"\n{server}\n{rest}\n'
        '[http.auth]\nauthorization_servers = ["' + idp.issuer + '"]\n'
        f'[http.auth.jwt]\nissuer = "{idp.issuer}"\naudience = "{AUDIENCE}"\n'
        f'jwks_url = "{idp.issuer}/jwks"\njwks_min_refresh_secs = 0\n'
    )
    return http_host_factory(folder, env=dict(host_env, WASM_MCP_CONFIG=str(config)))


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def discover(host, **headers):
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}
    return post(host, body, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}, **headers)


def challenge_params(header: str) -> dict:
    """The auth-params of a `Bearer` challenge, asserted well formed
    (every value a quoted-string without quotes, backslashes or controls)."""
    assert header.startswith("Bearer "), header
    params = {}
    for part in re.findall(r'(\w+)="([^"\\\x00-\x1f]*)"(?:, |$)', header[len("Bearer "):]):
        params[part[0]] = part[1]
    rebuilt = "Bearer " + ", ".join(f'{k}="{v}"' for k, v in params.items())
    assert rebuilt == header, (rebuilt, header)
    return params


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_each_bad_token_is_told_why_and_logged(http_host_factory, hello, host_env, tmp_path, idp):
    key = idp.add("k1", "RS256")
    host = start(http_host_factory, hello, host_env, tmp_path, idp)
    assert discover(host, **bearer(idp.token(key))).status == 200

    now = int(time.time())
    stranger = Key("ghost", "RS256")
    impostor = Key("k1", "RS256")  # names k1, signed with another key
    good = idp.token(key)
    payload = good.split(".")[1]
    unsigned = f'{b64(json.dumps({"alg": "none", "kid": "k1"}).encode())}.{payload}.'
    hs = jwt.encode({"iss": idp.issuer, "aud": AUDIENCE, "sub": "ada", "exp": now + 600}, "secret-of-32-bytes-at-the-least!",
                    algorithm="HS256", headers={"kid": "k1"})
    cases = [
        ("expired", idp.token(key, subject="ada-expired", exp=now - 3600, iat=now - 7200),
         "the token has expired"),
        ("not_yet_valid", idp.token(key, nbf=now + 3600), "the token is not valid yet"),
        ("wrong_audience", idp.token(key, subject="ada-aud", audience="someone-else"),
         "the token is for another audience"),
        ("wrong_issuer", idp.token(key, iss="http://127.0.0.1:9/other"), "the token is from another issuer"),
        ("unknown_key", idp.token(stranger), "signing key this server does not know"),
        ("bad_signature", idp.token(impostor), "the token signature does not verify"),
        ("malformed", "garbage", "not a well-formed JWT"),
        ("algorithm_not_allowed", unsigned, "algorithm not accepted"),
        ("algorithm_not_allowed", hs, "algorithm not accepted"),
    ]
    for reason, token, description in cases:
        reply = discover(host, **bearer(token))
        assert reply.status == 401, (reason, reply.raw)
        params = challenge_params(reply.headers["www-authenticate"])
        assert params["error"] == "invalid_token", (reason, params)
        assert description in params["error_description"], (reason, params)
        assert "/.well-known/oauth-protected-resource" in params["resource_metadata"]
        error = reply.json()["error"]
        assert error["code"] == -32001 and error["data"] == {"reason": reason}, (reason, error)
        assert description in error["message"]
        log = host.wait_for_log(f"reason={reason} ", timeout=30)
        line = next(l for l in log.splitlines() if f"reason={reason} " in l)
        assert REFUSED in line and " INFO " in f" {line}", line
        assert re.search(r"client=127\.0\.0\.1:\d+", line), line
        # The token is never logged.
        assert token not in log, reason

    log = host.log()
    # The principal of a token whose signature verified is named; a forged
    # one's is not.
    expired = next(l for l in log.splitlines() if "reason=expired" in l)
    assert f'principal="jwt:{idp.issuer}#ada-expired"' in expired, expired
    forged = next(l for l in log.splitlines() if "reason=bad_signature" in l)
    assert "principal=" not in forged, forged

    # No token at all: a challenge without an error (RFC 6750 3.1); a
    # scheme that is not Bearer: invalid_request. Both logged.
    bare = discover(host)
    assert bare.status == 401
    assert "error" not in challenge_params(bare.headers["www-authenticate"])
    host.wait_for_log("reason=missing_token ", timeout=30)
    basic = discover(host, Authorization="Basic YWRhOnNlY3JldA==")
    params = challenge_params(basic.headers["www-authenticate"])
    assert params["error"] == "invalid_request" and "Bearer" in params["error_description"]
    line = next(l for l in host.wait_for_log("reason=not_bearer ", timeout=30).splitlines()
                if "reason=not_bearer" in l)
    assert "YWRhOnNlY3JldA" not in line, line


def test_attacker_text_is_never_echoed_unquoted(http_host_factory, hello, host_env, tmp_path, idp):
    idp.add("k1", "RS256")
    host = start(http_host_factory, hello, host_env, tmp_path, idp)
    # A kid and an alg with quotes, backslashes and a forged log line.
    evil_kid = 'x"\\\n2026-01-01T00:00:00Z  INFO all is well'
    header = b64(json.dumps({"alg": "RS256", "kid": evil_kid}).encode())
    token = f"{header}.{b64(b'{}')}.{b64(b'sig')}"
    reply = discover(host, **bearer(token))
    assert reply.status == 401
    params = challenge_params(reply.headers["www-authenticate"])
    assert params["error_description"] == "the token names a signing key this server does not know"
    log = host.wait_for_log("reason=unknown_key ", timeout=30)
    # The forged line stays inside the refusal's, escaped.
    assert not [l for l in log.splitlines() if l.startswith("2026-01-01T00:00:00Z")], log
    line = next(l for l in log.splitlines() if "reason=unknown_key" in l)
    assert 'x\\\"\\\\\\n2026-01-01T00:00:00Z' in line, line
    evil_alg = b64(json.dumps({"alg": 'none"\r\nX-Injected: 1'}).encode())
    reply = discover(host, **bearer(f"{evil_alg}.{b64(b'{}')}."))
    assert reply.status == 401
    assert "x-injected" not in reply.headers
    challenge_params(reply.headers["www-authenticate"])
    line = next(l for l in host.wait_for_log("reason=algorithm_not_allowed ", timeout=30).splitlines()
                if "reason=algorithm_not_allowed" in l)
    assert '\\"\\r\\nX-Injected: 1' in line, line


def refusal_counts(log: str) -> tuple[int, int]:
    """Refusal lines logged, and refusals counted as left out."""
    lines = sum(1 for l in log.splitlines() if REFUSED in l)
    left_out = sum(int(n) for n in re.findall(r"(\d+) more refused requests were not logged", log))
    return lines, left_out


def test_a_flood_of_bad_tokens_is_logged_bounded(http_host_factory, hello, host_env, tmp_path, idp):
    idp.add("k1", "RS256")
    host = start(http_host_factory, hello, host_env, tmp_path, idp)
    conn = http.client.HTTPConnection(host.authority, timeout=60)
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": modern_meta()}}
    headers = dict(BASE_HEADERS, **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
    started = time.monotonic()
    for i in range(500):
        reply = request(host, "POST", body, dict(headers, **bearer(f"garbage-{i}")), conn=conn)
        assert reply.status == 401
    windows = int((time.monotonic() - started) // 10) + 2
    conn.close()
    # Every refusal is either a line or counted in a summary, which comes
    # at the end of its window (10 s).
    deadline = time.monotonic() + 60
    while sum(refusal_counts(host.log())) < 500:
        assert time.monotonic() < deadline, refusal_counts(host.log())
        time.sleep(0.5)
    lines, left_out = refusal_counts(host.log())
    assert lines + left_out == 500, (lines, left_out)
    assert lines <= 20 * windows, lines
    assert left_out >= 500 - 20 * windows
    assert " WARN " in next(l for l in host.log().splitlines() if "were not logged" in l)


def test_a_rate_refusal_says_when_to_retry_over_http(http_host_factory, hello, host_env, tmp_path, idp):
    key = idp.add("k1", "EdDSA")
    host = start(http_host_factory, hello, host_env, tmp_path, idp, server="calls_per_sec_per_principal = 1",
                 rest='[plugins.hello]\nscopes = ["hello:use"]\n')
    token = idp.token(key, subject="rita", scope="hello:use")
    greet = {"name": "greet", "arguments": {"name": "x"}}
    replies = [modern(host, i, "tools/call", greet, **bearer(token)) for i in range(6)]
    limited = [r for r in replies if r.status == 429]
    assert limited, [r.status for r in replies]
    first = limited[0]
    assert int(first.headers["retry-after"]) >= 1
    error = first.json()["error"]
    assert error["data"]["retryAfterMs"] >= 1
    assert re.search(r"retry in \d+ ms", error["message"]), error
    line = next(l for l in host.wait_for_log("reason=rate ", timeout=30).splitlines() if "reason=rate " in l)
    assert f'principal="jwt:{idp.issuer}#rita"' in line, line

    # A token without the scope the plugin needs: 403, and logged as such.
    bare = idp.token(key, subject="sam")
    refused = modern(host, 10, "tools/call", greet, **bearer(bare))
    assert refused.status == 403
    line = next(l for l in host.wait_for_log("reason=missing_scope ", timeout=30).splitlines()
                if "reason=missing_scope " in l)
    assert "hello:use" in line and f"#sam" in line, line


def test_a_rate_refusal_says_when_to_retry_over_stdio(hello, host_env, tmp_path):
    config = tmp_path / "rates.toml"
    cache = host_env["WASM_MCP_CONFIG"].rsplit("/", 1)[0]
    config.write_text(f'[server]\ncache_dir = "{cache}"\ncalls_per_sec_per_principal = 1\n')
    host = RawHost(hello, dict(host_env, WASM_MCP_CONFIG=str(config)))
    try:
        host.initialize()
        answers = [host.request("tools/call", {"name": "greet", "arguments": {"name": "x"}}) for _ in range(6)]
        refused = [a["error"] for a in answers if "error" in a]
        assert refused, answers
        assert refused[0]["data"]["retryAfterMs"] >= 1, refused[0]
        assert re.search(r"retry in \d+ ms", refused[0]["message"]), refused[0]
        # The stateless revision over stdio says so too.
        stateless = [host.request("tools/call", {"name": "greet", "arguments": {"name": "x"}, "_meta": modern_meta()})
                     for _ in range(4)]
        assert any(a.get("error", {}).get("data", {}).get("retryAfterMs", 0) >= 1 for a in stateless), stateless
        host.wait_for_log("reason=rate ", timeout=30)
    finally:
        host.close()
