"""The checkpoint task's rules, with fakes for the clusters: what is written when, and
when a group's offsets are synced on the target (real clusters: test_group_failover)."""

from __future__ import annotations

from collections.abc import Mapping

from srm_common.adapters.group_admin import GroupActivity
from srm_common.config import parse_yaml_text
from srm_common.domain.records import Checkpoint
from srm_common.domain.translation import SyncHistory, Translation
from srm_driver.checkpoints import Checkpointer

Key = tuple[str, int]

CONFIG = """
clusters:
  primary: {bootstrap.servers: "p:9092"}
  backup: {bootstrap.servers: "b:9092"}
flows:
  primary->backup: {enabled: true, topics: [orders], groups: [".*"]}
"""


class FakeOffsets:
    """Syncs of one-to-one copies from upstream 100 -> downstream 0, up to 199."""

    def __init__(self) -> None:
        self.history = SyncHistory()
        self.history.add(100, 0)
        self.history.add(199, 99)
        self.refreshed = 0

    def refresh(self) -> None:
        self.refreshed += 1

    def forward(self, topic: str, partition: int, offset: int) -> Translation:
        if partition == 9:
            return Translation(None, "no offset sync for this partition yet")
        return self.history.forward(offset)

    def remote_topic(self, topic: str) -> str:
        return f"primary.{topic}"

    def forget(self, lowest: Mapping[Key, int], *, keep: int) -> None:
        self.forgotten = dict(lowest)

    def close(self) -> None: ...


class FakeGroups:
    def __init__(self, commits: dict[str, dict[Key, int]], members: int = 0) -> None:
        self.commits = commits
        self.members = members
        self.sets: list[tuple[str, dict[Key, int]]] = []

    def committed(self, group: str) -> dict[Key, int]:
        return dict(self.commits.get(group, {}))

    def activity(self, group: str) -> GroupActivity:
        return GroupActivity("STABLE" if self.members else "EMPTY", self.members)

    def set(self, group: str, offsets: Mapping[Key, int]) -> None:
        self.sets.append((group, dict(offsets)))
        self.commits.setdefault(group, {}).update(offsets)


class FakeWriter:
    topic = "primary.checkpoints.internal"

    def __init__(self) -> None:
        self.written: list[Checkpoint] = []

    def write(self, records) -> int:  # type: ignore[no-untyped-def]
        batch = [Checkpoint.decode(k, v) for k, v in records]
        self.written += batch
        return len(batch)

    def close(self) -> None: ...


def task(source: FakeGroups, target: FakeGroups, writer: FakeWriter) -> Checkpointer:
    flow = parse_yaml_text(CONFIG).flow("primary", "backup")
    clock = iter(float(t) for t in range(100, 10_000))
    return Checkpointer(
        flow,
        ("app", "other"),
        offsets=FakeOffsets(),  # type: ignore[arg-type]
        source=source,  # type: ignore[arg-type]
        target=target,  # type: ignore[arg-type]
        writer=writer,  # type: ignore[arg-type]
        clock=lambda: next(clock),
    )


def test_checkpoints_are_written_only_when_they_change() -> None:
    source = FakeGroups({"app": {("orders", 0): 150, ("not-replicated", 0): 5}})
    writer = FakeWriter()
    t = task(source, FakeGroups({}), writer)
    assert t.emit() == 1
    assert writer.written == [Checkpoint("app", "primary.orders", 0, 150, 50, "")]
    assert t.offsets.forgotten == {("orders", 0): 150}  # type: ignore[attr-defined]
    assert t.emit() == 0  # nothing changed
    source.commits["app"][("orders", 0)] = 160
    assert t.emit() == 1 and writer.written[-1].downstream_offset == 60
    source.commits["app"][("orders", 0)] = 120  # the group rewound: written too
    assert t.emit() == 1 and writer.written[-1].upstream_offset == 120
    status = t.status["app"]
    assert status.checkpoints_written == 3 and status.checkpoint_latency_ms is not None


def test_untranslated_partitions_say_why_and_are_not_written() -> None:
    source = FakeGroups({"app": {("orders", 9): 150, ("orders", 0): 50}})
    writer = FakeWriter()
    t = task(source, FakeGroups({}), writer)
    assert t.emit() == 0
    assert t.status["app"].untranslated == {
        "orders-0": "offset 50 is older than the sync history (which starts at 100)",
        "orders-9": "no offset sync for this partition yet",
    }


def test_group_sync_only_for_empty_groups_never_backwards_never_new_partitions() -> None:
    source = FakeGroups({"app": {("orders", 0): 150, ("orders", 1): 190}, "other": {}})
    target = FakeGroups({"app": {("primary.orders", 1): 95, ("primary.orders", 7): 3}})
    t = task(source, target, FakeWriter())
    t.emit()
    t.sync_groups()
    assert target.sets == [("app", {("primary.orders", 0): 50})]  # partition 1 is ahead there
    assert t.status["app"].sync == (
        "set 1 partitions; 1 partitions left (already at or past the translation)"
    )
    assert t.status["other"].sync == "skipped: no translated offsets yet"

    target.members = 2
    source.commits["app"][("orders", 0)] = 170
    t.emit()
    t.sync_groups()
    assert len(target.sets) == 1
    assert t.status["app"].sync == "skipped: 2 active members on backup"


def test_a_source_that_does_not_answer_shows_on_the_group() -> None:
    class Down(FakeGroups):
        def committed(self, group: str) -> dict[Key, int]:
            raise RuntimeError("cannot read the offsets of 'app' on primary: timed out")

    t = task(Down({}), FakeGroups({}), FakeWriter())
    assert t.emit() == 0
    assert "timed out" in (t.status["app"].error or "")
