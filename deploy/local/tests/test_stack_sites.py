"""`make up` with one driver set per site, and what it says when a cluster dies, freezes or
comes back: the rest of the stack keeps running."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_local import stack_services, stack_summary
from srm_local.cluster_watch import ClusterWatch

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true, topics: [orders]}
"""


def test_drivers_per_target_are_pinned_each_to_its_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SRM_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("SRM_DRIVERS_PER_TARGET", "2")
    config = tmp_path / "srm.yaml"
    config.write_text(CONFIG)
    services = {s.name: s for s in stack_services.stack_services(config, {})}
    drivers = sorted(name for name in services if name.startswith("driver"))
    assert drivers == ["driver-backup-1", "driver-backup-2", "driver-primary-1", "driver-primary-2"]
    command = services["driver-backup-2"].command
    assert command[command.index("--target") + 1] == "backup"
    lines = "\n".join(stack_summary.service_lines(list(services.values())))
    assert "runs the tasks of the flows into primary, pinned there" in lines


def test_without_per_target_drivers_every_driver_serves_every_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SRM_DRIVERS_PER_TARGET", raising=False)
    monkeypatch.setenv("SRM_DRIVERS", "2")
    assert stack_services.stack_drivers(["backup", "primary"]) == [
        ("driver-1", None),
        ("driver-2", None),
    ]
    monkeypatch.setenv("SRM_DRIVERS_PER_TARGET", "two")
    with pytest.raises(ValueError, match="SRM_DRIVERS_PER_TARGET='two' is not a number"):
        stack_services.stack_drivers(["backup"])


def test_a_dead_cluster_is_said_once_the_rest_keeps_running_and_its_return_too() -> None:
    watch = ClusterWatch(("a", "b", "c"))
    everyone = {"a": set(), "b": set(), "c": set()}
    assert watch.observe("abc", everyone) == []
    [line] = watch.observe("bc", {"b": set(), "c": set()})
    assert line.startswith("cluster a stopped (its broker exited); the rest keep running (b, c)")
    assert "srm-local kafka start a" in line
    assert watch.observe("bc", {"b": set(), "c": set()}) == [], "said once"
    assert not watch.all_stopped()
    [back] = watch.observe("abc", everyone)
    assert back == "cluster a is back (was stopped): its flows catch up"


def test_a_frozen_cluster_is_unresponsive_after_two_missed_listings() -> None:
    watch = ClusterWatch(("a", "b"))
    assert watch.observe("ab", {"b": set()}) == [], "one slow answer is not a frozen broker"
    [line] = watch.observe("ab", {"b": set()})
    assert line.startswith("cluster a does not answer (frozen, or cut off?); the rest keep")
    assert watch.observe("ab", {"a": set(), "b": set()}) == [
        "cluster a is back (was unresponsive): its flows catch up"
    ]
    watch.observe("", {})
    assert watch.all_stopped()
