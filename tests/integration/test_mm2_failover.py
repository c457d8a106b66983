"""A consumer group failing over to ``backup`` and back with a real MirrorMaker 2: the
records the application skips and reads twice, the figures SRM is compared with.

One MirrorMaker 2 (dedicated mode, the cached Kafka jars) runs flows ``primary->backup``
and ``backup->primary`` with checkpoints every second and automatic group offset sync
on. A numbered topic (3 partitions, aborted transactions in two of them) is read by two
groups on ``primary``, the same first 100 records of each partition; then each fails
over to ``backup`` and reads ``primary.<topic>`` to its end, reads part of a second
round of records there, and fails back to ``primary``:

* ``manual``: failover with the group's checkpoints (``primary.checkpoints.internal``
  on backup, decoded with SRM's codec) applied through the Admin API, what
  ``srm-control offsets --export`` plus ``kafka-consumer-groups --reset-offsets`` does;
* ``automatic``: failover with the offsets MirrorMaker 2's group offset sync wrote.

Both use the same checkpoints (the sync writes the latest ones, for every group of the
flow, the manual one included), so their figures differ only if timing does.

Failback has no help from MirrorMaker 2 (no reverse checkpoints, KIP-1098): the group
resumes on ``primary`` from the offsets it committed there before the failover.

Asserted: what MirrorMaker 2 guarantees (nothing skipped; its translation never goes
past the group's commit) and that it leaves failback to the operator. Printed (run
with ``-s``): skipped / read twice per step, the checkpoints next to the exact offsets.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TypeVar

import pytest
from srm_common.domain.records import Checkpoint
from srm_harness.clients import admin, consume_all, end_offsets, list_topics
from srm_harness.group_ledger import Ledger, NumberedTopic, Tally
from srm_harness.group_scenario import (
    consume,
    group_offsets,
    latest_checkpoints,
    produce_numbered,
    set_group_offsets,
    wait_group_empty,
)
from srm_harness.mirrormaker import MirrorMaker2
from srm_harness.waits import wait_until
from srm_local.jars import kafka_version

pytestmark = pytest.mark.integration

T = TypeVar("T")

PARTITIONS = 3
FIRST_ROUND = 200  # records per partition before the failover
SECOND_ROUND = 100  # records per partition produced while the groups are on backup
ABORT_EVERY = 4  # an aborted transaction before every 4th batch of 10...
CLEAN = {0}  # ...except in partition 0, whose offsets have no holes
# Records each group processes per partition on primary, then later on backup; the same
# for both groups, so that only the way their offsets reach backup differs.
VARIANTS = ("manual", "automatic")
READ_ON_PRIMARY = 100
READ_MORE_ON_BACKUP = 50
SETTLE = 10  # seconds without a new checkpoint before the failover uses them

# SHARED_CLUSTERS_NOTE: the clusters may also run the local SRM stack (`make up`), which
# replicates every topic and group both ways with MM2's default excludes. A second
# replicator copying the topic or checkpointing the groups would blur MM2's figures, so
# the topic ends in `.replica` and the groups start with `__`: the default excludes skip
# them; MM2 here gets the excludes without those two patterns. The shared internal
# topics (checkpoints, offset syncs) are keyed by topic and group, so records of others
# do not matter. MM2 copies `heartbeats` whatever the topic filter unless
# `heartbeats.replication.enabled=false`, which it gets here: the shared remote
# heartbeat topics are the other tests' drivers' (the test checks MM2 left them alone).
CHECKPOINTS_ON_BACKUP = "primary.checkpoints.internal"
CHECKPOINTS_ON_PRIMARY = "backup.checkpoints.internal"


def mm2_properties(
    bootstrap: Mapping[str, str], topic: str, groups: list[str], token: str
) -> dict[str, str]:
    """Both flows, limited to this test's topic and groups; checkpoints, group listing
    and group offset sync every second; everything else at MirrorMaker 2's defaults
    except what a one-broker cluster and a shared cluster need."""
    return {
        "clusters": "primary, backup",
        "primary.bootstrap.servers": bootstrap["primary"],
        "backup.bootstrap.servers": bootstrap["backup"],
        "primary->backup.enabled": "true",
        "primary->backup.topics": topic,
        "backup->primary.enabled": "true",
        # The replica the groups read on backup; MM2 never copies it home (cycle) and,
        # with no offset syncs for it, never checkpoints it either: failback has no help.
        "backup->primary.topics": f"primary.{topic}",
        "groups": ", ".join(groups),
        # The defaults minus what this test's names use (see SHARED_CLUSTERS_NOTE).
        "topics.exclude": r".*[\-\.]internal, __.*",
        "groups.exclude": "console-consumer-.*, connect-.*",
        "emit.checkpoints.interval.seconds": "1",
        "refresh.groups.interval.seconds": "1",
        "sync.group.offsets.enabled": "true",
        "sync.group.offsets.interval.seconds": "1",
        "replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        # Other tests share these clusters: Connect state of its own (topics and worker
        # groups), and no heartbeats written into the shared `heartbeats` topics.
        "offset.storage.topic": f"mm2-offsets.{token}.internal",
        "config.storage.topic": f"mm2-configs.{token}.internal",
        "status.storage.topic": f"mm2-status.{token}.internal",
        "offset.storage.partitions": "1",
        "status.storage.partitions": "1",
        "backup.group.id": f"connect-mm2-{token}-from-primary",
        "primary.group.id": f"connect-mm2-{token}-from-backup",
        "emit.heartbeats.enabled": "false",
        # ...nor copies of them: `primary.heartbeats` on backup (and `backup.heartbeats`
        # on primary) are what the other tests' drivers write; a second writer there
        # halts their copies as conflicts (rightly).
        "heartbeats.replication.enabled": "false",
        "sync.topic.acls.enabled": "false",  # the brokers have no authorizer
    }


def settled(
    read: Callable[[], T],
    ready: Callable[[T], bool],
    *,
    hold: float,
    timeout: float,
    what: str,
    detail: Callable[[], str],
) -> T:
    """The value of ``read()`` once ``ready`` and unchanged for ``hold`` seconds."""
    deadline = time.monotonic() + timeout
    value = read()
    since = time.monotonic()
    while True:
        if ready(value) and time.monotonic() - since >= hold:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s (last: {value})\n{detail()}")
        time.sleep(0.5)
        again = read()
        if again != value or not ready(again):
            value, since = again, time.monotonic()


def offsets_by_id(bootstrap: str, topic: str) -> dict[bytes, int]:
    """Where each value sits in ``topic`` (values are unique; uncommitted data included,
    since a replica holds copied aborted records as ordinary ones)."""
    partitions = consume_all(bootstrap, topic, isolation_level="read_uncommitted")
    return {r.value: r.offset for rs in partitions.values() for r in rs if r.value is not None}


def exact_positions(
    committed: Mapping[tuple[str, int], int],
    topic: NumberedTopic,
    source_offsets: Mapping[bytes, int],
    replica_offsets: Mapping[bytes, int],
    replica_ends: Mapping[int, int],
) -> dict[int, int]:
    """Per partition, the replica offset of the first committed record at or after the
    group's commit (the replica's end if there is none): where a perfect translation
    would put the group on backup."""
    exact: dict[int, int] = {}
    for (_topic, partition), offset in committed.items():
        following = [v for v in topic.ids[partition] if source_offsets[v] >= offset]
        exact[partition] = replica_offsets[following[0]] if following else replica_ends[partition]
    return exact


def test_mm2_consumer_group_failover_and_failback(kafka, unique_name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    primary, backup = kafka["primary"], kafka["backup"]
    # Names the default excludes skip (see SHARED_CLUSTERS_NOTE), set back in for MM2.
    topic = kafka.create_topic(
        "primary", unique_name("numbered") + ".replica", partitions=PARTITIONS
    )
    remote = f"primary.{topic}"
    groups = {variant: "__" + unique_name(f"g-{variant}") for variant in VARIANTS}
    token = uuid.uuid4().hex[:8]
    kafka.created.append(("backup", remote))
    for alias in ("primary", "backup"):
        for kind in ("offsets", "configs", "status"):
            kafka.created.append((alias, f"mm2-{kind}.{token}.internal"))

    source = produce_numbered(
        primary,
        topic,
        partitions=PARTITIONS,
        per_partition=FIRST_ROUND,
        abort_every=ABORT_EVERY,
        clean_partitions=CLEAN,
    )
    ledgers = {variant: Ledger(source.ids) for variant in groups}
    mm2 = MirrorMaker2(
        tmp_path / "mm2", mm2_properties(kafka.bootstrap, topic, list(groups.values()), token)
    )
    shared_heartbeats = _heartbeat_ends(kafka.bootstrap)
    started = time.monotonic()
    mm2.start()
    report: list[str] = [
        f"MirrorMaker 2 {kafka_version()}, topic {topic}: {PARTITIONS} partitions x "
        f"{FIRST_ROUND} committed records, {source.aborted_count} aborted ones in "
        f"partitions {sorted(set(range(PARTITIONS)) - CLEAN)}; second round "
        f"{PARTITIONS} x {SECOND_ROUND} while the groups are on backup"
    ]
    try:

        def alive_detail() -> str:
            state = "running" if mm2.alive() else f"exited {mm2.returncode}"
            return f"MirrorMaker 2 {state}\n{mm2.log_tail()}"

        # 1. Each group reads part of the topic on primary, commits, leaves.
        committed: dict[str, dict[tuple[str, int], int]] = {}
        for variant, group in groups.items():
            ids = consume(primary, [topic], group, per_partition=READ_ON_PRIMARY)
            ledgers[variant].read(ids, "primary, before the failover")
            wait_group_empty(primary, group)
            committed[variant] = group_offsets(primary, group)
        last_commit = time.monotonic()

        # 2. MM2 copies the topic and checkpoints the groups' final commits. A commit
        # below every offset sync MM2 still holds for a partition is never translated:
        # such a partition gets no checkpoint at all, so "settled" means unchanged for
        # SETTLE seconds (many checkpoint periods) once the copy is complete.
        wait_copied(backup, remote, source, alive_detail)
        checkpoints = {
            variant: settled(
                lambda group=group: latest_checkpoints(backup, CHECKPOINTS_ON_BACKUP, group),
                lambda found, variant=variant: _checkpointed(found, committed[variant], topic),
                hold=SETTLE,
                timeout=240,
                what=f"checkpoints of {group} for its final commit",
                detail=alive_detail,
            )
            for variant, group in groups.items()
        }
        report.append(
            f"checkpoints settled {time.monotonic() - started:.0f} s after MM2 started, "
            f"{time.monotonic() - last_commit:.0f} s after the groups' last commit (an idle "
            f"partition's last record is offset-synced at MM2's offset flush, every 60 s)"
        )
        source_offsets = offsets_by_id(primary, topic)
        replica_offsets = offsets_by_id(backup, remote)
        replica_ends = end_offsets(backup, remote)
        for variant, found in checkpoints.items():
            exact = exact_positions(
                committed[variant], source, source_offsets, replica_offsets, replica_ends
            )
            for (_t, p), offset in sorted(committed[variant].items()):
                cp = found.get((remote, p))
                if cp is None:
                    report.append(
                        f"  {variant}: partition {p}: committed {offset} on primary -> "
                        f"no checkpoint (exact position {exact[p]} on backup)"
                    )
                    continue
                # MM2's promise: never past the group's position (down + 1 at most).
                assert cp.downstream_offset <= exact[p], (variant, cp, exact)
                report.append(
                    f"  {variant}: partition {p}: committed {cp.upstream_offset} on primary -> "
                    f"checkpoint {cp.downstream_offset} on backup; exact position "
                    f"{exact[p]} ({exact[p] - cp.downstream_offset} behind)"
                )

        # 3. Failover. (a) By hand: the checkpoints, applied with the Admin API; a
        # partition without a checkpoint gets nothing (auto.offset.reset decides).
        group = groups["manual"]
        before = group_offsets(backup, group)
        set_group_offsets(
            backup, group, {k: cp.downstream_offset for k, cp in checkpoints["manual"].items()}
        )
        report.append(
            f"manual: offsets on backup before applying the checkpoints (the group sync "
            f"runs for every group): {_by_partition(before)}"
        )
        # (c) MM2's group offset sync: wait until it wrote the checkpoints.
        synced_at = time.monotonic()
        want = {k: cp.downstream_offset for k, cp in checkpoints["automatic"].items()}
        settled(
            lambda: group_offsets(backup, groups["automatic"]),
            lambda found: found == want,
            hold=0,
            timeout=120,
            what="MM2's group offset sync of the automatic group",
            detail=alive_detail,
        )
        report.append(
            f"automatic: group offset sync matched the checkpoints "
            f"{time.monotonic() - synced_at:.1f} s after they settled"
        )
        failover: dict[str, Tally] = {}
        for variant, group in groups.items():
            ids = consume(backup, [remote], group)
            failover[variant] = ledgers[variant].read(ids, f"failover ({variant}), backup to end")
            wait_group_empty(backup, group)

        # 4. More records arrive; each group reads some of them on backup and stops.
        more = produce_numbered(
            primary,
            topic,
            partitions=PARTITIONS,
            per_partition=SECOND_ROUND,
            start=FIRST_ROUND,
            abort_every=ABORT_EVERY,
            clean_partitions=CLEAN,
        )
        source.extend(more)
        for ledger in ledgers.values():
            ledger.add_source(more.ids)
        wait_copied(backup, remote, source, alive_detail)
        for variant, group in groups.items():
            ids = consume(backup, [remote], group, per_partition=READ_MORE_ON_BACKUP)
            ledgers[variant].read(ids, "backup, more after the failover")
            wait_group_empty(backup, group)

        # 5. (b) Failback: MM2 offers no translation for primary.<topic> -> <topic>.
        time.sleep(5)  # several checkpoint and group-sync periods of backup->primary
        failback: dict[str, Tally] = {}
        for variant, group in groups.items():
            home = latest_checkpoints(primary, CHECKPOINTS_ON_PRIMARY, group)
            assert home == {}, f"MM2 checkpointed {group} back to primary: {home}"
            on_primary = group_offsets(primary, group)
            assert on_primary == committed[variant], "MM2 moved the group's offsets on primary"
            report.append(
                f"{variant}: failback: no checkpoint in {CHECKPOINTS_ON_PRIMARY}; the group "
                f"resumes from its pre-failover commit {_by_partition(on_primary)}"
            )
            ids = consume(primary, [topic], group)
            failback[variant] = ledgers[variant].read(ids, "failback (old commit), primary to end")
            wait_group_empty(primary, group)
    finally:
        code = mm2.stop()
        report.append(f"MirrorMaker 2 stopped (exit {code}); log {mm2.log_path}")
        workers = [f"connect-mm2-{token}-from-primary", f"connect-mm2-{token}-from-backup"]
        _delete_groups(kafka.bootstrap, [*groups.values(), *workers])
        for variant, ledger in ledgers.items():
            report.append(f"--- {variant} ({groups[variant]})\n{ledger}")
        print("\n" + "\n".join(report))

    assert _heartbeat_ends(kafka.bootstrap) == shared_heartbeats, (
        "MirrorMaker 2 wrote into the heartbeat topics the other tests' drivers write"
    )
    for variant in groups:
        # MM2's guarantee: a failover never skips (its translation stays behind).
        assert failover[variant].skipped == (), f"{variant}: {failover[variant]}"
        assert failover[variant].extra_reads >= 0
        # The pre-failover commit is behind everything read on backup: nothing skipped,
        # everything read there since is read again.
        assert failback[variant].skipped == (), f"{variant}: {failback[variant]}"
        assert ledgers[variant].tally().not_reached == 0


def _heartbeat_ends(bootstrap: Mapping[str, str]) -> dict[str, dict[int, int]]:
    """End offsets of the shared remote heartbeat topics (absent: empty)."""
    ends = {}
    for alias, topic in (("backup", "primary.heartbeats"), ("primary", "backup.heartbeats")):
        present = topic in list_topics(bootstrap[alias])
        ends[topic] = end_offsets(bootstrap[alias], topic) if present else {}
    return ends


def wait_copied(backup: str, remote: str, source: NumberedTopic, detail: Callable[[], str]) -> None:
    """Every committed record of the source is in the replica, exactly once (twice
    would mean a second replicator, or an MM2 restart, and no figure would hold)."""
    wanted = {v for ids in source.ids.values() for v in ids}
    copies: Counter[bytes] = Counter()

    def copied() -> bool:
        if remote not in list_topics(backup):
            return False
        partitions = consume_all(backup, remote, isolation_level="read_uncommitted")
        copies.clear()
        copies.update(r.value for rs in partitions.values() for r in rs if r.value is not None)
        return wanted <= set(copies)

    wait_until(copied, 240, f"MM2 copies {remote}", step=1, detail=detail)
    twice = sorted(v for v, n in copies.items() if n > 1)
    assert not twice, f"{len(twice)} records copied more than once, e.g. {twice[:3]}"


def _checkpointed(
    found: Mapping[tuple[str, int], Checkpoint],
    committed: Mapping[tuple[str, int], int],
    topic: str,
) -> bool:
    """Some checkpoint, and each one for the group's final commit (it committed once)."""
    return bool(found) and all(
        cp.upstream_offset == committed.get((topic, partition))
        for (_remote, partition), cp in found.items()
    )


def _by_partition(offsets: Mapping[tuple[str, int], int]) -> str:
    return ", ".join(f"p{p}={o}" for (_t, p), o in sorted(offsets.items())) or "none"


def _delete_groups(bootstrap: Mapping[str, str], groups: list[str]) -> None:
    for servers in bootstrap.values():
        client = admin(servers)
        for future in client.delete_consumer_groups(groups, request_timeout=10).values():
            try:
                future.result(15)
            except Exception:  # noqa: BLE001 - a group never created there is fine
                pass
