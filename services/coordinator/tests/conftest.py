"""Coordinators without Kafka, built through their constructor from the fakes of
:mod:`srm_coordinator.testing`; their loop runs only when a test calls ``_round``."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_common.config import load_config
from srm_common.config.control import control_plane
from srm_common.config.model import SrmConfig
from srm_coordinator.service import Coordinator
from srm_coordinator.testing import Fakes

LEADING_CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true, topics: [orders]}
"""


@pytest.fixture
def fakes() -> Fakes:
    return Fakes()


@pytest.fixture
def leading_config(tmp_path: Path) -> SrmConfig:
    path = tmp_path / "leading.yaml"
    path.write_text(LEADING_CONFIG)
    return load_config(path)


@pytest.fixture
def standby(leading_config: SrmConfig, fakes: Fakes) -> Coordinator:
    """Coordinator ``c1``, never elected: it has not even read the log."""
    return Coordinator(
        leading_config,
        control_plane(leading_config).log("backup"),
        fakes.adapters(),
        coordinator_id="c1",
    )


@pytest.fixture
def leading(standby: Coordinator) -> Coordinator:
    """Coordinator ``c1`` after its take-over (epoch 1), writing to ``fakes.writer``."""
    standby.replay("http://c1:1")
    standby.lead()
    assert standby.leading
    return standby
