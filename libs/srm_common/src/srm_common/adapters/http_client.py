"""How our HTTP clients (srm-control, drivers calling the leader, the gateway forwarding
commands) prove who they are and check whom they talk to.

The token is read from a file, never from the command line: ``--token-file``, else
``$SRM_TOKEN_FILE``, else a default the caller names (srm-control: the file ``make up``
writes). An HTTPS server is verified with ``--ca-file`` / ``$SRM_HTTP_CA_FILE``, else
the listeners' truststore of the configuration, else the system's CAs; a client
certificate (PEM: certificate and key) is presented from ``$SRM_HTTP_CERT_FILE``.
"""

from __future__ import annotations

import os
import ssl
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from srm_common.errors import ConfigError
from srm_common.http_access import MIN_TOKEN_CHARS, ON_BEHALF_OF

TOKEN_FILE_ENV = "SRM_TOKEN_FILE"
CA_FILE_ENV = "SRM_HTTP_CA_FILE"
CERT_FILE_ENV = "SRM_HTTP_CERT_FILE"


@dataclass(frozen=True)
class HttpCredentials:
    """A bearer token (or none) and the TLS context for HTTPS URLs."""

    token: str | None = field(default=None, repr=False)
    context: ssl.SSLContext | None = None
    source: str = "no token"  # where the token came from, for messages (never the token)

    def headers(self, on_behalf_of: str | None = None) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if on_behalf_of:
            headers[ON_BEHALF_OF] = on_behalf_of
        return headers

    def open(self, request: urllib.request.Request, timeout: float) -> Any:
        """``urllib.request.urlopen`` with this context (used for https URLs only)."""
        return urllib.request.urlopen(request, timeout=timeout, context=self.context)


def read_token(path: Path) -> str:
    """The token in the file at ``path`` (its first line); :class:`ConfigError` naming the
    file, never its content, if it cannot be used."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "it is not text"
        raise ConfigError(f"cannot read the token file {path}: {why}") from None
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise ConfigError(
            f"the token file {path} holds no token of at least {MIN_TOKEN_CHARS} characters"
            " on its first line"
        )
    return token


def credentials(
    extra: Mapping[str, str] | None = None,
    *,
    token_file: Path | None = None,
    defaults: Sequence[Path] = (),
    ca_file: Path | None = None,
    cert_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> HttpCredentials:
    """The credentials of a client (see the module docstring for the order)."""
    env = os.environ if environ is None else environ
    token_path = token_file or _env_path(env, TOKEN_FILE_ENV)
    if token_path is None:
        token_path = next((p for p in defaults if p.is_file()), None)
    token = read_token(token_path) if token_path is not None else None
    ca = ca_file or _env_path(env, CA_FILE_ENV)
    cert = cert_file or _env_path(env, CERT_FILE_ENV)
    from srm_common.adapters.http_tls import _store, client_context

    truststore = _store(extra or {}, "truststore") if ca is None else None
    context = client_context(ca, cert, truststore)
    return HttpCredentials(token, context, str(token_path) if token_path else "no token")


def _env_path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value) if value else None
