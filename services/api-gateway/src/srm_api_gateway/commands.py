"""srm-control's verbs through the gateway: a command is checked for a token, marked as
coming through the gateway, and forwarded to the coordinator leader, whose answer (and
``outcome``) is relayed as it is.

**The token.** Commands change what is replicated, so the gateway takes them only with
``Authorization: Bearer <token>``, the token read from a file (``--token-file``) at
start; without a token file, commands are refused with how to enable them. Reads stay
open (bind the gateway to loopback, as ``make up`` does, to keep them private).

**The leader.** Its URL comes from the event log the gateway follows; a standby that
answers 503 names the leader, which is asked once more. A leader that cannot be reached
before the request was sent means "not applied"; an answer lost after it was sent means
"unknown": the caller retries under the same ``request_id`` (applied once) or checks.
"""

from __future__ import annotations

import hmac
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from srm_common.errors import SrmError

VERBS = ("patterns", "resume")
TIMEOUT_S = 30.0


class TokenError(SrmError):
    """A token file that cannot be used; says which and why."""


def read_token(path: Path) -> str:
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise TokenError(f"cannot read the token file {path}: {exc.strerror}") from None
    if len(token) < 16:
        raise TokenError(
            f"the token in {path} is {len(token)} characters; use at least 16, e.g."
            " `python3 -c 'import secrets; print(secrets.token_urlsafe(32))' > FILE`"
        )
    return token


def authorized(expected: str | None, header: str | None) -> tuple[int, str] | None:
    """None when ``header`` carries the token; else the status and the line to answer."""
    if expected is None:
        return 403, (
            "commands through the gateway need a token: start srm-api-gateway with"
            " --token-file FILE and send 'Authorization: Bearer <token>'"
        )
    scheme, _, given = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip(), expected):
        return 401, "missing or wrong token: send 'Authorization: Bearer <token>'"
    return None


def forward(
    verb: str, body: bytes, leader_url: Callable[[], str | None]
) -> tuple[int, dict[str, object]]:
    """Send the command to the leader (following one redirect from a standby)."""
    try:
        command = json.loads(body or b"{}")
    except ValueError as exc:
        return 400, {"error": f"bad request: the body is not JSON: {exc}", "outcome": "not applied"}
    if not isinstance(command, dict):
        return 400, {
            "error": "bad request: the body must be a JSON object",
            "outcome": "not applied",
        }
    by = str(command.get("by") or "unknown")[:150]
    command["by"] = f"{by} (via api-gateway)"
    url = leader_url()
    for _ in range(2):
        if url is None:
            return 503, {
                "error": "no coordinator leads now (the event log names none): try again",
                "outcome": "not applied",
            }
        status, answer = _post(f"{url}/v1/commands/{verb}", command)
        redirect = answer.get("leader") if status == 503 else None
        if not isinstance(redirect, str) or redirect == url:
            return status, answer
        url = redirect
    return status, answer


def _refused(error: str) -> tuple[int, dict[str, object]]:
    return 400, {"error": error, "outcome": "not applied"}


def _post(url: str, command: dict[str, object]) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(command).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {"error": f"the coordinator answered {exc.code}"}
    except urllib.error.URLError as exc:
        refused = isinstance(exc.reason, ConnectionRefusedError)
        return (503 if refused else 504), {
            "error": f"the coordinator at {url.split('/v1/')[0]} did not answer: {exc.reason}",
            "outcome": "not applied"
            if refused
            else "unknown: check with --list or retry under the same request_id",
        }
    except (TimeoutError, ConnectionError, ValueError) as exc:
        return 504, {
            "error": f"no answer from the coordinator: {exc}",
            "outcome": "unknown: check with --list or retry under the same request_id",
        }
