"""Every service's HTTP access check, applied to the whole app (ASGI middleware), so a
route added later cannot forget it: the Host check on every request; on every request
that is not GET, HEAD or OPTIONS the Origin check and a principal (a bearer token of the
tokens file, or a client certificate), else 401 with how to authenticate and nothing
done. The decisions are :mod:`srm_common.http_access`'s; routes read the principal with
:func:`principal`.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from srm_common.errors import ConfigError
from srm_common.http_access import (
    DEFAULT_DELEGATORS,
    SAFE_METHODS,
    AccessPolicy,
    Principal,
    Refusal,
    Tokens,
    authenticate,
    check_host,
    check_origin,
    parse_tokens,
)

if TYPE_CHECKING:
    from srm_common.adapters.http_tls import ListenerTls

log = logging.getLogger(__name__)

TOKENS_FILE_KEY = "srm.http.tokens.file"
TOKENS_FILE_ENV = "SRM_HTTP_TOKENS_FILE"
ALLOWED_HOSTS_KEY = "srm.http.allowed.hosts"
DELEGATORS_KEY = "srm.http.delegators"
KEYS = (TOKENS_FILE_KEY, ALLOWED_HOSTS_KEY, DELEGATORS_KEY)

ASGIApp = Any
Message = dict[str, Any]


class Access:
    """The policy a running app applies; a service may add a secret of its own later
    (the driver's per-run copier secret) without rebuilding the app."""

    def __init__(self, policy: AccessPolicy) -> None:
        self.policy = policy

    def add_token(self, name: str, token: str) -> None:
        p = self.policy
        self.policy = AccessPolicy(
            p.tokens.with_token(name, token),
            p.delegators,
            p.allowed_hosts,
            p.any_host,
            p.client_certificates,
        )

    def allow_hosts(self, hosts: Iterable[str]) -> None:
        self.policy = self.policy.with_hosts(hosts)


class AccessGuard:
    """ASGI middleware applying :class:`Access` to each HTTP request."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Message, receive: ASGIApp, send: ASGIApp) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = self.access.policy
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refused = check_host(policy, headers.get("host"))
        if refused is None and scope["method"] not in SAFE_METHODS:
            refused = check_origin(headers.get("origin"), headers.get("host"))
        who: Principal | Refusal | None = None
        if refused is None:
            tls = scope.get("extensions", {}).get("tls", {})
            who = authenticate(policy, headers, tls.get("client_cert_name"))
            if isinstance(who, Refusal):
                if scope["method"] not in SAFE_METHODS:
                    refused = who
                who = None
        if refused is not None:
            await _refuse(scope, receive, send, refused)
            return
        scope.setdefault("state", {})["principal"] = who
        await self.app(scope, receive, send)


async def _refuse(scope: Message, receive: ASGIApp, send: ASGIApp, refusal: Refusal) -> None:
    headers = {"WWW-Authenticate": 'Bearer realm="srm"'} if refusal.status == 401 else None
    response = JSONResponse(
        {"error": refusal.error, "outcome": "not applied"},
        status_code=refusal.status,
        headers=headers,
    )
    await response(scope, receive, send)


def guard(app: FastAPI, access: Access) -> FastAPI:
    """Put the check in front of everything ``app`` serves (outermost middleware, so a
    refused request's body is never read); ``app`` for chaining."""
    app.add_middleware(AccessGuard, access=access)
    return app


def principal(request: Request) -> Principal:
    """The authenticated principal of a mutating request (the guard let it through)."""
    who = request.scope.get("state", {}).get("principal")
    if not isinstance(who, Principal):
        raise RuntimeError("no principal: the app is not behind srm_common's AccessGuard")
    return who


def read_tokens(path: Path) -> Tokens:
    """The tokens of the file at ``path``; :class:`ConfigError` naming it if unusable.
    A file others may read is used, with a warning: it should be 0600."""
    try:
        text = path.read_text()
        mode = path.stat().st_mode
    except OSError as exc:
        raise ConfigError(
            f"cannot read the tokens file {path}: {exc.strerror}", key=TOKENS_FILE_KEY
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"the tokens file {path} is not text", key=TOKENS_FILE_KEY) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("the tokens file %s can be read by others; chmod 600 it", path)
    return parse_tokens(text, source=str(path))


def access_from(
    extra: Mapping[str, str],
    *,
    advertised: Iterable[str] = (),
    client_certificates: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Access:
    """The access of a service from its configuration's top-level keys
    (``srm.http.tokens.file``, else ``$SRM_HTTP_TOKENS_FILE``; ``srm.http.allowed.hosts``;
    ``srm.http.delegators``) and the names it is reached by."""
    env = os.environ if environ is None else environ
    where = extra.get(TOKENS_FILE_KEY, "").strip() or env.get(TOKENS_FILE_ENV, "").strip()
    tokens = read_tokens(Path(where)) if where else Tokens()
    delegators = tuple(
        d.strip() for d in extra.get(DELEGATORS_KEY, ",".join(DEFAULT_DELEGATORS)).split(",")
    )
    policy = AccessPolicy(
        tokens, tuple(d for d in delegators if d), client_certificates=client_certificates
    )
    hosts = [*extra.get(ALLOWED_HOSTS_KEY, "").split(","), *advertised]
    access = Access(policy.with_hosts(hosts))
    if not tokens and not client_certificates:
        log.warning(
            "no tokens file (%s or %s) and no client certificates: every change over HTTP"
            " is refused",
            TOKENS_FILE_KEY,
            TOKENS_FILE_ENV,
        )
    return access


def listener_security(extra: Mapping[str, str]) -> tuple[Access, ListenerTls | None]:
    """A service's access check and HTTPS listener from its configuration's top-level
    keys; :class:`ConfigError` naming the key when one is unusable."""
    from srm_common.adapters.http_tls import listener_tls

    tls = listener_tls(extra)
    access = access_from(extra, client_certificates=tls is not None and tls.asks_for_certificates)
    return access, tls


def access_for(tokens: Mapping[str, str], **hosts: Any) -> Access:
    """An access accepting these ``{principal: token}`` (tests, examples)."""
    policy = AccessPolicy()
    for name, token in tokens.items():
        policy = AccessPolicy(policy.tokens.with_token(name, token), policy.delegators)
    access = Access(policy)
    access.allow_hosts(hosts.get("allowed", ()))
    return access
