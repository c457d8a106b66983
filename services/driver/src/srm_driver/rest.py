"""The driver's REST endpoints, one set per flow on one port (as SRM 7.3.2 does).

``GET /v1/flows/{source}/{target}/status`` — this driver's tasks of the flow and how they
run; ``.../tasks`` — the flow's task configs and owners; ``POST .../refresh`` — look at
the source now and tell the leader if the flow's task configs must change (the path a
follower uses to reach the leader).
"""

from __future__ import annotations

from fastapi import FastAPI, HTTPException
from fastapi.responses import JSONResponse

from srm_driver.coordinated import CoordinatedDriver, flow_status, flow_task_configs


def create_app(driver: CoordinatedDriver) -> FastAPI:
    app = FastAPI(title="SRM driver", version="1")

    def flow_name(source: str, target: str) -> str:
        name = f"{source}->{target}"
        if (source, target) not in driver.config.flows:
            known = ", ".join(f.name for f in driver.config.flows.values())
            raise HTTPException(404, f"no flow {name}; flows: {known}")
        return name

    @app.get("/v1/driver")
    def whoami() -> dict[str, object]:
        generation, running = driver.report()
        return {
            "driver": driver.driver_id,
            "url": driver.url,
            "generation": generation,
            "running": sorted(running),
            "fenced": driver.link.fenced() if driver.link else False,
        }

    @app.get("/v1/flows")
    def flows() -> list[str]:
        return [flow.name for flow in driver.config.flows.values()]

    @app.get("/v1/flows/{source}/{target}/status")
    def status(source: str, target: str) -> dict[str, object]:
        return flow_status(driver, flow_name(source, target))

    @app.get("/v1/flows/{source}/{target}/tasks")
    def tasks(source: str, target: str) -> list[dict[str, object]]:
        return flow_task_configs(driver, flow_name(source, target))

    @app.post("/v1/flows/{source}/{target}/refresh")
    def refresh(source: str, target: str) -> JSONResponse:
        name = flow_name(source, target)
        state = driver.link.state if driver.link else None
        if state is None or not driver.notify_leader(state, name, "asked over REST"):
            return JSONResponse({"error": "no coordinator leader answered"}, status_code=503)
        return JSONResponse({"forwarded": True}, status_code=202)

    return app
