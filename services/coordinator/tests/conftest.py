"""A coordinator that leads without Kafka: its event log writer, heartbeat reader and
discovery are fakes, and its loop runs only when a test calls ``_round``."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_common.config import load_config
from srm_common.config.control import control_settings
from srm_common.config.model import FlowConfig
from srm_common.control.events import Envelope
from srm_coordinator.leader import Leader
from srm_coordinator.membership import Membership
from srm_coordinator.service import Coordinator

LEADING_CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true, topics: [orders]}
"""


class NoDiscovery:
    def discover(self, _flow: FlowConfig, _after: int) -> tuple[list[tuple[str, int]], list[str]]:
        return [], []

    def close(self) -> None:
        pass


class ListWriter:
    """An event log writer keeping what it appended in ``appended``."""

    def __init__(self) -> None:
        self.appended: list[Envelope] = []

    def append(self, envelopes: list[Envelope]) -> list[Envelope]:
        written = [
            Envelope(e.event, e.at_ms, e.by, e.command_id, len(self.appended) + i)
            for i, e in enumerate(envelopes)
        ]
        self.appended += written
        return written

    def close(self) -> None:
        pass


class NoBeats:
    def poll(self, _timeout: float = 0) -> list[object]:
        return []

    def close(self) -> None:
        pass


@pytest.fixture
def leading(tmp_path: Path) -> Coordinator:
    """Coordinator ``c1`` after its take-over (epoch 1), writing to a :class:`ListWriter`."""
    path = tmp_path / "leading.yaml"
    path.write_text(LEADING_CONFIG)
    config = load_config(path)
    service = Coordinator(config, control_settings(config), coordinator_id="c1")
    membership = Membership(10_000)
    service._membership = membership
    service._leader = Leader(
        config,
        coordinator="c1",
        url="http://c1:1",
        membership=membership,
        discovery=NoDiscovery(),  # type: ignore[arg-type]
        control=control_settings(config),
    )
    service._beats = NoBeats()  # type: ignore[assignment]
    service._writer = ListWriter()  # type: ignore[assignment]
    service.leading = True
    assert service._commit(service._leader.take_over(service.state))
    return service
