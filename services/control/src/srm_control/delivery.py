"""Delivering one srm-control command to the coordinator leader, truthfully.

A command carries an id (``request_id``, a uuid per command) in every attempt. The
leader records it on the events it appends, and answers a command whose id the log
already holds "already applied" without appending anything, so resending is always safe.
srm-control therefore sends again, under the same id, whenever it cannot know the
outcome, following the leader as it changes, until ``--timeout``::

    each attempt, by its answer:
      200 applied, already applied, unchanged ............. Applied
      400 (decided after the id check), 413, 422 .......... NotApplied
      401, 403, 421 (no principal, not allowed) ........... NotApplied
      503 from a standby naming the leader ................ resend there at once
      refused connection, 503 naming no one, 504 withdrawn  back off, read the leader
                                                            from the log, resend
      no answer after sending (timeout, reset), 503 or
      504 "unknown", another 5xx .......................... the same; uncertain
    at the deadline:
      uncertain, and the event log holds the id ........... Applied
      uncertain, and the log does not, or cannot be read .. Unknown
      nothing was uncertain ............................... NotApplied

A leader's refusal after an uncertain attempt settles it: the leader looks the id up
before it decides, and a new leader replays the log (its predecessor fenced) before it
answers; 413 and 422 refuse the body itself, which every attempt shares. So "not
applied" is said only when no attempt can have been applied.
"""

from __future__ import annotations

import http.client
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from srm_common import telemetry
from srm_common.adapters.http_client import HttpCredentials

# The coordinator answers a command within 30 s (20 s queued, 10 s writing) or says why.
ANSWER_TIMEOUT_S = 35.0
# An attempt near the deadline still waits this long for its answer.
MIN_ATTEMPT_S = 2.0
FIRST_BACKOFF_S = 0.2
MAX_BACKOFF_S = 2.0

NOT_SENT = 0  # the request did not reach a server in full: it cannot have been applied
NO_ANSWER = -1  # it was sent, and no answer came: it may have been applied
REFUSED = (400, 401, 403, 404, 405, 413, 421, 422)


@dataclass(frozen=True)
class Applied:
    """The leader applied the command (``answer["outcome"]``: ``applied``, ``already
    applied`` or ``unchanged``); ``changes`` are the lines to print."""

    answer: Mapping[str, object]
    changes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class NotApplied:
    reason: str


@dataclass(frozen=True)
class Unknown:
    reason: str


Outcome = Applied | NotApplied | Unknown
Post = Callable[[str, Mapping[str, object], float], tuple[int, dict[str, object]]]


@dataclass
class Delivery:
    """Sends a command until it has an outcome; the log and the network are injected.

    ``leader_url(timeout)`` is the leader the event log names now (``None``: none, or
    the log cannot be read); ``applied_in_log(request_id, timeout)`` the lines of the
    events the log holds under that id (``[]``: none; ``None``: it cannot be read)."""

    post: Post
    leader_url: Callable[[float], str | None]
    applied_in_log: Callable[[str, float], list[str] | None]
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def send(
        self, url: str | None, path: str, body: Mapping[str, object], timeout: float
    ) -> Outcome:
        request_id = str(body["request_id"])
        deadline = self.clock() + timeout
        uncertain: str | None = None  # why an attempt may have been applied unseen
        problem = "the event log names no coordinator leader"
        backoff = FIRST_BACKOFF_S
        tried: set[str] = set()
        while True:
            if url is not None:
                wait = min(ANSWER_TIMEOUT_S, max(deadline - self.clock(), MIN_ATTEMPT_S))
                status, answer = self.post(url + path, body, wait)
                error = str(answer.get("error") or f"the coordinator answered HTTP {status}")
                outcome = answer.get("outcome")
                if status == 200:
                    return Applied(answer, tuple(str(c) for c in _list(answer.get("changes"))))
                if status in REFUSED:
                    return NotApplied(error)
                if status == 503 and outcome != "unknown":
                    leader = answer.get("leader")
                    if isinstance(leader, str) and leader and leader != url and leader not in tried:
                        tried.add(url)
                        url = leader
                        continue  # a standby named the leader: no need to wait
                    problem = f"the coordinator at {url} does not lead"
                elif status == NOT_SENT:
                    why = answer.get("error")
                    problem = f"the leader at {url} does not answer" + (f" ({why})" if why else "")
                elif status == 504 and outcome == "not applied":
                    problem = error  # withdrawn before the leader started on it
                elif status == NO_ANSWER:
                    uncertain = problem = f"the leader at {url} took the command but gave no answer"
                else:  # 504 still writing, 503 lost the log while writing, 5xx: it may apply
                    uncertain = problem = f"the leader at {url}: {error}"
            if self.clock() + backoff >= deadline:
                break
            self.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
            url = self.leader_url(max(deadline - self.clock(), MIN_ATTEMPT_S)) or url
            tried.clear()
        return self._settle(request_id, timeout, uncertain, problem)

    def _settle(
        self, request_id: str, timeout: float, uncertain: str | None, problem: str
    ) -> Outcome:
        if uncertain is None:
            return NotApplied(f"{problem}; gave up after --timeout {timeout:g} s")
        found = self.applied_in_log(request_id, ANSWER_TIMEOUT_S)
        if found:
            return Applied({"outcome": "applied"}, tuple(found))
        log = "does not hold it (yet)" if found is not None else "cannot be read"
        return Unknown(
            f"{uncertain}; nothing settled it within --timeout {timeout:g} s and the event"
            f" log {log}: it may still be applied, check with --list (or audit) before"
            " trying again"
        )


def post_json(
    url: str,
    body: Mapping[str, object],
    timeout: float,
    credentials: HttpCredentials | None = None,
) -> tuple[int, dict[str, object]]:
    """POST ``body`` (with ``credentials``' token, verifying an HTTPS server); the HTTP
    status and JSON answer, or :data:`NOT_SENT` (nothing, or not all of it, reached a
    server) or :data:`NO_ANSWER` (sent; no complete answer)."""
    credentials = credentials or HttpCredentials()
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        # The trace context of the command's span: the leader continues srm-control's trace.
        headers={**credentials.headers(), **telemetry.headers_now()},
    )
    try:
        with credentials.open(request, timeout) as response:
            status, data = response.status, response.read()
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, _json(exc.read())
        except (OSError, http.client.HTTPException):
            return exc.code, {}
    except urllib.error.URLError as exc:
        # urllib wraps what fails while connecting and sending; a server cannot act on
        # a request it did not receive in full. An HTTPS server we do not trust (or that
        # refused our certificate) is said, so the CA can be checked.
        if isinstance(exc.reason, ssl.SSLError):
            reason = exc.reason
            why = getattr(reason, "verify_message", None) or getattr(reason, "reason", None)
            return NOT_SENT, {"error": f"TLS: {why or reason}"}
        return NOT_SENT, {}
    except (OSError, http.client.HTTPException):
        # Reset, closed or timed out after the request went out: it may have been applied.
        return NO_ANSWER, {}
    try:
        answer = json.loads(data)
    except ValueError:
        answer = None
    return (status, answer) if isinstance(answer, dict) else (NO_ANSWER, {})


def _json(data: bytes) -> dict[str, object]:
    try:
        parsed = json.loads(data or b"{}")
    except ValueError:
        return {"error": data.decode(errors="replace")[:200]}
    return parsed if isinstance(parsed, dict) else {"error": f"unexpected answer {parsed!r:.100}"}


def _list(value: object) -> list[object]:
    return cast(list[object], value) if isinstance(value, list) else []
