"""SASL login on a broker connection: PLAIN and SCRAM-SHA-256/512 (RFC 5802, 7677), over
SaslHandshake v1 and SaslAuthenticate v1 (both non-flexible).

The exchange is pure (:class:`Scram` computes each message from the last answer; no
socket here); :func:`log_in` runs it on a connection after its ApiVersions check. The
server's final signature is verified, so a broker that does not know the password cannot
pass for one that does. Not spoken: GSSAPI (Kerberos) and OAUTHBEARER, and
re-authentication when a broker sets ``connections.max.reauth.ms`` (the broker then
closes the connection when the session ends, and the copy reconnects).

    client-first   n,,n=user,r=<client nonce>
    server-first   r=<client nonce + server nonce>,s=<salt, base64>,i=<iterations>
    client-final   c=biws,r=<nonce>,p=<base64(ClientKey XOR HMAC(StoredKey, AuthMessage))>
    server-final   v=<base64(HMAC(ServerKey, AuthMessage))>
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from srm_driver.copier.wire.primitives import Reader, Writer

HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *HASHES)


@dataclass(frozen=True)
class Sasl:
    mechanism: str
    username: str
    password: str = field(repr=False)

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ValueError(
                f"SASL mechanism {self.mechanism!r}: this layer speaks {', '.join(MECHANISMS)}"
            )


class ScramRefused(ValueError):
    """A server-first or server-final message that does not hold (see :class:`Scram`)."""


class Scram:
    """One SCRAM exchange: :meth:`first`, then :meth:`final` with the server's first
    message, then :meth:`verify` with its final one."""

    def __init__(self, sasl: Sasl, nonce: str | None = None) -> None:
        self._hash = HASHES[sasl.mechanism]
        self._password = sasl.password.encode()
        name = sasl.username.replace("=", "=3D").replace(",", "=2C")
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._first_bare = f"n={name},r={self._nonce}"
        self._auth_message = b""
        self._server_key = b""

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self._hash).digest()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        fields = dict(item.split("=", 1) for item in text.split(",") if "=" in item)
        nonce, salt, rounds = fields.get("r", ""), fields.get("s"), fields.get("i", "")
        if not nonce.startswith(self._nonce) or salt is None or not rounds.isdigit():
            raise ScramRefused(f"a server-first message that does not hold: {text!r}")
        salted = hashlib.pbkdf2_hmac(
            self._hash, self._password, base64.b64decode(salt), int(rounds)
        )
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        self._auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        signature = self._hmac(stored_key, self._auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_key = self._hmac(salted, b"Server Key")
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode()
        expected = base64.b64encode(self._hmac(self._server_key, self._auth_message)).decode()
        if not hmac.compare_digest(text, f"v={expected}"):
            raise ScramRefused(f"the server's signature does not hold: {text!r}")


def handshake_request(mechanism: str) -> bytes:
    return bytes(Writer().string(mechanism).buffer)


def handshake_response(view: memoryview) -> tuple[int, list[str]]:
    """(error code, the mechanisms the broker enables)."""
    reader = Reader(view)
    error = reader.int16()
    return error, [reader.string() for _ in range(reader.array())]


def authenticate_request(token: bytes) -> bytes:
    return bytes(Writer().int32(len(token)).buffer) + token


def authenticate_response(view: memoryview) -> tuple[int, str | None, bytes]:
    """(error code, the broker's message, its token)."""
    reader = Reader(view)
    error, message = reader.int16(), reader.nullable_string()
    token = reader.nullable_bytes()
    return error, message, bytes(token) if token is not None else b""


def exchange(sasl: Sasl, authenticate: Callable[[bytes], bytes]) -> None:
    """The tokens of ``sasl``'s mechanism through ``authenticate`` (a SaslAuthenticate
    round trip that raises on an error code)."""
    if sasl.mechanism == "PLAIN":
        authenticate(f"\0{sasl.username}\0{sasl.password}".encode())
        return
    scram = Scram(sasl)
    server_first = authenticate(scram.first())
    scram.verify(authenticate(scram.final(server_first)))
