"""Who may change things over HTTP, decided without I/O: tokens files, principals, the
Host and Origin checks. Pure (stdlib only); :mod:`srm_common.adapters.http_auth` applies
it to every request of every service.

**Tokens file.** One principal per line; the token is stored as its SHA-256 so that the
file on a server holds nothing a caller could present::

    # principal        token (sha256:<hex of the token's SHA-256>, or the token itself)
    admin              sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8
    driver:d1          sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    api-gateway        4qX0...   (accepted; the file then holds a usable token: prefer a hash)

A presented token is hashed and compared with every entry in constant time
(:func:`hmac.compare_digest`), so neither the comparison nor its position leaks it.

**Principals.** A bearer token names the principal of its line; a client certificate
(HTTPS listener with client auth) names the subject's CN. A principal allowed to
delegate (``srm.http.delegators``, default ``api-gateway`` and ``driver:*``) may say whom
it acts for (``X-SRM-On-Behalf-Of``); the audit then reads ``alice via api-gateway``.
Anyone else saying so is refused: the header is trusted only from the principals named.

**Host check.** A browser reaches a loopback API from a web page by DNS rebinding: the
page's own name is made to resolve to 127.0.0.1, and the request carries that name in
``Host``. So a request is served only when its Host is an IP address (a rebinding page
cannot send one), ``localhost``, this service's advertised name, or a name of
``srm.http.allowed.hosts``. **Origin check.** A browser's cross-site POST carries an
``Origin`` that differs from the Host; it is refused, since a browser may send a client
certificate by itself.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from srm_common.errors import ConfigError

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ON_BEHALF_OF = "x-srm-on-behalf-of"
DEFAULT_DELEGATORS = ("api-gateway", "driver:*")
MIN_TOKEN_CHARS = 16
PRINCIPAL = re.compile(r"^[A-Za-z0-9._@:+=/-]{1,200}$")
_HASH = re.compile(r"^sha256:([0-9a-fA-F]{64})$")
HOW_TO_AUTHENTICATE = (
    "send 'Authorization: Bearer <token>' with a token of the tokens file"
    " (srm.http.tokens.file), or a client certificate to an HTTPS listener with"
    " listeners.https.ssl.client.auth"
)


def token_hash(token: str) -> str:
    """``sha256:<hex>``: how a token is written in a tokens file."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who asks: ``name``, and ``via`` the delegating service that relayed the request."""

    name: str
    via: str | None = None

    def __str__(self) -> str:
        return self.name if self.via is None else f"{self.name} via {self.via}"


@dataclass(frozen=True)
class Tokens:
    """Digests of the tokens of a tokens file, by principal."""

    digests: tuple[tuple[bytes, str], ...] = ()

    def principal(self, token: str) -> str | None:
        """The principal whose token this is; None when it is no one's."""
        presented = hashlib.sha256(token.encode()).digest()
        found: str | None = None
        for digest, name in self.digests:
            # Every entry is compared, found or not, so the time does not tell where.
            if hmac.compare_digest(presented, digest) and found is None:
                found = name
        return found

    def with_token(self, name: str, token: str) -> Tokens:
        """These tokens and one more (a per-run secret held in memory only)."""
        return Tokens((*self.digests, (hashlib.sha256(token.encode()).digest(), name)))

    def __len__(self) -> int:
        return len(self.digests)


