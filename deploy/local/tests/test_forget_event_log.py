"""`srm-local up --fresh` wipes the clusters' data and, with it, what remembered their
event log (else the new log would be reported as the old one lost)."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_local.stack import forget_event_log


def test_a_fresh_start_forgets_the_log_memories_and_the_read_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SRM_RUN_DIR", str(tmp_path))
    services = tmp_path / "services"
    services.mkdir()
    for name in ("coordinator-1-log.json", "coordinator-2-log.json", "srm-gateway.db"):
        (services / name).write_text("{}")
    (services / "gateway.log").write_text("kept")
    forget_event_log()
    assert sorted(p.name for p in services.iterdir()) == ["gateway.log"]
    forget_event_log()  # nothing left to forget: no error
