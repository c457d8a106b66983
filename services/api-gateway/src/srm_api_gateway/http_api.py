"""The gateway's HTTP API (FastAPI): SRM's Service API v2 for replications, clusters and
metrics (:mod:`metrics_api`), and our own audit trail, state at a time, drivers,
freshness, Prometheus exposition, health and readiness.

Every answer comes from the event logs as the gateway folds them (one per target
cluster, and the single log of an earlier release: a
:class:`~srm_common.log_follower.LogSet` keeping every envelope) and the configuration:
views over one state combining the targets' logs, the audit over every log merged in
time, each entry naming its log. History (the audit trail, ``?at=``, closed metric windows), from
the SQL read model (:mod:`read_model`) when it is up to date; nothing here writes. Input
errors are 4xx with one message naming the parameter; an unknown alias or flow is 404
naming the known ones. OpenAPI at ``/docs``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from srm_common.adapters.http_auth import Access, guard, principal
from srm_common.adapters.http_client import HttpCredentials
from srm_common.adapters.http_limits import BodyLimit
from srm_common.adapters.http_tracing import Tracing
from srm_common.config.control import LEGACY_PREFIX
from srm_common.config.model import SrmConfig
from srm_common.control import audit
from srm_common.control.commands import CommandRejected, parse_flow
from srm_common.control.events import Envelope
from srm_common.control.history import combined, merged, states_at
from srm_common.errors import SrmError
from srm_common.http_access import AccessPolicy
from srm_common.log_follower import LogSet
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from srm_api_gateway import commands, pages, views
from srm_api_gateway.metric_store import MetricStore
from srm_api_gateway.metrics_api import create_router
from srm_api_gateway.read_model import ReadModel

Alias = Annotated[str, "a cluster alias of the configuration"]
# The live dashboard (written here, no external assets): GET / and /dashboard/*.
DASHBOARD = Path(__file__).with_name("dashboard")
MAX_AUDIT = 10_000


def create_app(
    config: SrmConfig,
    logs: LogSet,
    store: MetricStore | None = None,
    metrics_status: Callable[[], Mapping[str, object]] | None = None,
    credentials: HttpCredentials | None = None,
    read_model: ReadModel | None = None,
    access: Access | None = None,
) -> FastAPI:
    """``access`` decides who may send commands (none when not given: every POST is a
    401); ``credentials`` are what the gateway bears to the leader when it relays one."""
    app = FastAPI(
        title="SRM API gateway",
        version="2",
        description="Replications, clusters, drivers and the audit trail of a Streams"
        " Replication Manager, read from its event log; srm-control's commands (with a"
        " token) forwarded to the coordinator leader.",
    )
    app.add_middleware(BodyLimit)
    guard(app, access or Access(AccessPolicy()))
    app.add_middleware(Tracing)  # a span per request (caller's trace), requests by route

    @app.exception_handler(RequestValidationError)
    def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or e['loc'][0]}: {e['msg']}"
            for e in exc.errors()
        )
        return JSONResponse({"error": f"bad request: {problems}"}, status_code=400)

    @app.exception_handler(HTTPException)
    def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)

    @app.exception_handler(views.NotFound)
    def not_found(_request: Request, exc: views.NotFound) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=404)

    @app.exception_handler(SrmError)
    def refused(_request: Request, exc: SrmError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=400)

    def state():  # type: ignore[no-untyped-def]
        return logs.combined()

    def history() -> dict[str, list[Envelope]]:
        """Every log's events to answer history from: SQL's when it holds all memory
        holds (its single log of an earlier release, ``''``, by its name here)."""
        if read_model is not None:
            stored = read_model.history(logs.counts())
            if stored is not None:
                legacy = next((n for n in logs.followers if n.startswith(LEGACY_PREFIX)), "")
                return {name or legacy or "legacy": h for name, h in stored.items()}
        return logs.histories()

    @app.get("/v2/replications", summary="Every configured replication, optionally by target")
    def list_replications(
        target: Annotated[str | None, Query(max_length=200)] = None,
    ) -> dict[str, Any]:
        return {"replications": views.replications(config, state(), target)}

    @app.get("/v2/replications/{source}/{target}", summary="One replication")
    def one_replication(source: Alias, target: Alias) -> dict[str, Any]:
        return views.replication(config, state(), source, target)

    metrics = store or MetricStore()

    @app.get(
        "/v2/replications/{source}/{target}/topics",
        summary="The topics a replication copies, with their remote names, a page at a time",
    )
    def replication_topics(
        source: Alias,
        target: Alias,
        sort: Annotated[
            str, Query(pattern="^(name|lag)$", description="name, or lag: the worst first")
        ] = "name",
        limit: Annotated[int, Query(ge=1, le=pages.MAX_LIMIT)] = pages.TOPICS_LIMIT,
        offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    ) -> dict[str, Any]:
        return pages.topics(
            config, state(), metrics, source, target, sort=sort, limit=limit, offset=offset
        )

    @app.get(
        "/v2/replications/{source}/{target}/partitions",
        summary="A replication's partitions, the worst (largest lag) first, a page at a time",
    )
    def replication_partitions(
        source: Alias,
        target: Alias,
        sort: Annotated[
            str, Query(pattern="^(name|lag)$", description="lag (the worst first) or name")
        ] = "lag",
        limit: Annotated[int, Query(ge=1, le=pages.MAX_LIMIT)] = pages.PARTITIONS_LIMIT,
        offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
        topic: Annotated[str | None, Query(max_length=255, description="one topic's")] = None,
    ) -> dict[str, Any]:
        return pages.partitions(
            config,
            state(),
            metrics,
            source,
            target,
            sort=sort,
            limit=limit,
            offset=offset,
            topic=topic,
        )

    @app.get(
        "/v2/cluster-info/{cluster}", summary="A cluster and the replications it takes part in"
    )
    def cluster_info(cluster: Alias) -> dict[str, Any]:
        return views.cluster_info(config, state(), cluster)

    @app.get("/v1/drivers", summary="The drivers of the group and the tasks each holds")
    def drivers() -> dict[str, Any]:
        return {"drivers": views.drivers(state())}

    @app.get("/v1/audit", summary="Changes recorded in the event log, oldest first")
    def audit_trail(
        since: Annotated[str | None, Query(max_length=64, description="ISO 8601 or ms")] = None,
        until: Annotated[str | None, Query(max_length=64, description="ISO 8601 or ms")] = None,
        flow: Annotated[str | None, Query(max_length=500, description="source->target")] = None,
        all: Annotated[bool, Query(description="membership and assignment too")] = False,  # noqa: A002
        limit: Annotated[int, Query(ge=1, le=MAX_AUDIT)] = 1000,
    ) -> dict[str, Any]:
        shown = {
            name: audit.changes(
                envelopes,
                since_ms=_time("since", since),
                until_ms=_time("until", until),
                flow=flow,
                everything=all,
            )
            for name, envelopes in history().items()
        }
        rows = merged(shown)
        return {
            "changes": [audit.entry(e.envelope, e.log) for e in rows[-limit:]],
            "total": len(rows),
        }

    @app.get(
        "/v1/state",
        summary="Each log's whole state now, or as it was at a time (?at=), and one state"
        " combining the targets' logs",
    )
    def state_at(
        at: Annotated[str | None, Query(max_length=64, description="ISO 8601 or ms")] = None,
    ) -> dict[str, Any]:
        moment = _time("at", at)
        states = logs.states() if moment is None else states_at(history(), moment)
        current = combined(s for n, s in states.items() if not n.startswith(LEGACY_PREFIX))
        return {
            "at": audit.format_time(moment if moment is not None else current.at_ms),
            "logs": {
                name: {"offset": s.offset, "digest": s.digest(), "state": s.to_json()}
                for name, s in sorted(states.items())
            },
            "state": current.to_json(),
        }

    @app.get("/v1/log", summary="The event logs as the gateway reads them, and its read model")
    def event_log() -> dict[str, Any]:
        found: dict[str, Any] = {"logs": logs.status()}
        return found if read_model is None else {**found, "read_model": read_model.status()}

    windows = read_model.windows if read_model is not None else None
    app.include_router(create_router(config, metrics, windows))

    @app.get("/v1/metrics/sources", summary="The aggregated metrics topics as read")
    def metric_sources() -> dict[str, Any]:
        return {"clusters": dict(metrics_status()) if metrics_status else {}}

    @app.post(
        "/v1/commands/{verb}",
        summary="srm-control's verbs (patterns, resume), forwarded to the coordinator leader",
        responses={
            401: {"description": "no principal: a bearer token or a client certificate"},
            403: {"description": "a change from a web page of another site"},
            503: {"description": "no coordinator leads now"},
        },
    )
    async def command(verb: str, request: Request) -> JSONResponse:
        who = principal(request).name
        if verb not in commands.VERBS:
            known = ", ".join(commands.VERBS)
            raise views.NotFound(f"unknown command {verb[:50]!r}; known: {known}")
        body = await request.body()

        def leader(flow: str) -> str | None:
            """The leader of the log of the flow's target (the command's flow)."""
            try:
                _source, target = parse_flow(flow, config.aliases)
            except CommandRejected:
                return None
            current = logs.state_of(target).leader
            return current.url if current is not None else None

        status, answer = await run_in_threadpool(
            commands.forward, verb, body, leader, who, credentials or HttpCredentials()
        )
        return JSONResponse(answer, status_code=status)

    app.mount("/dashboard", StaticFiles(directory=DASHBOARD), name="dashboard")

    @app.get("/", include_in_schema=False)
    def dashboard() -> FileResponse:
        return FileResponse(DASHBOARD / "index.html")

    @app.get("/healthz", summary="The process answers")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/readyz",
        summary="The event log is read to its end and followed",
        responses={503: {"description": "not ready yet, or the log cannot be followed"}},
    )
    def readyz() -> JSONResponse:
        """Ready: every log read to its end and followed. Degraded (still 200): a log
        cannot be followed (its cluster is down, say) while others are, or the read
        model's database is lost (memory answers). Not ready (503): no log read yet."""
        statuses = logs.status()
        offsets = {name: s["offset"] for name, s in statuses.items()}
        problems = [
            f"log of {name}: {s.get('problem') or s.get('error') or 'reading it'}"
            for name, s in statuses.items()
            if not s.get("ready")
        ]
        if not logs.any_ready:
            why = "; ".join(problems) or "reading the event logs"
            return JSONResponse({"status": "not ready", "reason": why}, status_code=503)
        answer: dict[str, object] = {"status": "ready", "offsets": offsets}
        if read_model is not None:
            # A lost database leaves the gateway serving from memory: ready, but degraded.
            model = read_model.status()
            if model["status"] != "ok":
                problems.append(f"read model database: {model['error']}")
            answer["read_model"] = model
        if problems:
            answer |= {"status": "degraded", "reason": "; ".join(problems)}
        return JSONResponse(answer)

    return app


def _time(name: str, text: str | None) -> int | None:
    if text is None:
        return None
    try:
        moment = audit.parse_time(text)
    except ValueError as exc:
        raise SrmError(f"bad request: {name}: {exc}") from None
    if not 0 <= moment < 2**53:
        raise SrmError(f"bad request: {name}: {text[:60]!r} is out of range")
    return moment
