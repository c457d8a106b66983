"""A built driver: its settings, runtime, task source and REST server, and how it runs and
stops. :func:`srm_driver.bootstrap.build` fills it in; :mod:`srm_driver.rest` serves it.
Its own module so that the composition root and the REST module both import it and not
each other."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from srm_common.adapters.http_server import HttpServer

from srm_driver.runtime import DriverRuntime
from srm_driver.settings import DriverSettings
from srm_driver.tasks import Coordination, TaskSource

log = logging.getLogger(__name__)


@dataclass
class Driver:
    """A built driver: its settings, runtime and REST server (filled in by
    :func:`srm_driver.bootstrap.build`); ``coordination`` when it follows event logs
    (None when standalone)."""

    settings: DriverSettings
    runtime: DriverRuntime | None = None
    source: TaskSource | None = None
    coordination: Coordination | None = None
    server: HttpServer | None = None
    closers: list[object] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url if self.server else ""

    def run(self) -> None:
        """Serve REST and run until the runtime stops; then release Spark and the server."""
        assert self.runtime is not None and self.server is not None and self.source is not None
        self.server.start()
        self.source.start(self.server.url, self.runtime.report)
        log.info(
            "driver %s: REST at %s; %s",
            self.settings.driver_id,
            self.server.url,
            "standalone" if self.settings.standalone else "waiting for an assignment",
        )
        try:
            self.runtime.run()
        finally:
            self.close()

    def close(self) -> None:
        for closer in self.closers:
            try:
                closer()  # type: ignore[operator]
            except Exception as exc:  # noqa: BLE001 - best effort on the way out
                log.info("while stopping: %s", exc)
        self.closers.clear()
