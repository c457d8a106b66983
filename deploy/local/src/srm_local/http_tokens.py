"""Tokens for the local stack's HTTP APIs (``make up``, the test helpers): one random
token per principal, each in its own file (0600), and the tokens file the services read,
which holds only their SHA-256 (see :mod:`srm_common.http_access`)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from srm_common.http_access import token_hash

TOKENS_FILE = "tokens"


@dataclass(frozen=True)
class HttpTokens:
    """``tokens_file`` for the services; ``files[principal]`` the token a client bears."""

    folder: Path
    tokens_file: Path
    files: dict[str, Path]

    def token_file(self, principal: str) -> Path:
        return self.files[principal]


def write_tokens(folder: Path, principals: Iterable[str]) -> HttpTokens:
    """Fresh tokens for ``principals`` in ``folder`` (made 0700); a token file is named
    after its principal (``driver:d1`` -> ``driver-d1.token``)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    lines = ["# principal  sha256 of its token (written by srm_local; tokens in *.token)"]
    files: dict[str, Path] = {}
    for principal in principals:
        token = secrets.token_urlsafe(32)
        path = folder / f"{principal.replace(':', '-')}.token"
        _write_private(path, token + "\n")
        files[principal] = path
        lines.append(f"{principal} {token_hash(token)}")
    tokens_file = folder / TOKENS_FILE
    _write_private(tokens_file, "\n".join(lines) + "\n")
    return HttpTokens(folder, tokens_file, files)


def _write_private(path: Path, text: str) -> None:
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
