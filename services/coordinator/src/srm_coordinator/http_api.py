"""The coordinator's HTTP API: commands in, state and leadership out, for every target
log the process serves (:mod:`srm_coordinator.site`).

srm-control and the gateway send commands here; a command names a flow, and goes to the
coordinator of the log of the flow's target. A standby of that log answers 503 with the
leader's URL in ``leader``, so a client can follow it; a rejected command is a 400 and
a command the leader did not carry out in time a 504, each with the one line to show
in ``error``. Every answer to a command says its ``outcome``: ``applied``, ``already
applied`` (a retry under the id ``request_id`` of a command the log holds),
``unchanged``, ``not applied``, or ``unknown`` (the leader lost the log or the time while
writing it: a retry under the same ``request_id`` tells).

Every POST needs a principal (:mod:`srm_common.adapters.http_auth`: a bearer token of
the tokens file or a client certificate), else 401 and nothing is done; GETs stay open.
The audit trail's ``by`` is that principal (``alice via api-gateway`` when the gateway
relays for alice), not a field of the body: a body's ``by`` is kept only as a labelled
note (``admin [note: ops@host via srm-control]``).

Input is bounded before it reaches the leader: a body over 1 MiB is a 413 before it is
parsed (:class:`BodyLimit`), a field too long a 422, too many or too long patterns a 400
(:mod:`srm_common.control.commands`). None of these touches the leader's loop.
"""

from __future__ import annotations

import time
import uuid
from typing import Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, model_validator
from srm_common import telemetry
from srm_common.adapters.http_auth import Access, guard, principal
from srm_common.adapters.http_limits import BodyLimit
from srm_common.adapters.http_tracing import Tracing
from srm_common.control.commands import (
    ChangePatterns,
    Command,
    CommandRejected,
    ReportHalt,
    ReportLoss,
    ResumePartition,
)
from srm_common.domain.resume import ResumeMode, ResumePoint
from starlette.exceptions import HTTPException

from srm_coordinator.command_queue import CommandTimedOut
from srm_coordinator.service import Coordinator, NotLeader
from srm_coordinator.site import CoordinatorSite, NotServed

# Service metrics: a command's outcome by the status it was answered with.
OUTCOMES = {200: "applied", 400: "rejected", 503: "not leading", 504: "timed out"}
REQUEST_ID = r"^[A-Za-z0-9._:-]+$"


class PatternsBody(BaseModel):
    """Edit one list of a flow (``srm-control topics|groups``); ``request_id`` (the same
    in every retry) makes a retried request apply once."""

    flow: str = Field(description="source->target, e.g. primary->backup", max_length=500)
    kind: Literal["topics", "groups"]
    action: Literal["add", "remove", "add-blacklist", "remove-blacklist"]
    patterns: list[str] = Field(min_length=1)
    by: str | None = Field(
        default=None,
        max_length=200,
        description="a free note (user@host); the audit names the authenticated principal",
    )
    request_id: str | None = Field(default=None, min_length=1, max_length=64, pattern=REQUEST_ID)


class RefreshBody(BaseModel):
    driver: str | None = None
    reason: str | None = None


class ResumeBody(BaseModel):
    """Resume a halted partition from an explicit choice (``srm-control partitions
    --resume``); ``request_id`` makes a retried request apply once."""

    flow: str = Field(description="source->target, e.g. primary->backup", max_length=500)
    topic: str = Field(min_length=1, max_length=249)
    partition: int = Field(ge=0)
    mode: ResumeMode
    offset: int | None = Field(default=None, ge=0)
    by: str | None = Field(default=None, max_length=200, description="a free note")
    request_id: str | None = Field(default=None, min_length=1, max_length=64, pattern=REQUEST_ID)

    @model_validator(mode="after")
    def _valid_point(self) -> ResumeBody:
        self.point  # noqa: B018 (raises what is wrong: a 422 naming it)
        return self

    @property
    def point(self) -> ResumePoint:
        return ResumePoint(self.mode, self.offset)


