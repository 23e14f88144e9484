"""A small identity provider on loopback for the tests: signing keys (RSA,
EC P-256, Ed25519) published as a JWKS and through a discovery document,
tokens minted with them, keys rotated at will, and misbehaviour on demand
(slow, huge or malformed answers)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

AUDIENCE = "wasm-mcp-test"


class Key:
    """One signing key and its public JWK."""

    def __init__(self, kid: str, kind: str):
        self.kid = kid
        if kind == "RS256":
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            algorithm = jwt.algorithms.RSAAlgorithm
        elif kind == "ES256":
            self.private = ec.generate_private_key(ec.SECP256R1())
            algorithm = jwt.algorithms.ECAlgorithm
        else:
            self.private = ed25519.Ed25519PrivateKey.generate()
            algorithm = jwt.algorithms.OKPAlgorithm
            kind = "EdDSA"
        self.alg = kind
        self.jwk = dict(json.loads(algorithm.to_jwk(self.private.public_key())), kid=kid, use="sig")


class IdentityProvider:
    """Serves `/jwks` and `/.well-known/openid-configuration`; `issuer` is
    its base URL."""

    def __init__(self):
        self.keys: list[Key] = []
        self.mode = "normal"  # or "slow", "huge", "malformed"
        self.fetches = 0
        self.fetched = threading.Event()
        #: Set to let a "slow" answer go.
        self.release = threading.Event()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path == "/.well-known/openid-configuration":
                    body = json.dumps({"issuer": provider.issuer, "jwks_uri": provider.issuer + "/jwks"}).encode()
                elif self.path == "/jwks":
                    provider.fetches += 1
                    provider.fetched.set()
                    body = provider._jwks()
                    if body is None:
                        return
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _jwks(self):
        if self.mode == "slow":
            self.release.wait(60)
        if self.mode == "huge":
            return b'{"keys": [' + b'{"kty": "oct", "k": "AAAA"},' * 400_000 + b"{}]}"
        if self.mode == "malformed":
            return b'{"keys": [ {"kty": "RSA", '
        return json.dumps({"keys": [k.jwk for k in self.keys]}).encode()

    def add(self, kid: str, kind: str = "RS256") -> Key:
        key = Key(kid, kind)
        self.keys.append(key)
        return key

    def token(self, key: Key, subject: str = "ada", audience: str = AUDIENCE, **claims) -> str:
        now = int(time.time())
        body = {"iss": self.issuer, "aud": audience, "sub": subject, "iat": now, "exp": now + 600, **claims}
        return jwt.encode(body, key.private, algorithm=key.alg, headers={"kid": key.kid})

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
