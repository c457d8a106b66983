"""make up's plan follows the event log's lists (srm-control), not only the file's."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from srm_common.config import load_config
from srm_common.control.commands import config_diff
from srm_common.control.events import Envelope, Event, TopicsAllowed, TopicsDenied
from srm_common.control.state import ControlState
from srm_common.replication_plan import plan_replication
from srm_common.testing import InMemoryEventLog
from srm_coordinator.leader import baseline_of
from srm_local.live_lists import LiveLists

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true, topics: [orders]}
"""
FLOW = "primary->backup"


def envelopes(events: Iterable[Event]) -> list[Envelope]:
    return [Envelope(event, 1, "test") for event in events]


def copied(lists: LiveLists, topics: set[str]) -> list[str]:
    [plan, *_] = [p for p in plan_replication(lists.config(), {"primary": topics}) if p.enabled]
    return sorted(route.topic for route in plan.routes)


def test_the_plan_uses_the_logs_lists_once_the_log_has_the_flow(tmp_path: Path) -> None:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    config = load_config(path)
    log = InMemoryEventLog()
    lists = LiveLists(config, {"backup": log.reader})
    topics = {"orders", "sales.eu", "sales.tmp"}
    assert copied(lists, topics) == ["orders"]  # nothing in the log yet: the file

    log.append(*envelopes(config_diff(ControlState(), baseline_of(config), config.source)))
    assert not lists.poll(), "seeding the log with the file's lists changes no plan"
    assert not lists.poll(), "nothing new"

    log.append(
        *envelopes([TopicsAllowed(FLOW, ("sales\\..*",)), TopicsDenied(FLOW, ("sales\\.tmp",))])
    )
    assert lists.poll()
    assert copied(lists, topics) == ["orders", "sales.eu"]