class HaltReport(BaseModel):
    """A driver halted a partition (driver to leader)."""

    driver: str = Field(max_length=200)
    topic: str = Field(min_length=1, max_length=249)
    partition: int = Field(ge=0)
    kind: str = Field(max_length=32)
    reason: str = Field(max_length=4000)


class LossReport(BaseModel):
    """Retention deleted source offsets before they were copied (driver to leader)."""

    driver: str = Field(max_length=200)
    topic: str = Field(min_length=1, max_length=249)
    partition: int = Field(ge=0)
    first_offset: int = Field(ge=0)
    end_offset: int = Field(ge=0)


def _not_leader(exc: NotLeader) -> JSONResponse:
    if exc.maybe_applied:
        error = (
            "this coordinator stopped leading while writing the command to the event log;"
            " it may be applied: send it again under the same request_id"
        )
    else:
        error = "this coordinator is a standby"
    outcome = "unknown" if exc.maybe_applied else "not applied"
    return JSONResponse(
        {"error": error, "leader": exc.leader_url, "outcome": outcome}, status_code=503
    )


def _by(request: Request, note: str | None) -> str:
    """The audit's ``by``: the authenticated principal, a body's note labelled as one."""
    who = str(principal(request))
    return f"{who} [note: {note}]" if note and note not in (who, _as_driver(who)) else who


def _as_driver(who: str) -> str:
    """``driver:d1`` -> ``driver d1``: a driver's own report needs no note."""
    return who.replace(":", " ", 1) if who.startswith("driver:") else who


def _leading(coordinator: Coordinator) -> dict[str, object]:
    current = coordinator.snapshot().leader
    return {
        "leading": coordinator.leads(),
        "leader": None
        if current is None
        else {"coordinator": current.coordinator, "url": current.url, "epoch": current.epoch},
        # The event log as read here: its identity, why it is not followed ("event log
        # lost", a newer SRM's event, its cluster unreachable), records skipped.
        "log": coordinator.log_status(),
        # Leading with a file that differs from the log's baseline: not applied, why.
        "config_drift": coordinator.config_drift(),
        # Rounds that appended events: count, last and longest (decide and commit), ms.
        "rounds": dict(coordinator.round_times),
    }


