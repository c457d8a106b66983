"""The coordinator's HTTP API: commands in, state and leadership out.

srm-control and (later) the gateway send commands here. A standby answers 503 with the
leader's URL in ``leader``, so a client can follow it; a rejected command is a 400 and
a command the leader did not carry out in time a 504, each with the one line to show
in ``error``.
"""

from __future__ import annotations

import uuid
from typing import Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from srm_common.control.commands import (
    ChangePatterns,
    Command,
    CommandRejected,
    ReportHalt,
    ReportLoss,
    ResumePartition,
)

from srm_coordinator.service import CommandTimedOut, Coordinator, NotLeader


class PatternsBody(BaseModel):
    flow: str = Field(description="source->target, e.g. primary->backup")
    kind: Literal["topics", "groups"]
    action: Literal["add", "remove", "add-blacklist", "remove-blacklist"]
    patterns: list[str] = Field(min_length=1)
    by: str | None = Field(default=None, description="who asks (user@host)")


class RefreshBody(BaseModel):
    driver: str | None = None
    reason: str | None = None


class ResumeBody(BaseModel):
    """Resume a halted partition from an explicit choice (``srm-control partitions
    --resume``); ``request_id`` makes a retried request apply once."""

    flow: str = Field(description="source->target, e.g. primary->backup")
    topic: str = Field(min_length=1, max_length=249)
    partition: int = Field(ge=0)
    mode: Literal["copy-end", "source-start", "source-end", "offset"]
    offset: int | None = Field(default=None, ge=0)
    by: str | None = Field(default=None, max_length=200)
    request_id: str | None = Field(default=None, max_length=64)


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
    return JSONResponse(
        {"error": "this coordinator is a standby", "leader": exc.leader_url}, status_code=503
    )


def create_app(coordinator: Coordinator) -> FastAPI:
    app = FastAPI(title="SRM coordinator", version="1")

    @app.exception_handler(RequestValidationError)
    def bad_body(_request: Request, exc: RequestValidationError) -> JSONResponse:
        # One line naming the field and what it must be, like every other SRM error.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors()
        )
        return JSONResponse({"error": f"bad request: {problems}"}, status_code=422)

    @app.get("/v1/leader")
    def leader() -> dict[str, object]:
        current = coordinator.snapshot().leader
        return {
            "coordinator": coordinator.id,
            "leading": coordinator.leading,
            "leader": None
            if current is None
            else {"coordinator": current.coordinator, "url": current.url, "epoch": current.epoch},
        }

    @app.get("/v1/state")
    def state() -> dict[str, object]:
        snapshot = coordinator.snapshot()
        return {"offset": snapshot.offset, "digest": snapshot.digest(), "state": snapshot.to_json()}

    @app.get("/v1/drivers")
    def drivers() -> dict[str, object]:
        return {"leading": coordinator.leading, "drivers": coordinator.members()}

    def run(command: Command, by: str) -> JSONResponse:
        try:
            result = coordinator.submit(command, by)
        except NotLeader as exc:
            return _not_leader(exc)
        except CommandRejected as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except CommandTimedOut as exc:
            return JSONResponse({"error": str(exc)}, status_code=504)
        return JSONResponse({"offset": result.offset, "changes": list(result.changes)})

    @app.post("/v1/commands/patterns")
    def patterns(body: PatternsBody) -> JSONResponse:
        command = ChangePatterns(body.flow, body.kind, body.action, tuple(body.patterns))
        return run(command, body.by or "unknown")

    @app.post("/v1/commands/resume")
    def resume(body: ResumeBody) -> JSONResponse:
        """Resume a halted partition (modes: copy-end, source-start, source-end, offset)."""
        command = ResumePartition(
            body.flow,
            body.topic,
            body.partition,
            body.mode,
            body.offset,
            body.request_id or uuid.uuid4().hex,
        )
        return run(command, body.by or "unknown")

    @app.post("/v1/flows/{source}/{target}/partitions/halted")
    def halted(source: str, target: str, body: HaltReport) -> JSONResponse:
        flow = f"{source}->{target}"
        command = ReportHalt(flow, body.topic, body.partition, body.kind, body.reason, body.driver)
        return run(command, f"driver {body.driver}")

    @app.post("/v1/flows/{source}/{target}/partitions/lost")
    def lost(source: str, target: str, body: LossReport) -> JSONResponse:
        flow = f"{source}->{target}"
        command = ReportLoss(
            flow, body.topic, body.partition, body.first_offset, body.end_offset, body.driver
        )
        return run(command, f"driver {body.driver}")

    @app.post("/v1/flows/{source}/{target}/refresh")
    def refresh(source: str, target: str, body: RefreshBody) -> JSONResponse:
        try:
            coordinator.notify(f"{source}->{target}")
        except NotLeader as exc:
            return _not_leader(exc)
        return JSONResponse({"accepted": True}, status_code=202)

    return app