def parse_tokens(text: str, *, source: str) -> Tokens:
    """The tokens of a tokens file's ``text``; :class:`ConfigError` naming the line (and
    never the token) when a line is not ``principal token``."""
    digests: list[tuple[bytes, str]] = []
    seen: dict[bytes, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ConfigError(
                f"line {number} has {len(parts)} fields; write 'principal sha256:<hex>'"
                " (or 'principal token')",
                source=source,
                line=number,
            )
        name, secret = parts
        if not PRINCIPAL.match(name):
            raise ConfigError(
                f"line {number}: principal {name[:40]!r} may use letters, digits and"
                " . _ @ : + = / -",
                source=source,
                line=number,
            )
        hashed = _HASH.match(secret)
        if hashed is not None:
            digest = bytes.fromhex(hashed.group(1))
        elif secret.lower().startswith("sha256:"):
            raise ConfigError(
                f"line {number} ({name}): a sha256: entry needs 64 hex digits",
                source=source,
                line=number,
            )
        elif len(secret) < MIN_TOKEN_CHARS:
            raise ConfigError(
                f"line {number} ({name}): the token is {len(secret)} characters; use at least"
                f" {MIN_TOKEN_CHARS} (python3 -c 'import secrets;"
                " print(secrets.token_urlsafe(32))')",
                source=source,
                line=number,
            )
        else:
            digest = hashlib.sha256(secret.encode()).digest()
        if digest in seen:
            raise ConfigError(
                f"line {number} ({name}) has the same token as line {seen[digest]}: give"
                " each principal its own",
                source=source,
                line=number,
            )
        seen[digest] = number
        digests.append((digest, name))
    return Tokens(tuple(digests))


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None otherwise."""
    scheme, _, token = (header or "").strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


@dataclass(frozen=True)
class AccessPolicy:
    """What a service accepts: its tokens, who may delegate, the hosts it answers to."""

    tokens: Tokens = field(default_factory=Tokens)
    delegators: tuple[str, ...] = DEFAULT_DELEGATORS
    allowed_hosts: frozenset[str] = frozenset()
    any_host: bool = False
    client_certificates: bool = False  # an HTTPS listener asking for client certificates

    def may_delegate(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.delegators)

    def with_hosts(self, hosts: Iterable[str]) -> AccessPolicy:
        names = {h.strip().lower() for h in hosts if h.strip()}
        return AccessPolicy(
            self.tokens,
            self.delegators,
            self.allowed_hosts | (names - {"*"}),
            self.any_host or "*" in names,
            self.client_certificates,
        )


@dataclass(frozen=True)
class Refusal:
    status: int
    error: str


def authenticate(
    policy: AccessPolicy, headers: Mapping[str, str], certificate_name: str | None
) -> Principal | Refusal:
    """The principal of a request (headers with lower-case names), or why it has none.

    A bearer token wins over a certificate; a token that is no one's is refused even when
    a certificate would do, so a typo never passes unnoticed."""
    if not policy.tokens and not policy.client_certificates:
        return Refusal(
            401,
            "this service accepts no changes: it has no tokens file"
            " (srm.http.tokens.file or SRM_HTTP_TOKENS_FILE) and no HTTPS listener"
            " asking for client certificates",
        )
    token = bearer(headers.get("authorization"))
    name: str | None
    if token is not None:
        name = policy.tokens.principal(token)
        if name is None:
            return Refusal(401, f"the bearer token is no one's: {HOW_TO_AUTHENTICATE}")
    else:
        name = certificate_name
    if name is None:
        return Refusal(401, f"authentication required: {HOW_TO_AUTHENTICATE}")
    behalf = (headers.get(ON_BEHALF_OF) or "").strip()
    if not behalf:
        return Principal(name)
    if not policy.may_delegate(name):
        return Refusal(
            403,
            f"{name} may not act on behalf of others (X-SRM-On-Behalf-Of); only"
            f" {', '.join(policy.delegators)} (srm.http.delegators)",
        )
    if not PRINCIPAL.match(behalf):
        return Refusal(400, "X-SRM-On-Behalf-Of must be a principal name")
    return Principal(behalf, via=name)


def host_of(header: str) -> str:
    """The host part of a Host or Origin value, lower case, without port or brackets."""
    value = header.strip().lower()
    if "://" in value:
        value = value.split("://", 1)[1]
    value = value.split("/", 1)[0]
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def check_host(policy: AccessPolicy, header: str | None) -> Refusal | None:
    """None when a request for ``Host: header`` may be served (see the module docstring)."""
    if policy.any_host:
        return None
    host = host_of(header or "")
    if not host:
        return Refusal(400, "a request must name its Host")
    if is_ip(host) or host == "localhost" or host in policy.allowed_hosts:
        return None
    return Refusal(
        421,
        f"this service does not answer to the name {host[:100]!r}; add it to"
        " srm.http.allowed.hosts if it is really one of its names",
    )


def check_origin(origin: str | None, host: str | None) -> Refusal | None:
    """None unless a browser sends a change from a page of another site."""
    if origin is None:
        return None  # not a browser's cross-site request: curl, srm-control, services
    value = origin.strip().lower()
    netloc = value.split("://", 1)[1].split("/", 1)[0] if "://" in value else ""
    if value == "null" or not netloc or netloc != (host or "").strip().lower():
        return Refusal(
            403,
            f"a change from a web page of another site (Origin {origin[:100]!r}) is refused",
        )
    return None
