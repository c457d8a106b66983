"""A standalone driver inside the test process, on the session's Spark: built by the
driver's own composition root (``srm_driver.bootstrap.build``), so everything but the
process boundary is what ``srm-driver --standalone`` runs."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from srm_common.config import load_config
from srm_local.jars import driver_jars_dir


class InProcessDriver:
    """``start()``, wait for what a test needs, ``stop()`` (graceful, as SIGTERM)."""

    def __init__(self, config_path: Path, session, *, driver_id: str = "test-driver") -> None:  # type: ignore[no-untyped-def]
        from srm_driver.bootstrap import build
        from srm_driver.settings import driver_settings

        settings = driver_settings(
            load_config(config_path),
            spark_master=str(session.sparkContext.master),
            spark_conf={},
            jars_folder=str(driver_jars_dir()),
            host="127.0.0.1",
            port=0,
            driver_id=driver_id,
            standalone=True,
        )
        self.driver = build(settings, session=session)
        self._thread = threading.Thread(target=self.driver.run, name="test driver", daemon=True)

    @property
    def url(self) -> str:
        return self.driver.url

    def start(self) -> InProcessDriver:
        """Start it and wait until its REST API answers."""
        self._thread.start()
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/v1/driver", timeout=2):
                    return self
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self, timeout: float = 120) -> None:
        assert self.driver.runtime is not None
        self.driver.runtime.stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the driver did not stop within its grace period"

    def status(self, flow: str = "primary->backup") -> dict:  # type: ignore[type-arg]
        """The flow's REST status, as an operator reads it."""
        source, target = flow.split("->")
        with urllib.request.urlopen(
            f"{self.url}/v1/flows/{source}/{target}/status", timeout=10
        ) as r:
            return json.loads(r.read())


@pytest.fixture
def run_driver(spark, tmp_path) -> Iterator[Callable[[Path], InProcessDriver]]:  # type: ignore[no-untyped-def]
    """Start in-process standalone drivers on the session's Spark; all stopped at the end."""
    started: list[InProcessDriver] = []

    def start(config_path: Path) -> InProcessDriver:
        driver = InProcessDriver(config_path, spark).start()
        started.append(driver)
        return driver

    yield start
    for driver in started:
        if driver._thread.is_alive():  # noqa: SLF001 - the fixture owns it
            driver.stop()
