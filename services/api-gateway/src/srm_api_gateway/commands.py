"""srm-control's verbs through the gateway: a command from an authenticated principal
is forwarded to the coordinator leader on that principal's behalf, and the leader's
answer (and ``outcome``) is relayed as it is.

**Who.** Commands change what is replicated, so the gateway takes them only from a
principal (:mod:`srm_common.adapters.http_auth`: a bearer token of the tokens file, or a
client certificate), as every service does; reads stay open. The gateway bears its own
token to the leader (``--token-file``, principal ``api-gateway``) and names the caller in
``X-SRM-On-Behalf-Of``, which the leader honours only from a delegating principal: the
audit reads ``alice via api-gateway``. A body's ``by`` is passed on as a note.

**The leader.** A command names a flow, so it goes to the leader of the log of the flow's
target cluster; its URL comes from that log, which the gateway follows; a standby that
answers 503 names the leader, which is asked once more. A leader that cannot be reached
before the request was sent means "not applied"; an answer lost after it was sent means
"unknown": the caller retries under the same ``request_id`` (applied once) or checks.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable

from srm_common import telemetry
from srm_common.adapters.http_client import HttpCredentials

VERBS = ("patterns", "resume")
TIMEOUT_S = 30.0


def forward(
    verb: str,
    body: bytes,
    leader_url: Callable[[str], str | None],
    principal: str,
    credentials: HttpCredentials,
) -> tuple[int, dict[str, object]]:
    """Send the command to the leader for ``principal`` (following one redirect from a
    standby)."""
    try:
        command = json.loads(body or b"{}")
    except ValueError as exc:
        return 400, {"error": f"bad request: the body is not JSON: {exc}", "outcome": "not applied"}
    if not isinstance(command, dict):
        return 400, {
            "error": "bad request: the body must be a JSON object",
            "outcome": "not applied",
        }
    flow = command.get("flow")
    if not isinstance(flow, str):
        return 400, {
            "error": "bad request: flow: a string S->T is required",
            "outcome": "not applied",
        }
    url = leader_url(flow)
    for _ in range(2):
        if url is None:
            return 503, {
                "error": f"no coordinator leads the log of {flow}'s target now (its log names"
                " none, or it cannot be read): try again",
                "outcome": "not applied",
            }
        # A span per attempt; its context goes to the leader, continuing the caller's trace.
        with telemetry.span(f"srm-api-gateway forward {verb}", attributes={"srm.leader": url}):
            status, answer = _post(f"{url}/v1/commands/{verb}", command, principal, credentials)
        redirect = answer.get("leader") if status == 503 else None
        if not isinstance(redirect, str) or redirect == url:
            return status, answer
        url = redirect
    return status, answer


def _refused(error: str) -> tuple[int, dict[str, object]]:
    return 400, {"error": error, "outcome": "not applied"}


def _post(
    url: str, command: dict[str, object], principal: str, credentials: HttpCredentials
) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(command).encode(),
        headers={**credentials.headers(on_behalf_of=principal), **telemetry.headers_now()},
        method="POST",
    )
    try:
        with credentials.open(request, TIMEOUT_S) as response:
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
