"""How srm-control sends a command to the coordinator leader of a target's log and reports
the outcome: :class:`Sender` (what this run was given to reach the leader with),
:mod:`srm_control.delivery` (retries across leader changes and lost answers), and the
exit status: 1 not applied, 3 unknown."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from srm_common.adapters.event_log_reads import read_log
from srm_common.adapters.http_client import HttpCredentials, credentials
from srm_common.cli_support import fail
from srm_common.config.control import ControlSettings
from srm_common.control.events import describe
from srm_common.control.state import ControlState, replay
from srm_common.errors import SrmError

from srm_control import PROG
from srm_control.audit import format_time
from srm_control.delivery import Applied, Delivery, NotApplied, Unknown, post_json

EXIT_NOT_APPLIED = 1
EXIT_UNKNOWN = 3


@dataclass(frozen=True)
class Sender:
    """How this run's commands reach the coordinator leader: straight, or through the
    gateway at ``gateway`` (--gateway, else $SRM_GATEWAY_URL; "" for none), bearing the
    credentials found from the token, CA and certificate files given and the config's
    top-level keys (``extra``: the listeners' truststore)."""

    gateway: str = ""
    token_file: Path | None = None
    ca_file: Path | None = None
    cert_file: Path | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    def send(
        self,
        state: ControlState,
        settings: ControlSettings,
        path: str,
        body: dict[str, object],
        timeout: float,
    ) -> Applied:
        """Deliver a command to the leader (:mod:`srm_control.delivery`): what it applied,
        or exit 1 (not applied) or 3 (unknown) with one line."""
        gateway = self.gateway.strip()
        if state.leader is None and not gateway:
            fail(
                PROG,
                f"not applied: no coordinator has ever led the log of {settings.name} (the"
                f" flows into {settings.cluster}): start srm-coordinator (make up starts two)",
                status=EXIT_NOT_APPLIED,
            )
        creds = self.credentials()
        delivery = Delivery(
            post=lambda url, body, timeout: post_json(url, body, timeout, creds),
            # Through the gateway (--gateway, $SRM_GATEWAY_URL), which finds the leader.
            leader_url=lambda wait: gateway.rstrip("/") or leader_url(settings, wait),
            applied_in_log=lambda request_id, wait: applied_in_log(settings, request_id, wait),
        )
        first = gateway.rstrip("/") or (state.leader.url if state.leader else None)
        outcome = delivery.send(first, path, body, timeout)
        if isinstance(outcome, NotApplied):
            hint = ""
            if creds.token is None and "Bearer" in outcome.reason:
                hint = f" ({PROG} found no token: pass --token-file FILE or set SRM_TOKEN_FILE)"
            fail(PROG, f"not applied: {outcome.reason}{hint}", status=EXIT_NOT_APPLIED)
        if isinstance(outcome, Unknown):
            fail(PROG, f"unknown: {outcome.reason}", status=EXIT_UNKNOWN)
        return outcome

    def credentials(self) -> HttpCredentials:
        """The token (and TLS files) srm-control presents to the leader: --token-file, else
        $SRM_TOKEN_FILE, else the file `make up` writes for srm-control."""
        run = Path(os.environ.get("SRM_RUN_DIR") or ".run")
        try:
            return credentials(
                self.extra,
                token_file=self.token_file,
                defaults=(run / "http" / "srm-control.token",),
                ca_file=self.ca_file,
                cert_file=self.cert_file,
            )
        except SrmError as exc:
            fail(PROG, str(exc))


def leader_url(settings: ControlSettings, wait: float) -> str | None:
    """The leader the event log names now; None when none does or it cannot be read."""
    try:
        leader = replay(read_log(settings, timeout=min(wait, 15))).leader
    except SrmError:
        return None
    return leader.url if leader is not None else None


def applied_in_log(settings: ControlSettings, request_id: str, wait: float) -> list[str] | None:
    """What the log holds under command id ``request_id`` ([] nothing; None: unreadable)."""
    try:
        envelopes = read_log(settings, timeout=min(wait, 15))
    except SrmError:
        return None
    if request_id not in replay(envelopes).commands:
        return []
    return [describe(e) for e in envelopes if e.command_id == request_id]


def print_outcome(applied: Applied, flow: str, patterns: Sequence[str]) -> None:
    answer = applied.answer
    if answer.get("outcome") == "already applied":
        before = answer.get("applied")
        record = cast(dict[str, object], before) if isinstance(before, dict) else {}
        at_ms, by = record.get("at_ms"), record.get("by")
        when = f" at {format_time(at_ms)} by {by}" if isinstance(at_ms, int) else ""
        print(f"{flow}: applied{when} (an earlier attempt of this command took effect)")
        return
    for line in applied.changes:
        print(line)
    if not applied.changes:
        print(f"{flow}: nothing to change ({', '.join(patterns)} already as asked)")
