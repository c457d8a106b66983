"""The driver's REST endpoints, one set per flow on one port (as SRM 7.3.2 does), and the
internal endpoint its copy slots report to.

``GET /v1/flows/{source}/{target}/status``: this driver's tasks of the flow and how its
partitions copy (counters, latency, retention losses, halted partitions with the reason);
``.../tasks``: the flow's task configs and owners; ``POST .../refresh``: look at the
source now and tell the leader if the task configs must change; ``POST
.../partitions/{topic}/{partition}/resume``: resume a halted partition from an explicit
choice. ``POST /internal/v1/copy/{job}/slots/{slot}`` is the copy slots' control channel,
and ``.../slots/{slot}/lease`` where a slot whose answer is late keeps its leases
(:mod:`srm_driver.copying.protocol`).

Every POST needs a principal (:mod:`srm_common.adapters.http_auth`), else 401 and
nothing is done; a resume is relayed to the leader on behalf of that principal, which the
audit names. The copy slots' channel takes only the driver's per-run secret (principal
``copier:<driver id>``), which the copy job hands to its slots; GETs stay open.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, model_validator
from srm_common.adapters.http_auth import Access, guard, principal
from srm_common.control.state import ControlState
from srm_common.control.task_ids import checkpoint_task_id, heartbeat_task_id, parse_task_id
from srm_common.domain.resume import ResumeMode, ResumePoint

from srm_driver.copying.state import ResumeRequest

if TYPE_CHECKING:
    from srm_driver.driver import Driver

MAX_REPORT_BYTES = 8 * 1024 * 1024


class ResumeBody(BaseModel):
    """Where a halted partition resumes: ``copy-end`` (after what the copy holds),
    ``source-start``, ``source-end``, or ``offset`` (then ``offset`` is required)."""

    from_: ResumeMode = Field(alias="from")
    offset: int | None = Field(default=None, ge=0)
    by: str | None = Field(
        default=None, max_length=200, description="ignored: the leader records the principal"
    )

    @model_validator(mode="after")
    def _offset_with_mode(self) -> ResumeBody:
        if (self.from_ is ResumeMode.OFFSET) != (self.offset is not None):
            raise ValueError("give 'offset' exactly when 'from' is 'offset'")
        return self

    @property
    def point(self) -> ResumePoint:
        return ResumePoint(self.from_, self.offset)


def flow_leases(driver: Driver) -> dict[str, int]:
    """Milliseconds each flow may still write here: the flows this driver copies, or every
    flow it serves while it copies none (leases are held per target's log)."""
    assert driver.runtime is not None and driver.source is not None
    assignment = driver.runtime.assignment
    copied = (
        sorted(name for name, tasks in assignment.source.items() if tasks) if assignment else []
    )
    names = copied or sorted(driver.settings.flows)
    return {name: driver.source.lease_ms(name) for name in names}


def copier_principal(driver_id: str) -> str:
    """The principal of this driver's copy slots (their per-run secret)."""
    return f"copier:{driver_id}"


def create_app(driver: Driver, access: Access) -> FastAPI:
    app = FastAPI(title="SRM driver", version="1")
    guard(app, access)

    @app.exception_handler(RequestValidationError)
    def bad_body(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors()
        )
        return JSONResponse({"error": f"bad request: {problems}"}, status_code=422)

    def flow_name(source: str, target: str) -> str:
        name = f"{source}->{target}"
        if name not in driver.settings.flows:
            known = ", ".join(driver.settings.flows)
            raise HTTPException(404, f"no flow {name} on this driver; flows: {known}")
        return name

    @app.get("/v1/driver")
    def whoami() -> dict[str, object]:
        assert driver.runtime is not None and driver.source is not None
        generation, running = driver.runtime.report()
        leases = flow_leases(driver)
        return {
            "driver": driver.settings.driver_id,
            "url": driver.url,
            "mode": "standalone" if driver.settings.standalone else "coordinated",
            # The target clusters it serves (None: every target of its configuration).
            "targets": list(driver.settings.pinned) if driver.settings.pinned else None,
            "generation": generation,
            "running": sorted(running),
            "leases": leases,
            # The shortest: what every flow listed may still write (0 if one may not).
            "lease_ms": min(leases.values(), default=0),
            "control_log": (
                driver.coordination.log_status() if driver.coordination is not None else None
            ),
        }

    @app.get("/v1/flows")
    def flows() -> list[str]:
        """The flows this driver runs tasks of (those into the targets it serves)."""
        return list(driver.settings.flows)

    @app.get("/v1/flows/{source}/{target}/status")
    def status(source: str, target: str) -> dict[str, object]:
        return flow_status(driver, flow_name(source, target))

    @app.get("/v1/flows/{source}/{target}/tasks")
    def tasks(source: str, target: str) -> list[dict[str, object]]:
        name = flow_name(source, target)
        if driver.coordination is None:
            return []
        # The flow's task configs are in the log of its target.
        return flow_task_configs(driver.coordination.state_of(target), name)

    @app.post("/v1/flows/{source}/{target}/refresh")
    def refresh(source: str, target: str) -> JSONResponse:
        name = flow_name(source, target)
        if driver.coordination is None:
            return JSONResponse({"error": "a standalone driver has no leader"}, status_code=409)
        if not driver.coordination.notify_leader(name, "asked over REST"):
            return JSONResponse({"error": "no coordinator leader answered"}, status_code=503)
        return JSONResponse({"forwarded": True}, status_code=202)

    @app.post("/v1/flows/{source}/{target}/partitions/{topic}/{partition}/resume")
    def resume(
        source: str, target: str, topic: str, partition: int, body: ResumeBody, request: Request
    ) -> JSONResponse:
        name = flow_name(source, target)
        assert driver.source is not None
        who = principal(request).name
        resume = ResumeRequest(uuid.uuid4().hex, body.point, who)
        outcome = driver.source.resume(name, (topic, partition), resume)
        code = 409 if outcome.startswith("not applied") else 202
        return JSONResponse({"outcome": outcome}, status_code=code)

    @app.post("/internal/v1/copy/{job}/slots/{slot}")
    async def copy_report(job: str, slot: int, request: Request) -> JSONResponse:
        return await _slot_call(lambda copy: copy.on_report, job, slot, request)

    @app.post("/internal/v1/copy/{job}/slots/{slot}/lease")
    async def copy_lease(job: str, slot: int, request: Request) -> JSONResponse:
        # A slot whose answer is late keeps its leases meanwhile (copying/protocol.py).
        return await _slot_call(lambda copy: copy.on_keep, job, slot, request)

    async def _slot_call(
        handler: Callable[[Any], Callable[[str, int, Any], tuple[int, dict[str, object]]]],
        job: str,
        slot: int,
        request: Request,
    ) -> JSONResponse:
        if principal(request).name != copier_principal(driver.settings.driver_id):
            return JSONResponse(
                {"error": "only this driver's copy slots report here (the per-run secret)"},
                status_code=403,
            )
        body = await request.body()
        if len(body) > MAX_REPORT_BYTES:
            return JSONResponse({"error": "report too large"}, status_code=413)
        try:
            parsed = await request.json()
        except ValueError:
            return JSONResponse({"error": "the report is not JSON"}, status_code=400)
        assert driver.runtime is not None
        from starlette.concurrency import run_in_threadpool

        handle = handler(driver.runtime.copy)
        status_code, answer = await run_in_threadpool(handle, job, slot, parsed)
        return JSONResponse(answer, status_code=status_code)

    return app


def flow_status(driver: Driver, name: str) -> dict[str, object]:
    """The per-flow REST answer: this driver's tasks of ``name`` and how they run."""
    runtime = driver.runtime
    assert runtime is not None and driver.source is not None
    assignment = runtime.assignment
    held = runtime.copy.held(name)
    tasks: list[dict[str, object]] = []
    if assignment is not None:
        for task in assignment.source.get(name, ()):
            copying = any(tp in held for tp in task.partitions)
            tasks.append(
                _task(runtime.held_since, task.name, "source", "RUNNING" if copying else "STARTING")
            )
        for task_id in sorted(assignment.checkpoints):
            if parse_task_id(task_id)[0] == name:
                running = runtime.checkpoint_runners.get(task_id)
                entry = _task(
                    runtime.held_since, task_id, "checkpoint", "RUNNING" if running else "STARTING"
                )
                entry["groups"] = (
                    {g: s.as_dict() for g, s in sorted(running[1].task.status.items())}
                    if running
                    else {}
                )
                tasks.append(entry)
        if name in assignment.heartbeats:
            tasks.append(_task(runtime.held_since, heartbeat_task_id(name), "heartbeat", "RUNNING"))
    return {
        "flow": name,
        "driver": driver.settings.driver_id,
        "generation": runtime.generation,
        # Leases are held per flow: 0 while this driver may not write this flow's target.
        "lease_ms": driver.source.lease_ms(name),
        "tasks": tasks,
        "copy": runtime.copy.status(name),
        # Only on the driver that runs the flow's ACL sync (srm_driver.acl_sync).
        "acl_sync": job.status.as_dict() if (job := runtime.acl_syncs.get(name)) else None,
    }


def _task(held_since: dict[str, float], task_id: str, kind: str, state: str) -> dict[str, object]:
    since = held_since.get(task_id)
    return {
        "id": task_id,
        "kind": kind,
        "state": state,
        # Since when this driver has held the task without interruption.
        "since_ms": int(since * 1000) if since else None,
    }


def flow_task_configs(state: ControlState, name: str) -> list[dict[str, object]]:
    """MM2-style task configs of flow ``name`` (all tasks, from the event log)."""
    tasks = state.tasks.get(name)
    if tasks is None:
        return []
    configs: list[dict[str, object]] = []
    for task in tasks.source:
        configs.append(
            {
                "id": task.name,
                "owner": state.task_owner(task.name),
                "config": {
                    "task.class": "MirrorSourceTask",
                    "task.assigned.partitions": task.assigned_partitions(),
                },
            }
        )
    for task in tasks.checkpoint:
        task_id = checkpoint_task_id(name, task.index)
        configs.append(
            {
                "id": task_id,
                "owner": state.task_owner(task_id),
                "config": {
                    "task.class": "MirrorCheckpointTask",
                    "task.assigned.groups": ",".join(task.groups),
                },
            }
        )
    if tasks.heartbeat:
        task_id = heartbeat_task_id(name)
        configs.append(
            {
                "id": task_id,
                "owner": state.task_owner(task_id),
                "config": {"task.class": "MirrorHeartbeatTask"},
            }
        )
    return configs
