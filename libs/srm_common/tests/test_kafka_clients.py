"""What every admin client is built with (adapters/kafka_clients.py); the security
translation is tested in test_kafka_clients_tls.py."""

from __future__ import annotations

from typing import Any

import pytest
from srm_common.adapters import kafka_clients


def test_admin_clients_never_create_a_topic_by_asking_about_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[dict[str, Any]] = []
    monkeypatch.setattr(kafka_clients, "AdminClient", lambda config: built.append(config))
    asked = {"allow.auto.create.topics": "true"}
    kafka_clients.admin({"bootstrap.servers": "127.0.0.1:9"}, **asked)
    assert built[0]["allow.auto.create.topics"] == "false"


def test_admin_clients_keep_their_connections_so_a_dead_broker_costs_no_cpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[dict[str, Any]] = []
    monkeypatch.setattr(kafka_clients, "AdminClient", lambda config: built.append(config))
    asked = {"enable.sparse.connections": "true"}
    kafka_clients.admin({"bootstrap.servers": "127.0.0.1:9"}, **asked)
    assert built[0]["enable.sparse.connections"] == "false"
