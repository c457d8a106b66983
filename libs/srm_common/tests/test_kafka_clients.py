"""What every admin client is built with (adapters/kafka_clients.py); the security
translation is tested in test_kafka_clients_tls.py."""

from __future__ import annotations

from typing import Any

import pytest
from srm_common.adapters import kafka_clients


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("allow.auto.create.topics", "asking about a topic never creates it"),
        ("enable.sparse.connections", "a dead broker costs no CPU (reconnects back off)"),
    ],
)
def test_admin_clients_fix_what_a_caller_cannot_turn_on(
    monkeypatch: pytest.MonkeyPatch, key: str, why: str
) -> None:
    built: list[dict[str, Any]] = []
    monkeypatch.setattr(kafka_clients, "AdminClient", lambda config: built.append(config))
    kafka_clients.admin({"bootstrap.servers": "127.0.0.1:9"}, **{key: "true"})
    assert built[0][key] == "false", why
