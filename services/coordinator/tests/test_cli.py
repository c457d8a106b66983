"""srm-coordinator at start-up: settings it does not act on are logged before anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_coordinator.cli import main

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:8"}
replication:
  srm.control.cluster: nowhere
  add.source.alias.to.metrics: true
flows:
  primary->backup: {enabled: true}
"""


def test_settings_srm_does_not_act_on_are_logged_once_at_start_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    assert main(["--config", str(path)]) == 2  # the unknown control cluster: nothing starts
    assert "unknown cluster alias 'nowhere'" in capsys.readouterr().err
    # Only the service's own lines: a library's background thread left by another test
    # (an exporter retrying a closed collector) may log into the same capture.
    warned = [
        r.getMessage() for r in caplog.records if r.levelname == "WARNING" and r.name == "root"
    ]
    assert warned == [
        "accepted for MirrorMaker 2 compatibility, not supported: add.source.alias.to.metrics"
        " (set on every flow): every raw metrics sample names its flow, source and target"
        " (docs/metrics.md)"
    ]
