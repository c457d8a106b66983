"""The election thread's own life (the election itself runs against Kafka in
tests/integration/test_control_path.py)."""

from __future__ import annotations

import threading
from pathlib import Path

from srm_common.adapters import kafka_clients
from srm_common.config import load_config
from srm_common.config.control import control_plane
from srm_coordinator.election import LeaderElection, consumer_config

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:8"}
"""


def test_a_stopped_election_can_be_joined(tmp_path: Path) -> None:
    """Thread.join calls Thread._stop(); an attribute of that name broke every shutdown."""
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    stop = threading.Event()
    settings = control_plane(load_config(path)).log("backup")
    consumer = kafka_clients.consumer(consumer_config(settings, "c-test"))
    election = LeaderElection(consumer, settings.election_topic, stop)
    election.start()
    stop.set()
    election.join(30)
    assert not election.is_alive() and not election.leading.is_set()