def create_app(site: CoordinatorSite, access: Access) -> FastAPI:
    app = FastAPI(title="SRM coordinator", version="2")
    app.add_middleware(BodyLimit)
    guard(app, access)
    app.add_middleware(Tracing)  # outermost: a refused request is traced too
    meter = telemetry.meter()
    handled = meter.create_counter("srm.coordinator.commands", description="commands by outcome")
    latency = meter.create_histogram("srm.coordinator.command.duration", unit="s")

    @app.exception_handler(RequestValidationError)
    def bad_body(_request: Request, exc: RequestValidationError) -> JSONResponse:
        # One line naming the field and what it must be, like every other SRM error.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors()
        )
        return JSONResponse(
            {"error": f"bad request: {problems}", "outcome": "not applied"}, status_code=422
        )

    @app.exception_handler(HTTPException)
    def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        # FastAPI's own refusals (a body that is not JSON, or nested too deep to parse).
        outcome = {"outcome": "not applied"} if exc.status_code < 500 else {}
        return JSONResponse({"error": f"{exc.detail}", **outcome}, status_code=exc.status_code)

    @app.get("/v1/leader")
    def leader() -> dict[str, object]:
        """Per target log this process serves: does it lead, who does, the log's status."""
        return {
            "coordinator": site.id,
            "leading": site.leads(),
            "logs": {target: _leading(c) for target, c in site.logs.items()},
        }

    @app.get("/v1/state")
    def state() -> dict[str, object]:
        """Per target log: the folded state and its digest."""
        logs: dict[str, object] = {}
        for target, coordinator in site.logs.items():
            snapshot = coordinator.snapshot()
            logs[target] = {
                "offset": snapshot.offset,
                "digest": snapshot.digest(),
                "state": snapshot.to_json(),
                "log": coordinator.log_status(),
                "config_drift": coordinator.config_drift(),
            }
        return {"coordinator": site.id, "logs": logs}

    @app.get("/v1/drivers")
    def drivers() -> dict[str, object]:
        return {
            "leading": site.leads(),
            "logs": {
                target: {"leading": c.leads(), "drivers": c.members()}
                for target, c in site.logs.items()
            },
        }

    def run(command: Command, by: str) -> JSONResponse:
        started = time.monotonic()
        response = carry_out(command, by)
        labels = {
            "command": type(command).__name__,
            "outcome": OUTCOMES.get(response.status_code, "error"),
        }
        handled.add(1, labels)
        latency.record(time.monotonic() - started, labels)
        return response

    def carry_out(command: Command, by: str) -> JSONResponse:
        try:
            result = site.of_flow(command.flow).submit(command, by)
        except NotServed as exc:
            return JSONResponse(
                {"error": str(exc), "leader": None, "outcome": "not applied"}, status_code=503
            )
        except NotLeader as exc:
            return _not_leader(exc)
        except CommandRejected as exc:
            return JSONResponse({"error": str(exc), "outcome": "not applied"}, status_code=400)
        except CommandTimedOut as exc:
            outcome = "unknown" if exc.maybe_applied else "not applied"
            return JSONResponse({"error": str(exc), "outcome": outcome}, status_code=504)
        answer: dict[str, object] = {"offset": result.offset, "changes": list(result.changes)}
        if result.before is not None:
            answer["outcome"] = "already applied"
            answer["applied"] = {"at_ms": result.before.at_ms, "by": result.before.by}
        else:
            answer["outcome"] = "applied" if result.changes else "unchanged"
        return JSONResponse(answer)

    @app.post("/v1/commands/patterns")
    def patterns(body: PatternsBody, request: Request) -> JSONResponse:
        command = ChangePatterns(
            body.flow, body.kind, body.action, tuple(body.patterns), body.request_id
        )
        return run(command, _by(request, body.by))

    @app.post("/v1/commands/resume")
    def resume(body: ResumeBody, request: Request) -> JSONResponse:
        """Resume a halted partition (modes: copy-end, source-start, source-end, offset)."""
        command = ResumePartition(
            body.flow,
            body.topic,
            body.partition,
            body.point,
            body.request_id or uuid.uuid4().hex,
        )
        return run(command, _by(request, body.by))

    @app.post("/v1/flows/{source}/{target}/partitions/halted")
    def halted(source: str, target: str, body: HaltReport, request: Request) -> JSONResponse:
        flow = f"{source}->{target}"
        command = ReportHalt(flow, body.topic, body.partition, body.kind, body.reason, body.driver)
        return run(command, _by(request, f"driver {body.driver}"))

    @app.post("/v1/flows/{source}/{target}/partitions/lost")
    def lost(source: str, target: str, body: LossReport, request: Request) -> JSONResponse:
        flow = f"{source}->{target}"
        command = ReportLoss(
            flow, body.topic, body.partition, body.first_offset, body.end_offset, body.driver
        )
        return run(command, _by(request, f"driver {body.driver}"))

    @app.post("/v1/flows/{source}/{target}/refresh")
    def refresh(source: str, target: str, body: RefreshBody) -> JSONResponse:
        try:
            site.of_flow(f"{source}->{target}").notify(f"{source}->{target}")
        except NotServed as exc:
            return JSONResponse({"error": str(exc), "leader": None}, status_code=503)
        except CommandRejected as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except NotLeader as exc:
            return _not_leader(exc)
        return JSONResponse({"accepted": True}, status_code=202)

    return app
