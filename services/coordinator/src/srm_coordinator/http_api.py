"""The coordinator's HTTP API: commands in, state and leadership out.

srm-control and (later) the gateway send commands here. A standby answers 503 with the
leader's URL in ``leader``, so a client can follow it; a rejected command is a 400 and
a command the leader did not carry out in time a 504, each with the one line to show
in ``error``.
"""

from __future__ import annotations

from typing import Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from srm_common.control.commands import ChangePatterns, CommandRejected

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

    @app.post("/v1/commands/patterns")
    def patterns(body: PatternsBody) -> JSONResponse:
        command = ChangePatterns(body.flow, body.kind, body.action, tuple(body.patterns))
        try:
            result = coordinator.submit(command, body.by or "unknown")
        except NotLeader as exc:
            return _not_leader(exc)
        except CommandRejected as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except CommandTimedOut as exc:
            return JSONResponse({"error": str(exc)}, status_code=504)
        return JSONResponse({"offset": result.offset, "changes": list(result.changes)})

    @app.post("/v1/flows/{source}/{target}/refresh")
    def refresh(source: str, target: str, body: RefreshBody) -> JSONResponse:
        try:
            coordinator.notify(f"{source}->{target}")
        except NotLeader as exc:
            return _not_leader(exc)
        return JSONResponse({"accepted": True}, status_code=202)

    return app
