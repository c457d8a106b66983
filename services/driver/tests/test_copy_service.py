"""The copy service's decisions, with fakes at its ports: plans, reservations, progress
and syncs in order, unit breaks, poison records, halts, releases, leases."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from srm_common.config import load_config
from srm_common.config.model import FlowConfig
from srm_common.domain.progress import PartitionFacts, Progress, Surplus
from srm_common.domain.records import OffsetSync
from srm_common.domain.resume import ResumeMode, ResumePoint
from srm_common.testing import Clock
from srm_driver.copying import planner, reports, write_failures
from srm_driver.copying.clients import unit_settings
from srm_driver.copying.ports import LEASE_CAP_MS, CopyEvent, FlowAdapters
from srm_driver.copying.positions import as_reported
from srm_driver.copying.protocol import PartitionReport, SlotRun
from srm_driver.copying.service import CLUSTER_SLOT_LEASE_MS, CopyService
from srm_driver.copying.slots import SLOT_LOST_S
from srm_driver.copying.state import PartitionState, ResumeRequest
from srm_driver.spark import SparkSetupError
from srm_driver.testing import FakeCopyJob

FLOW = "primary->backup"
OTHER = "primary->dr"  # a second flow, into another target cluster
TP = ("orders", 0)
REMOTE = "primary.orders"
CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:8"}
  dr: {bootstrap.servers: "127.0.0.1:7"}
flows:
  primary->backup: {enabled: true, srm.batch.max.records: 100, srm.poison.max.tries: 2}
  primary->dr: {enabled: true, srm.batch.max.records: 100}
"""


class Journal:
    """Everything the fakes wrote, in order."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, object]] = []
        self.writes = 0  # progress writes (each one may hold many partitions)

    def progress(self) -> list[tuple[tuple[str, int], Progress]]:
        return [e for kind, e in self.entries if kind == "progress"]  # type: ignore[misc]


class FakeStore:
    def __init__(self, journal: Journal, loaded: Mapping[tuple[str, int], Progress]) -> None:
        self.journal = journal
        self.loaded = dict(loaded)

    def write(self, updates: Iterable[tuple[tuple[str, int], Progress]]) -> None:
        self.journal.writes += 1
        for update in updates:
            self.journal.entries.append(("progress", update))

    def load(self) -> dict[tuple[str, int], Progress]:
        return dict(self.loaded)


class FakeSyncs:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def write(self, records: Iterable[tuple[bytes, bytes]]) -> int:
        written = [OffsetSync.decode(k, v) for k, v in records]
        for sync in written:
            self.journal.entries.append(("sync", (sync.upstream_offset, sync.downstream_offset)))
        return len(written)


class FakeFacts:
    def __init__(self) -> None:
        self.facts = PartitionFacts("S1", 0, 1000, "T1", 0)
        self.surplus = Surplus(0, 0)
        self.pairs: list[tuple[int, int]] = []
        # Partitions whose offsets cannot be read, with why.
        self.unreadable: dict[tuple[str, int], str] = {}
        # The codec every source topic has ("": none found).
        self.codec = ""
        # The partitions of each gather (all facts) and each remote_unready (one question).
        self.gathered: list[set[tuple[str, int]]] = []
        self.asked: list[set[tuple[str, int]]] = []
        self.described: list[int] = []  # topics of each identity check

    def gather(
        self, routes: Mapping[tuple[str, int], str]
    ) -> tuple[dict[tuple[str, int], PartitionFacts], dict[tuple[str, int], str]]:
        self.gathered.append(set(routes))
        failed = {tp: why for tp, why in self.unreadable.items() if tp in routes}
        return {tp: self.facts for tp in routes if tp not in failed}, failed

    def remote_unready(self, routes: Mapping[tuple[str, int], str]) -> dict[tuple[str, int], str]:
        self.asked.append(set(routes))
        return {tp: why for tp, why in self.unreadable.items() if tp in routes}

    def topic_identities(
        self, topics: Mapping[str, str]
    ) -> dict[str, tuple[str | None, str | None]]:
        self.described.append(len(topics))
        return dict.fromkeys(topics, (self.facts.source_topic_id, self.facts.target_topic_id))

    def compare(self, *_args: object) -> tuple[Surplus, list[tuple[int, int]]]:
        return self.surplus, self.pairs

    def codecs(self, partitions: Mapping[str, object]) -> dict[str, str]:
        return {topic: self.codec for topic in partitions if self.codec}

    def last_copied(self, *_args: object) -> int | None:
        return None


@pytest.fixture
def flow(tmp_path: Path) -> FlowConfig:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    return load_config(path).flow("primary", "backup")


@pytest.fixture
def other(tmp_path: Path) -> FlowConfig:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    return load_config(path).flow("primary", "dr")


class Harness:
    def __init__(
        self,
        flow: FlowConfig,
        loaded: Mapping[tuple[str, int], Progress] = {},  # noqa: B006
        others: Sequence[FlowConfig] = (),
        store: Callable[[Journal, FakeFacts], FakeStore] | None = None,
        grace_s: float = 0.0,
        local: bool = True,
        spark: bool | SparkSetupError = True,
        shared: bool = False,
    ) -> None:
        """``store``: the progress store of ``flow`` (default: one holding ``loaded``);
        ``grace_s``: the start-up grace for slots still to report. Most tests let slot 0
        alone report (of the job's 2), so by default nothing waits for slot 1: the grace is
        tested on its own. ``local``: whether the slots run in local mode (else on a
        cluster's executors). ``spark``: Spark up, still starting, or failed to start.
        ``shared``: whether other writers write into the remote partitions too."""
        self.journal = Journal()
        self.journals = {flow.name: self.journal} | {f.name: Journal() for f in others}
        self.facts = FakeFacts()
        self.clock = Clock(1_000_000)  # 1000 s
        self.lease = 5000
        self.leases: dict[str, int] = {}  # per flow, where it differs from ``lease``
        self.since = 0.0  # since when the lease has been held without a gap
        self.events: list[CopyEvent] = []
        self.job = FakeCopyJob()
        self.job.local = local
        self.job.up = spark
        adapters = {
            f.name: FlowAdapters(
                flow=f,
                store=(
                    store(self.journals[f.name], self.facts)
                    if store is not None and f is flow
                    else FakeStore(self.journals[f.name], loaded if f is flow else {})
                ),
                syncs=FakeSyncs(self.journals[f.name]),
                facts=self.facts,  # type: ignore[arg-type]
                settings=unit_settings(f, write_timeout_ms=10_000),
                shared=shared,
            )
            for f in (flow, *others)
        }
        self.service = CopyService(
            adapters=lambda f: adapters[f.name],
            flows={f.name: f for f in (flow, *others)},
            job=self.job,
            lease_ms=lambda name: self.lease_of(name),
            lease_held_since=lambda name: self.since_of(name),
            publish=self.events.append,
            write_timeout_ms=10_000,
            clock=self.clock,
            slot_grace_s=grace_s,
        )
        self.service.tick()  # the copy job starts

    seq = 0

    def lease_of(self, flow: str) -> int:
        """The lease the service is told for ``flow`` now (a test may replace it)."""
        return self.leases.get(flow, self.lease)

    def since_of(self, flow: str) -> float | None:
        """Since when the lease of ``flow`` is held (a test may replace it)."""
        return self.since if self.lease_of(flow) > 0 else None

    def report(
        self,
        *partitions: dict[str, object],
        broken: dict[str, object] | None = None,
        slot: int = 0,
        epoch: int = 0,
        applied: int = -1,
    ) -> tuple[int, dict]:  # type: ignore[type-arg]
        return self.report_units(
            unit(FLOW, *partitions, broken=broken, epoch=epoch, applied=applied),
            slot=slot,
            applied=applied,
        )

    def report_units(
        self, *units: dict[str, object], slot: int = 0, applied: int = -1
    ) -> tuple[int, dict]:  # type: ignore[type-arg]
        Harness.seq += 1
        body = {
            "job": "job-1",
            "slot": slot,
            "seq": Harness.seq,
            "answered": applied,
            "exiting": False,
            "units": list(units),
        }
        return self.service.on_report("job-1", slot, body)

    def tick(self) -> None:
        """The runtime's pass and each flow's, with slot 0 alive (slots report every
        200 ms)."""
        self.report()
        self.service.tick()
        for name in self.journals:
            self.service.work(name)

    def plan(self, slot: int = 0) -> dict | None:  # type: ignore[type-arg]
        _status, answer = self.report(slot=slot)
        unit = answer["units"].get(FLOW)
        if unit is None or not unit["partitions"]:
            return None
        return unit["partitions"][0]


def unit(
    flow: str,
    *partitions: dict[str, object],
    broken: dict[str, object] | None = None,
    epoch: int = 0,
    applied: int = -1,
) -> dict[str, object]:
    return {
        "flow": flow,
        "epoch": epoch,
        "applied": applied,
        "broken": broken,
        "broken_epoch": epoch,
        "poll_error": None,
        "exited": False,
        "partitions": list(partitions),
    }


def part(
    plan: int, acked_up: int, acked_down: int, *, state: str = "sending", **more: object
) -> dict[str, object]:
    return {
        "topic": TP[0],
        "partition": TP[1],
        "plan": plan,
        "state": state,
        "acked_up": acked_up,
        "acked_down": acked_down,
        "next_send": more.pop("next_send", acked_up),
        "outstanding": more.pop("outstanding", 0),
        "uncertain": more.pop("uncertain", False),
        "records": more.pop("records", 0),
        "bytes": 0,
        "dropped": 0,
        "latency_sum_ms": 0,
        "latency_max_ms": 0,
        "syncs": more.pop("syncs", []),
        "error": more.pop("error", None),
    }


def started(h: Harness) -> dict:  # type: ignore[type-arg]
    h.service.set_owned(FLOW, {TP: REMOTE})
    h.tick()
    plan = h.plan()
    assert plan is not None, "a plan is handed out after reconciling"
    return plan


def test_a_new_partition_is_claimed_with_a_reservation_before_anything_is_sent(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan = started(h)
    assert (plan["start"], plan["down"], plan["reserve"], plan["remote"]) == (0, 0, 100, REMOTE)
    (written,) = h.journal.progress()
    assert written == (TP, Progress(0, 0, 100, "S1", "T1")), "the reservation is durable first"


def test_syncs_are_written_before_the_progress_that_covers_them(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    h.clock.now += 2  # past the commit interval
    status, answer = h.report(part(plan, 40, 40, syncs=[[0, 0], [39, 39]], records=40))
    assert status == 200 and answer["lease_ms"] == 5000
    kinds = [kind for kind, _ in h.journal.entries[1:]]
    assert kinds == ["sync", "sync", "progress"]
    assert h.journal.progress()[-1] == (TP, Progress(40, 40, 140, "S1", "T1"))
    assert answer["units"][FLOW]["partitions"][0]["reserve"] == 140
    assert h.service.status(FLOW)["records"] == 40


def test_a_slot_waiting_behind_a_gap_gets_a_reservation_past_the_next_record(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    _status, answer = h.report(part(plan, 5, 5, state="waiting_reservation", next_send=480))
    assert answer["units"][FLOW]["partitions"][0]["reserve"] == 580


def test_a_broken_unit_replans_every_partition_after_a_settle_delay_with_a_new_epoch(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    broken = {
        "kind": "transient",
        "message": "broker gone",
        "topic": None,
        "partition": None,
        "offset": -1,
        "class": "org.apache.kafka.common.errors.TimeoutException",
    }
    _status, answer = h.report(part(plan, 10, 10, state="stopping", outstanding=2), broken=broken)
    assert answer["units"][FLOW]["epoch"] == 1
    assert answer["units"][FLOW]["partitions"] == [], "nothing runs until it is reconciled"
    h.clock.now += 1.5
    h.tick()
    assert h.plan() is None, "sends of the broken plan are still pending: no reconcile yet"
    # The two sends in flight were purged with the producer: of unknown fate.
    h.report(part(plan, 10, 10, state="stopped", uncertain=True), broken=broken, epoch=0)
    h.clock.now += 5
    h.tick()
    assert h.plan() is None, "a send of unknown fate may still land: no reconcile yet"
    h.clock.now += 1.5  # the settle delay: half the write timeout, plus 1 s
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 12)  # 2 records landed unacknowledged
    h.facts.surplus = Surplus(2, 12)
    h.tick()
    replanned = h.plan()
    assert replanned is not None and (replanned["start"], replanned["down"]) == (12, 12)
    assert replanned["plan"] > plan


OTHER_TP = ("orders", 1)
TIMED_OUT = {
    "kind": "transient",
    "message": "Local: Message timed out",
    "topic": OTHER_TP[0],
    "partition": OTHER_TP[1],
    "offset": 7,
    "class": "_MSG_TIMED_OUT",
}


def two_running(h: Harness) -> tuple[int, int]:
    """Both partitions of ``orders`` planned on slot 0; their plan ids."""
    h.service.set_owned(FLOW, {TP: REMOTE, OTHER_TP: REMOTE})
    h.tick()
    _status, answer = h.report()
    plans = {p["partition"]: p["plan"] for p in answer["units"][FLOW]["partitions"]}
    return plans[0], plans[1]


def broken_over_the_other(h: Harness, mine: int, blamed: int) -> None:
    """The unit breaks on a timed-out write to partition 1, sends of it in flight
    purged; partition 0 had every copy acknowledged."""
    h.report(
        part(mine, 10, 10, state="stopped"),
        part(blamed, 5, 5, state="stopped", uncertain=True) | {"partition": 1},
        broken=TIMED_OUT,
    )


def replanned(h: Harness) -> dict[int, dict[str, object]]:
    _status, answer = h.report(epoch=1)
    return {p["partition"]: p for p in answer["units"][FLOW]["partitions"]}


def test_a_partition_with_nothing_in_flight_when_its_unit_broke_restarts_where_it_was_acknowledged(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    mine, blamed = two_running(h)
    written = len(h.journal.progress())
    broken_over_the_other(h, mine, blamed)
    h.facts.gathered.clear()
    h.clock.now += 1.5  # the innocent's backoff (1 s); the blamed one settles for 6 s
    h.tick()
    plans = replanned(h)
    assert set(plans) == {0}, "the partition with a send of unknown fate waits to settle"
    restart = plans[0]
    assert (restart["start"], restart["down"], restart["reserve"]) == (10, 10, 100)
    assert restart["plan"] > mine
    assert h.facts.gathered == [], "nothing read from Kafka"
    assert len(h.journal.progress()) == written, "the recorded reservation still bounds it"
    assert h.service.status(FLOW)["exact_restarts"] == 1
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 5)  # where partition 1 ends
    h.clock.now += 6
    h.tick()
    assert h.facts.gathered == [{OTHER_TP}], "the blamed partition alone is reconciled"
    assert set(replanned(h)) == {0, 1}


@pytest.mark.parametrize(
    ("why", "entry"),
    [
        ("a copy in flight, said stopped (a slot's defect)", {"outstanding": 1}),
        ("a send of unknown fate", {"uncertain": True}),
        (
            "an error of its own",
            {
                "error": {
                    "kind": "out_of_range",
                    "message": "gone",
                    "topic": "orders",
                    "partition": 0,
                    "offset": 10,
                    "class": None,
                }
            },
        ),  # fmt: skip
    ],
)
def test_a_partition_of_a_broken_unit_is_reconciled_after_anything_uncertain(
    flow: FlowConfig, why: str, entry: dict[str, object]
) -> None:
    h = Harness(flow)
    mine, blamed = two_running(h)
    h.report(
        part(mine, 10, 10, state="stopped") | entry,
        part(blamed, 5, 5, state="stopped", uncertain=True) | {"partition": 1},
        broken=TIMED_OUT,
    )
    h.facts.gathered.clear()
    h.clock.now += 40
    h.tick()
    assert h.facts.gathered and TP in h.facts.gathered[0], why
    assert h.service.status(FLOW)["exact_restarts"] == 0


def test_a_partition_a_broken_units_full_report_left_out_is_reconciled(flow: FlowConfig) -> None:
    h = Harness(flow)
    mine, blamed = two_running(h)
    h.report(part(mine, 10, 10))  # its last entry: sending
    h.report(
        part(blamed, 5, 5, state="stopped", uncertain=True) | {"partition": 1}, broken=TIMED_OUT
    )
    h.facts.gathered.clear()
    h.clock.now += 1.5
    h.tick()
    assert h.facts.gathered == [{TP}], "what it did since its last entry is not known"
    assert h.service.status(FLOW)["exact_restarts"] == 0


@pytest.mark.parametrize("gap", ["no lease for a pass", "held again later", "held again at once"])
def test_after_a_gap_in_the_flows_lease_a_broken_units_partitions_are_reconciled(
    flow: FlowConfig, gap: str
) -> None:
    """Another driver may have been given the flow's partitions meanwhile: the lease's
    holder says its lease is held only since the break or later."""
    h = Harness(flow)
    mine, blamed = two_running(h)
    broken_over_the_other(h, mine, blamed)
    if gap == "no lease for a pass":
        h.lease = 0
        h.clock.now += 1.5
        h.tick()
        h.lease = 5000
    elif gap == "held again later":
        h.clock.now += 1
    h.since = h.clock()  # (at once: the same instant the break was taken in)
    h.facts.gathered.clear()
    h.clock.now += 1.5
    h.tick()
    assert h.facts.gathered and TP in h.facts.gathered[0], gap
    assert h.service.status(FLOW)["exact_restarts"] == 0


def test_a_lease_held_anew_between_the_decision_and_the_restart_is_a_gap(
    flow: FlowConfig,
) -> None:
    """The lease is asked again when the restarts are made: a run that began after the
    break (the lease lapsed and came back while the pass decided) reconciles them."""
    h = Harness(flow)
    mine, blamed = two_running(h)
    broken_over_the_other(h, mine, blamed)
    answers = iter([0.0])  # the decision sees the run held since before the break
    h.since_of = lambda flow: next(answers, h.clock())  # type: ignore[method-assign]
    h.facts.gathered.clear()
    h.clock.now += 1.5
    h.tick()
    assert h.facts.gathered and TP in h.facts.gathered[0]
    assert h.service.status(FLOW)["exact_restarts"] == 0


def test_a_unit_that_breaks_during_a_long_pass_restarts_before_the_pass_ends(
    flow: FlowConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass reconciling new partitions chunk by chunk (minutes at 30,000 on a loaded
    cluster) restarts the idle partitions of a unit that broke meanwhile between its
    chunks, not after its last one."""
    monkeypatch.setattr(planner, "PLAN_BATCH", 1)  # two new partitions: a pass of two chunks
    h = Harness(flow)
    mine, blamed = two_running(h)
    new = {("orders", 2): REMOTE, ("orders", 3): REMOTE}
    h.service.set_owned(FLOW, {TP: REMOTE, OTHER_TP: REMOTE, **new})
    gather, chunks = h.facts.gather, []

    def breaking(routes: Mapping[tuple[str, int], str]) -> object:
        chunks.append((set(routes), h.service.status(FLOW)["exact_restarts"]))
        if len(chunks) == 1:  # while the first chunk's facts are read
            broken_over_the_other(h, mine, blamed)
            h.clock.now += 1.5  # the innocent's settle
        return gather(routes)

    h.facts.gather = breaking  # type: ignore[method-assign]
    h.service.work(FLOW)
    assert sorted(sorted(keys) for keys, _ in chunks) == [[("orders", 2)], [("orders", 3)]]
    assert chunks[1][1] == 1, "restarted before the second chunk was read"
    assert set(replanned(h)) >= {0, 2, 3}


def test_a_pass_over_the_flow_longer_than_the_lease_still_restarts_exactly(
    flow: FlowConfig,
) -> None:
    """The lease's holder renewed it all along: how long the planner was away from the
    flow says nothing about it (a pass over 15,000 new partitions can outlast a lease)."""
    h = Harness(flow)
    mine, blamed = two_running(h)
    broken_over_the_other(h, mine, blamed)
    h.facts.gathered.clear()
    h.clock.now += 60  # past the lease (5 s) and the blamed one's settling (6 s)
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 5)
    h.tick()
    assert h.facts.gathered == [{OTHER_TP}], "the blamed partition alone is reconciled"
    assert h.service.status(FLOW)["exact_restarts"] == 1


def test_a_partition_into_a_shared_remote_partition_is_reconciled_after_its_unit_broke(
    flow: FlowConfig,
) -> None:
    h = Harness(flow, shared=True)
    mine, blamed = two_running(h)
    broken_over_the_other(h, mine, blamed)
    h.facts.gathered.clear()
    h.clock.now += 1.5
    h.tick()
    assert h.facts.gathered == [{TP}], "other writers' records may follow ours there"
    assert h.service.status(FLOW)["exact_restarts"] == 0


_TOO_LARGE = ("org.apache.kafka.common.errors.RecordTooLargeException", "too large")
_NOT_PASSED = (
    "BatchNotPassedThrough",
    "the source message at offset 7 has the old format (magic 1); set srm.copy.batches ="
    " false for this flow to copy it record by record, then resume the partition",
)


@pytest.mark.parametrize("refusal", [_TOO_LARGE, _NOT_PASSED], ids=["record", "batch"])
def test_a_poison_record_halts_its_partition_after_its_tries(
    flow: FlowConfig, refusal: tuple[str, str]
) -> None:
    h = Harness(flow)
    for attempt in (1, 2):
        plan = started(h)["plan"] if attempt == 1 else h.plan()["plan"]  # type: ignore[index]
        poison = {
            "kind": "poison",
            "message": refusal[1],
            "topic": TP[0],
            "partition": TP[1],
            "offset": 7,
            "class": refusal[0],
        }
        h.report(part(plan, 7, 7, state="stopped"), broken=poison, epoch=attempt - 1)
        h.clock.now += 60
        h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 7)
        h.tick()
    status = h.service.status(FLOW)
    assert [p["partition"] for p in status["halted"]] == [0]
    reason = status["halted"][0]["reason"]
    if refusal is _TOO_LARGE:
        assert "source offset 7 could not be written after 2 tries" in reason
        assert "RecordTooLargeException" in reason and "--offset 8" in reason
    else:  # the batch's own way out, and no record copy's advice after it
        assert reason.endswith(f"stopped 2 times: {refusal[1]}"), reason
        assert "Fix the target" not in reason and "skip the record" not in reason
    assert [e.kind for e in h.events] == ["halted"] and h.events[0].detail == "poison"
    assert TP not in h.service.held(FLOW)


def test_a_resume_applies_the_operator_choice_once(flow: FlowConfig) -> None:
    h = Harness(flow)
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 5)  # records but no progress
    h.service.set_owned(FLOW, {TP: REMOTE})
    h.tick()
    assert h.service.status(FLOW)["halted"][0]["kind"] == "conflict"
    assert h.service.request_resume(
        FLOW, TP, ResumeRequest("r1", ResumePoint(ResumeMode.SOURCE_START))
    )
    h.tick()
    plan = h.plan()
    assert plan is not None and (plan["start"], plan["down"]) == (0, 5)
    assert h.journal.progress()[-1][1].resume_id == "r1"
    assert not h.service.request_resume(
        FLOW, TP, ResumeRequest("r1", ResumePoint(ResumeMode.SOURCE_START))
    )


def test_a_released_partition_records_where_it_stopped_with_nothing_in_flight(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    h.service.set_owned(FLOW, {})
    assert h.plan() is None, "the slot is told to stop it"
    assert TP in h.service.held(FLOW), "held until the slot says it stopped"
    h.report(part(plan, 30, 30, state="stopped"))
    assert h.journal.progress()[-1] == (TP, Progress(30, 30, None, "S1", "T1"))
    assert TP not in h.service.held(FLOW)


@pytest.mark.parametrize("how", ["released", "driver-stops"])
def test_a_partition_that_stopped_with_a_send_of_unknown_fate_records_nothing_final(
    flow: FlowConfig, how: str
) -> None:
    """Its unit broke with a batch in flight whose answer never came, then the partition
    was released (or the driver stopped) before a new plan: that batch may have landed,
    one record past the acknowledged position. A final progress (nothing reserved) would
    make the next holder halt it as another writer's; the recorded reservation is kept
    instead, and the next holder verifies past the position."""
    h = Harness(flow)
    plan = started(h)["plan"]
    h.clock.now += 2
    h.report(part(plan, 30, 30))  # progress at 30, reserving past it
    reserved = h.journal.progress()[-1][1]
    assert reserved.inflight_end is not None and reserved.next_upstream == 30
    if how == "released":
        h.service.set_owned(FLOW, {})
    else:
        h.service.stop(1)
    h.report(part(plan, 30, 30, state="stopped", uncertain=True))
    assert h.journal.progress()[-1] == (TP, reserved), "nothing final recorded"
    if how == "released":
        assert TP not in h.service.held(FLOW), "released: the next holder verifies"


def test_without_a_lease_nothing_is_written_or_planned(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    h.lease = 0
    h.clock.now += 2
    _status, answer = h.report(part(plan, 40, 40))
    assert answer["lease_ms"] == 0
    assert len(h.journal.progress()) == 1, "no progress without a lease"


def test_a_recreated_topic_stops_its_running_partition_and_then_halts_it(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    h.facts.facts = PartitionFacts("S2", 0, 10, "T1", 0)  # the source topic was recreated
    h.clock.now += 3
    h.tick()
    assert h.plan() is None, "the slot is told to stop it"
    h.report(part(plan, 0, 0, state="stopped"))
    h.clock.now += 2
    h.tick()
    (halt,) = h.service.status(FLOW)["halted"]
    assert (
        halt["kind"] == "recreated" and "source topic was deleted and recreated" in halt["reason"]
    )


def test_reports_of_an_old_job_are_told_it_is_over(flow: FlowConfig) -> None:
    h = Harness(flow)
    started(h)
    status, answer = h.service.on_report("job-0", 0, {"job": "job-0"})
    assert status == 410 and "over" in answer["error"]


class FailingStore(FakeStore):
    fail = False

    def write(self, updates: Iterable[tuple[tuple[str, int], Progress]]) -> None:
        if self.fail:
            from srm_driver.kafka_admin import KafkaAdminError

            raise KafkaAdminError("could not write to mm2-offsets.primary.internal: timed out")
        super().write(updates)


def failing_after_start(flow: FlowConfig) -> tuple[Harness, int, FailingStore]:
    """A partition copying, its flow's progress writes failing from now on, the commit
    interval past: the harness, the plan id and the store."""
    h = Harness(flow)
    plan = started(h)["plan"]
    store = FailingStore(h.journal, {})
    h.service._adapters.get("primary->backup").store = store  # type: ignore[misc]
    store.fail = True
    h.clock.now += 2
    return h, plan, store


def test_a_report_that_cannot_be_recorded_is_not_taken_in_and_comes_again_whole(
    flow: FlowConfig,
) -> None:
    h, plan, store = failing_after_start(flow)
    status, answer = h.report(part(plan, 40, 40, syncs=[[39, 39]], records=40))
    assert status == 200 and answer["refused"] == [FLOW], "the slot keeps this flow's part"
    assert h.service.status(FLOW)["records"] == 0, "counters wait for the report to be recorded"
    assert "cannot record progress" in h.service.status(FLOW)["errors"][0]
    store.fail = False
    status, answer = h.report(part(plan, 40, 40, syncs=[[39, 39]], records=40))
    assert status == 200 and h.service.status(FLOW)["records"] == 40
    assert answer["refused"] == [] and not h.service.status(FLOW)["errors"]
    assert answer["units"][FLOW]["partitions"][0]["reserve"] == 140
    kinds = [kind for kind, _ in h.journal.entries[1:]]
    assert kinds == ["sync", "sync", "progress"], "the syncs were written again, then progress"


def test_a_write_that_keeps_failing_is_logged_once_per_flow_with_a_count_not_per_report(
    flow: FlowConfig, caplog: pytest.LogCaptureFixture
) -> None:
    """A slot sends a refused part again every report (and, ending, every 200 ms): the
    same failure is one error line per REPEAT_S, the next says how many it left out, and
    the write that succeeds after them says so."""
    h, plan, store = failing_after_start(flow)
    again = part(plan, 40, 40, syncs=[[39, 39]], records=40)
    with caplog.at_level(logging.INFO, logger="srm_driver.copying"):
        for _ in range(20):
            h.clock.now += 0.2
            assert h.report(again)[1]["refused"] == [FLOW]
        h.clock.now += write_failures.REPEAT_S
        for _ in range(2):
            assert h.report(again)[1]["refused"] == [FLOW]
        store.fail = False
        assert h.report(again)[1]["refused"] == []
    said = [r.getMessage() for r in caplog.records if "progress of" in r.getMessage()]
    assert len(said) == 3, said
    assert said[0].startswith("copy slot 0: cannot record progress of primary->backup: could")
    assert said[1].endswith("timed out (and 19 more failed writes since the last line)")
    assert said[2] == "progress of primary->backup recorded again (1 more failed writes not logged)"


def test_at_a_stop_a_final_report_refused_is_recorded_when_it_comes_again(
    flow: FlowConfig,
) -> None:
    """The driver's half of a clean stop whose progress write fails once: nothing of the
    refused part is taken in, and the same part sent again (the slot's half:
    test_copier_slot.py, ``FINAL_REPORT_S``) records the final progress."""
    h = Harness(flow)
    plan = started(h)["plan"]
    store = FailingStore(h.journal, {})
    h.service._adapters.get("primary->backup").store = store  # type: ignore[misc]
    h.service.stop(1)
    store.fail = True
    _status, answer = h.report(part(plan, 30, 30, state="stopped", syncs=[[29, 29]]))
    assert answer["stop"] and answer["refused"] == [FLOW]
    assert h.journal.progress()[-1][1].inflight_end is not None, "nothing final recorded yet"
    store.fail = False
    _status, answer = h.report(part(plan, 30, 30, state="stopped", syncs=[[29, 29]]))
    assert answer["refused"] == []
    assert h.journal.progress()[-1] == (TP, Progress(30, 30, None, "S1", "T1"))


def test_at_a_stop_a_final_report_whose_write_is_slow_is_recorded_when_sent_after_it(
    flow: FlowConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The final progress write takes longer than an answer waits: that report is
    refused, so is the next one while the write still runs (two writes of a flow never
    overlap); once it ended, the part sent again records the final progress."""
    monkeypatch.setattr(reports, "WRITE_BUDGET_S", 0.1)
    h = Harness(flow, store=lambda journal, _facts: BlockingStore(journal))
    plan = started(h)["plan"]
    store = h.service._adapters.get(FLOW).store
    assert isinstance(store, BlockingStore)
    h.service.stop(1)
    store.armed = True
    final = part(plan, 30, 30, state="stopped", syncs=[[29, 29]])
    try:
        _status, answer = h.report(final)
        assert answer["stop"] and answer["refused"] == [FLOW]
        assert "takes longer than 0.1 s" in h.service.status(FLOW)["errors"][0]
        _status, answer = h.report(final)
        assert answer["refused"] == [FLOW]
        assert "has not ended" in h.service.status(FLOW)["errors"][0]
        assert h.journal.progress()[-1][1].inflight_end is not None, "nothing final yet"
    finally:
        store.armed = False
        store.release.set()
    h.service._desk._writing[FLOW].result(10)  # the slow write ended
    _status, answer = h.report(final)
    assert answer["refused"] == []
    assert h.journal.progress()[-1] == (TP, Progress(30, 30, None, "S1", "T1"))


def test_a_plan_a_broken_unit_never_applied_is_reconciled_not_stuck(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    broken = {"kind": "transient", "message": "x", "topic": None, "partition": None,
              "offset": -1, "class": None}  # fmt: skip
    h.report(broken=broken)  # the unit broke before it applied the plan: no partition listed
    h.clock.now += 2
    h.tick()
    replanned = h.plan()
    assert replanned is not None and replanned["plan"] > plan


def test_a_stopped_partition_reported_again_counts_its_poison_try_once(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    error = {"kind": "poison", "message": "malformed srm.origin", "topic": TP[0],
             "partition": TP[1], "offset": 3, "class": "MalformedOriginException"}  # fmt: skip
    for _ in range(3):
        h.report(part(plan, 3, 3, state="stopped", error=error))
    assert not h.service.status(FLOW)["halted"], "one failure, one try (max 2)"
    assert "try 1 of 2" in h.service.status(FLOW)["errors"][0]


def test_an_old_report_is_refused(flow: FlowConfig) -> None:
    h = Harness(flow)
    started(h)
    body = {"job": "job-1", "slot": 0, "seq": 1, "exiting": False, "units": []}
    status, answer = h.service.on_report("job-1", 0, body)
    assert status == 409 and "older" in answer["error"]


def run_report(
    h: Harness,
    run: dict[str, object],
    seq: int,
    *partitions: dict[str, object],
    slot: int = 0,
    broken: dict[str, object] | None = None,
) -> tuple[int, dict]:  # type: ignore[type-arg]
    """A report of one run of ``slot`` (Spark's task attempt ``run["attempt"]``)."""
    body = {"job": "job-1", "slot": slot, "seq": seq, "answered": -1, "exiting": False,
            "units": [unit(FLOW, *partitions, broken=broken)], "run": run}  # fmt: skip
    return h.service.on_report("job-1", slot, body)


OLD_RUN = {"id": "a1", "attempt": 0, "executor": "executor 0 (host-a)"}
NEW_RUN = {"id": "b2", "attempt": 1, "executor": "executor 2 (host-b)"}


def started_on(h: Harness, run: dict[str, object]) -> tuple[int, int]:
    """The partition planned on slot 0 while ``run`` runs it: (plan, last seq used)."""
    h.service.set_owned(FLOW, {TP: REMOTE})
    run_report(h, run, 0)
    h.service.tick()
    h.service.work(FLOW)
    _status, answer = run_report(h, run, 1)
    (plan,) = answer["units"][FLOW]["partitions"]
    return plan["plan"], 1


def test_a_slot_run_again_by_spark_is_taken_over_after_the_old_runs_lease_and_writes(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan, seq = started_on(h, OLD_RUN)
    h.clock.now += 2  # past the commit interval: progress at 40
    run_report(h, OLD_RUN, seq + 1, part(plan, 40, 40))  # the old run's last lease: 5 s
    # The old run landed 5 more before it was lost, unreported: the target ends at 45.
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 45)
    h.facts.surplus = Surplus(5, 45)
    granted = h.clock.now + h.lease / 1000
    h.clock.now += 1
    status, answer = run_report(h, NEW_RUN, 0)  # its counter starts again
    assert status == 200, "a new run is not refused as an old report"
    assert answer["units"][FLOW]["partitions"] == [], "nothing for it before the wait-out"
    status, answer = run_report(h, OLD_RUN, seq + 2, part(plan, 50, 50))
    assert status == 410 and "runs again" in answer["error"], "the old run is told to end"
    (rerun,) = h.service.status(FLOW)["slot_reruns"]
    assert (rerun["slot"], rerun["attempt"], rerun["previous_attempt"]) == (0, 1, 0)
    assert rerun["executor"] == "executor 2 (host-b)" and rerun["partitions"] == 1
    # Nothing is reconciled while the old run may still write: until its lease ended and
    # a record handed over then has landed (write timeout 10 s + 2 s, and 2 %).
    wait_out = granted + 0.02 * (granted - (h.clock.now - 1e-9)) + 12
    seqs = iter(range(1, 1000))
    while h.clock.now + 1 < wait_out:
        h.clock.now += 1
        run_report(h, NEW_RUN, next(seqs))
        h.service.tick()
        h.service.work(FLOW)
        assert not run_report(h, NEW_RUN, next(seqs))[1]["units"][FLOW]["partitions"]
        assert "runs again" in (h.service.status(FLOW)["errors"] or [""])[0]
    h.clock.now = wait_out + 0.1
    run_report(h, NEW_RUN, next(seqs))
    h.service.work(FLOW)
    _status, answer = run_report(h, NEW_RUN, next(seqs))
    (replanned,) = answer["units"][FLOW]["partitions"]
    assert replanned["plan"] > plan, "a new plan, reconciled from the last record"
    assert (replanned["start"], replanned["down"]) == (45, 45), "after the verified copies"
    assert h.journal.progress()[-1][1].inflight_end == replanned["reserve"]


def test_a_broken_units_partition_on_a_run_taken_over_is_reconciled_after_the_wait_out(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan, seq = started_on(h, OLD_RUN)
    run_report(h, OLD_RUN, seq + 1, part(plan, 10, 10, state="stopped"), broken=TIMED_OUT)
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 10)  # where its copies end
    h.facts.gathered.clear()
    run_report(h, NEW_RUN, 0)  # Spark ran the slot again: the old run is fenced
    seqs = iter(range(1, 1000))
    for _ in range(30):  # past the wait-out (about 17 s)
        h.clock.now += 1
        run_report(h, NEW_RUN, next(seqs))
        h.service.tick()
        h.service.work(FLOW)
    (replanned,) = run_report(h, NEW_RUN, next(seqs))[1]["units"][FLOW]["partitions"]
    assert replanned["plan"] > plan
    assert h.facts.gathered == [{TP}], "what the old run did is read, not assumed"
    assert h.service.status(FLOW)["exact_restarts"] == 0


def test_only_a_higher_attempt_takes_a_slot_over(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan, seq = started_on(h, NEW_RUN)
    older = {"id": "c3", "attempt": 0, "executor": "executor 1 (host-c)"}
    twin = {"id": "d4", "attempt": 1, "executor": "executor 3 (host-d)"}
    for run in (older, twin):
        status, answer = run_report(h, run, 0)
        assert status == 410, run
    status, answer = run_report(h, NEW_RUN, seq + 1, part(plan, 10, 10))
    assert status == 200 and answer["units"][FLOW]["partitions"][0]["plan"] == plan
    assert h.service.status(FLOW)["slot_reruns"] == []


def test_a_partition_released_from_a_slot_taken_over_is_held_until_the_wait_out(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    _plan, _seq = started_on(h, OLD_RUN)
    h.service.set_owned(FLOW, {})  # the task source took it away: it is being released
    run_report(h, NEW_RUN, 0)
    h.service.work(FLOW)
    assert TP in h.service.held(FLOW), "the old run may still write it: not let go yet"
    h.clock.now += 18
    run_report(h, NEW_RUN, 1)
    h.service.work(FLOW)
    assert TP not in h.service.held(FLOW), "let go after the wait-out; the next verifies"


def test_a_release_without_a_lease_leaves_nothing_behind(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    h.service.set_owned(FLOW, {})
    h.lease = 0
    h.report(part(plan, 30, 30, state="stopped"))
    assert TP not in h.service.held(FLOW), "released; the next holder verifies from the record"


def test_a_plan_withdrawn_before_the_unit_applied_it_is_not_waited_for(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    started(h)
    h.service.set_owned(FLOW, {})
    _status, answer = h.report()
    withdrawn = answer["version"]
    assert answer["units"][FLOW]["partitions"] == [], "the slot is told to stop it"
    h.report(applied=withdrawn - 1)
    assert TP in h.service.held(FLOW), "an answer that still had the plan may be applied yet"
    h.report(applied=withdrawn)
    assert TP not in h.service.held(FLOW), "the unit applied the answer without it: it never ran"


def test_a_running_plan_missing_from_a_report_is_not_taken_for_stopped(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    _status, answer = h.report(applied=10**6)
    assert answer["units"][FLOW]["partitions"][0]["plan"] == plan, "still handed out"


def test_progress_of_a_copying_partition_is_recorded_every_commit_interval(
    tmp_path: Path,
) -> None:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG.replace("srm.poison.max.tries: 2", "srm.commit.interval.ms: 5000"))
    h = Harness(load_config(path).flow("primary", "backup"))
    plan = started(h)["plan"]
    h.clock.now += 2  # past the default second, not past srm.commit.interval.ms
    h.report(part(plan, 10, 10, records=10))
    assert len(h.journal.progress()) == 1, "only the reservation"
    h.clock.now += 3
    h.report(part(plan, 20, 20, records=20))
    assert h.journal.progress()[-1] == (TP, Progress(20, 20, 120, "S1", "T1"))


def test_after_a_clean_stop_nothing_is_held_so_the_goodbye_needs_no_wait_out(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    started(h)
    assert TP in h.service.held(FLOW)
    h.service.stop(1)
    assert h.service.held(FLOW) == frozenset()


def test_a_job_that_ended_in_error_keeps_its_partitions_held_at_stop(flow: FlowConfig) -> None:
    h = Harness(flow)
    started(h)
    h.job.error = "the executor was lost"
    h.service.stop(1)
    assert TP in h.service.held(FLOW), "a slot cut off may still have sends in flight"


# -- leases per flow ------------------------------------------------------------------


def both_started(h: Harness) -> dict[str, int]:
    """FLOW and OTHER copy TP in slot 0; their plan ids."""
    h.service.set_owned(FLOW, {TP: REMOTE})
    h.service.set_owned(OTHER, {TP: REMOTE})
    h.tick()
    _status, answer = h.report()
    plans = {name: u["partitions"][0]["plan"] for name, u in answer["units"].items()}
    assert set(plans) == {FLOW, OTHER}
    return plans


def test_a_flow_without_a_lease_is_not_planned_while_the_others_are(
    flow: FlowConfig, other: FlowConfig
) -> None:
    h = Harness(flow, others=[other])
    h.leases[OTHER] = 0
    h.service.set_owned(FLOW, {TP: REMOTE})
    h.service.set_owned(OTHER, {TP: REMOTE})
    h.tick()
    assert h.plan() is not None, "the flow with a lease is planned"
    assert h.journals[OTHER].entries == [], "no claim without the flow's lease"
    assert h.service.status(OTHER)["by_status"] == {"pending": 1}
    assert "no lease for this flow" in h.service.status(OTHER)["errors"][0]
    h.leases.clear()
    h.tick()
    _status, answer = h.report()
    assert answer["units"][OTHER]["partitions"], "planned once its lease is back"
    assert not h.service.status(OTHER)["errors"]


def test_a_report_is_taken_in_for_flows_with_a_lease_and_kept_for_the_others(
    flow: FlowConfig, other: FlowConfig
) -> None:
    h = Harness(flow, others=[other])
    plans = both_started(h)
    h.leases[OTHER] = 0
    h.clock.now += 2  # past the commit interval
    status, answer = h.report_units(
        unit(FLOW, part(plans[FLOW], 40, 40, syncs=[[39, 39]], records=40)),
        unit(OTHER, part(plans[OTHER], 30, 30, syncs=[[29, 29]], records=30)),
    )
    assert status == 200 and answer["refused"] == [OTHER], "the slot keeps OTHER's part"
    assert h.journals[FLOW].progress()[-1] == (TP, Progress(40, 40, 140, "S1", "T1"))
    assert [kind for kind, _ in h.journals[OTHER].entries] == ["progress"], "its claim only"
    assert (h.service.status(FLOW)["records"], h.service.status(OTHER)["records"]) == (40, 0)
    assert "no lease" in h.service.status(OTHER)["errors"][0]
    units = answer["units"]
    assert (units[FLOW]["lease_ms"], units[OTHER]["lease_ms"], answer["lease_ms"]) == (
        5000,
        0,
        5000,
    )
    assert units[OTHER]["partitions"][0]["plan"] == plans[OTHER], "nothing of it was acted on"
    h.leases.clear()
    status, answer = h.report_units(  # the slot sends OTHER's part again, with its syncs
        unit(FLOW, part(plans[FLOW], 40, 40, records=40)),
        unit(OTHER, part(plans[OTHER], 30, 30, syncs=[[29, 29]], records=30)),
    )
    assert status == 200 and answer["refused"] == []
    assert [kind for kind, _ in h.journals[OTHER].entries] == ["progress", "sync", "progress"]
    assert h.journals[OTHER].progress()[-1] == (TP, Progress(30, 30, 130, "S1", "T1"))
    assert h.service.status(OTHER)["records"] == 30 and not h.service.status(OTHER)["errors"]


def test_a_flow_without_a_lease_whose_part_needs_no_write_is_taken_in(
    flow: FlowConfig, other: FlowConfig
) -> None:
    h = Harness(flow, others=[other])
    plans = both_started(h)
    h.leases[OTHER] = 0
    lease = {"kind": "lease", "message": "the lease ran out", "topic": None, "partition": None,
             "offset": -1, "class": None}  # fmt: skip
    _status, answer = h.report_units(
        unit(FLOW, part(plans[FLOW], 0, 0)),
        unit(OTHER, part(plans[OTHER], 10, 10, state="stopped"), broken=lease),
    )
    assert answer["refused"] == []
    assert answer["units"][OTHER]["epoch"] == 1 and answer["units"][OTHER]["partitions"] == []
    assert answer["units"][FLOW]["partitions"][0]["plan"] == plans[FLOW], "FLOW copies on"
    h.clock.now += 2
    h.tick()
    assert h.service.status(OTHER)["by_status"] == {"pending": 1}
    assert "no lease for this flow" in h.service.status(OTHER)["errors"][0]


def test_each_unit_is_told_its_flows_lease_and_the_slot_the_longest(
    flow: FlowConfig, other: FlowConfig
) -> None:
    h = Harness(flow, others=[other])
    h.leases = {FLOW: 10 * LEASE_CAP_MS, OTHER: 2000}
    both_started(h)
    _status, answer = h.report()
    units = answer["units"]
    assert (units[FLOW]["lease_ms"], units[OTHER]["lease_ms"]) == (LEASE_CAP_MS, 2000), "capped"
    assert answer["lease_ms"] == LEASE_CAP_MS
    _status, answer = h.report(slot=1)
    assert answer["units"] == {} and answer["lease_ms"] == LEASE_CAP_MS, "no unit: the cap"


def test_slots_on_a_cluster_get_short_leases_so_a_lost_ones_partitions_wait_less(
    flow: FlowConfig, other: FlowConfig
) -> None:
    h = Harness(flow, others=[other], local=False)
    h.leases = {FLOW: 10 * LEASE_CAP_MS, OTHER: 2000}
    both_started(h)
    _status, answer = h.report()
    units = answer["units"]
    assert (units[FLOW]["lease_ms"], units[OTHER]["lease_ms"]) == (CLUSTER_SLOT_LEASE_MS, 2000)
    assert answer["lease_ms"] == CLUSTER_SLOT_LEASE_MS < LEASE_CAP_MS


class HangingStore(FakeStore):
    """A store on a cluster that does not answer until ``release`` is set."""

    def __init__(self, journal: Journal) -> None:
        super().__init__(journal, {})
        self.release = threading.Event()
        self.calls = 0

    def write(self, updates: Iterable[tuple[tuple[str, int], Progress]]) -> None:
        self.calls += 1
        self.release.wait(30)
        super().write(updates)


def test_a_flow_whose_cluster_hangs_does_not_hold_up_the_answer_for_the_others(
    flow: FlowConfig, other: FlowConfig
) -> None:
    """OTHER's progress store does not answer: the answer comes within the write budget,
    FLOW's part is recorded and taken in, OTHER's is refused until its one write ends."""
    h = Harness(flow, others=[other])
    plans = both_started(h)
    hanging = HangingStore(h.journals[OTHER])
    h.service._adapters.get(OTHER).store = hanging  # type: ignore[misc]
    h.clock.now += 2
    parts = (
        unit(FLOW, part(plans[FLOW], 40, 40, records=40)),
        unit(OTHER, part(plans[OTHER], 30, 30, records=30)),
    )
    try:
        # Answered while OTHER's write still hangs (it is released only at the end).
        status, answer = h.report_units(*parts)
        assert status == 200 and answer["refused"] == [OTHER] and hanging.calls == 1
        assert h.service.status(FLOW)["records"] == 40
        assert answer["units"][FLOW]["lease_ms"] > 0
        h.clock.now += 2
        status, answer = h.report_units(*parts)
        assert answer["refused"] == [OTHER] and hanging.calls == 1, "one write of a flow at once"
        assert "has not ended" in h.service.status(OTHER)["errors"][0]
    finally:
        hanging.release.set()
    deadline = time.monotonic() + 10
    while True:  # once the hung write has ended, OTHER's part is recorded again
        h.clock.now += 2
        status, answer = h.report_units(*parts)
        if answer["refused"] == [] or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert answer["refused"] == [] and h.service.status(OTHER)["records"] == 30


def counted(h: Harness) -> int:
    """Records of the flow's partition in the interval a raw sample drains."""
    return sum(m.counters.records for m in h.service.metrics(FLOW, 0))


def test_metrics_count_each_acknowledged_copy_once_across_plans_and_releases(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    h.report(part(plan, 10, 10, records=10))
    h.report(part(plan, 25, 25, records=25))
    h.report(part(plan, 25, 25, records=25))  # the same report again: nothing new
    assert counted(h) == 25
    # The plan stops; the next starts its counters at 0.
    h.report(part(plan, 30, 30, state="stopped", records=30))
    assert counted(h) == 5
    h.clock.now += 2
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 30)
    h.tick()
    second = h.plan()
    assert second is not None and second["plan"] > plan
    h.report(part(second["plan"], 32, 32, records=2))
    # A report of the old plan arriving late counts nothing.
    h.report(part(plan, 30, 30, state="stopped", records=30))
    # Released: its last report is counted though the partition is gone before a sample.
    h.service.set_owned(FLOW, {})
    h.report(part(second["plan"], 40, 40, state="stopped", records=10))
    assert TP not in h.service.held(FLOW)
    assert counted(h) == 10
    assert h.service.metrics(FLOW, 0) == []
    # Planned here again (the fakes show an empty remote partition): from 0 again.
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 0)
    plan3 = started(h)["plan"]
    h.report(part(plan3, 41, 41, records=1))
    assert counted(h) == 1


class CountingLock:
    """The ledger's lock, counting how often it is taken."""

    def __init__(self, lock: object) -> None:
        self.lock = lock
        self.taken = 0

    def __enter__(self) -> None:
        self.taken += 1
        self.lock.__enter__()  # type: ignore[attr-defined]

    def __exit__(self, *exc: object) -> None:
        self.lock.__exit__(*exc)  # type: ignore[attr-defined]


def test_a_raw_sample_of_thousands_of_partitions_lets_the_ledgers_lock_go_between_slices(
    flow: FlowConfig,
) -> None:
    """At 30,000 partitions one drain held the lock for seconds and a slot asking for its
    leases alone waited behind it until they ran out: the drain goes by slices."""
    h = Harness(flow)
    h.service.set_owned(FLOW, {("orders", p): REMOTE for p in range(2500)})
    lock = h.service._ledger.lock = CountingLock(h.service._ledger.lock)  # type: ignore[assignment]
    drained = h.service.metrics(FLOW, 0)
    assert sorted(m.partition for m in drained) == list(range(2500)), "each partition once"
    assert lock.taken == 1 + 3, "the partitions listed, then three slices of at most 1,000"


def test_a_thousand_new_partitions_are_claimed_in_one_write_and_planned_on_both_slots(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    h.report(slot=1)  # both slots answer
    owned = {("orders", p): REMOTE for p in range(1000)}
    h.service.set_owned(FLOW, owned)
    h.tick()
    progress_writes = [e for kind, e in h.journal.entries if kind == "progress"]
    assert len(progress_writes) == 1000
    assert h.journal.writes == 1, "one progress write for the batch, not one per partition"
    per_slot = [len(h.report(slot=slot)[1]["units"][FLOW]["partitions"]) for slot in (0, 1)]
    assert per_slot == [500, 500]


def test_a_partition_whose_offsets_cannot_be_read_waits_alone(flow: FlowConfig) -> None:
    h = Harness(flow)
    h.facts.unreadable[("orders", 7)] = "Broker: Not leader for partition"
    h.service.set_owned(FLOW, {("orders", p): REMOTE for p in range(10)})
    h.tick()
    planned = {p["partition"] for p in h.report()[1]["units"][FLOW]["partitions"]}
    assert planned == set(range(10)) - {7}
    assert "Not leader" in " ".join(h.service.status(FLOW)["errors"])
    del h.facts.unreadable[("orders", 7)]
    h.clock.now += 2  # its retry is due
    h.tick()
    assert len(h.report()[1]["units"][FLOW]["partitions"]) == 10


def test_partitions_waiting_for_their_offsets_are_asked_only_that_in_one_round(
    flow: FlowConfig,
) -> None:
    """A cold start: the target has not loaded most remote partitions yet. Those wait
    together (one question a round for all of them, whenever each began to wait) and
    are reconciled, facts and all, only once theirs can be read."""
    h = Harness(flow)
    loads = 0
    load = h.service._adapters.get(FLOW).store.load

    def counted() -> dict[tuple[str, int], Progress]:
        nonlocal loads
        loads += 1
        return load()

    h.service._adapters.get(FLOW).store.load = counted  # type: ignore[method-assign]
    first = {("orders", p) for p in range(10)}
    h.facts.unreadable = {tp: "Broker: Not leader for partition" for tp in first if tp[1] >= 3}
    h.service.set_owned(FLOW, dict.fromkeys(first, REMOTE))
    h.tick()
    assert h.facts.gathered == [first] and h.facts.asked == []
    h.clock.now += 1
    later = {("orders", p) for p in range(10, 14)}  # owned a second later, waits too
    h.facts.unreadable |= dict.fromkeys(later, "Broker: Not leader for partition")
    h.service.set_owned(FLOW, dict.fromkeys(first | later, REMOTE))
    h.tick()
    assert h.facts.gathered == [first, later]
    h.clock.now += 1  # the flow's round: the 11 waiting ones are asked together
    h.tick()
    waiting = {tp for tp in first | later if tp[1] >= 3}
    assert h.facts.asked == [waiting]
    assert len(h.facts.gathered) == 2, "nothing reconciled while none can be read"
    assert "Not leader" in " ".join(h.service.status(FLOW)["errors"])
    loads_before = loads
    for _ in range(3):
        h.clock.now += 0.5  # before the next round: nothing asked
        h.tick()
    assert len(h.facts.asked) == 1 and loads == loads_before
    ready = {("orders", 3), ("orders", 12)}
    for tp in ready:
        del h.facts.unreadable[tp]
    h.clock.now += 0.5
    h.tick()
    assert h.facts.asked[1] == waiting
    assert h.facts.gathered[2:] == [ready], "only the partitions that can be read now"
    planned = {p["partition"] for p in h.report()[1]["units"][FLOW]["partitions"]}
    assert planned == {0, 1, 2, 3, 12}
    h.facts.unreadable.clear()
    h.clock.now += 2
    h.tick()
    assert h.facts.asked[2] == waiting - ready and h.facts.gathered[3] == waiting - ready
    planned = {p["partition"] for p in h.report()[1]["units"][FLOW]["partitions"]}
    assert planned == {p for _, p in first | later}


def test_a_new_partition_whose_remote_topic_a_broker_does_not_know_yet_waits_not_halts(
    flow: FlowConfig,
) -> None:
    """At 30,000 partitions one broker of two applied the remote topics' creation minutes
    after the other had listed them: a partition nothing was recorded of, whose remote
    topic the broker answering does not know, waits as an unreadable one does, and is
    planned once its topic is known."""
    h = Harness(flow)
    h.facts.facts = PartitionFacts("S1", 0, 1000, None, 0)
    h.service.set_owned(FLOW, {TP: REMOTE})
    h.tick()
    assert h.service.status(FLOW)["halted"] == [], "not taken for a deleted topic"
    assert "is not known yet to the broker that answered" in " ".join(
        h.service.status(FLOW)["errors"]
    )
    assert h.plan() is None and h.journal.progress() == [], "nothing claimed meanwhile"
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 0)
    h.clock.now += 2  # the flow's next round
    h.tick()
    plan = h.plan()
    assert plan is not None and (plan["start"], plan["down"]) == (0, 0)


def test_a_partition_with_progress_whose_remote_topic_is_gone_halts(flow: FlowConfig) -> None:
    """With a position recorded in it, a remote topic that is gone was deleted: halted,
    saying so (the copies it held went with it)."""
    h = Harness(flow, loaded={TP: Progress(40, 40, 140, "S1", "T1")})
    h.facts.facts = PartitionFacts("S1", 0, 1000, None, 0)
    h.service.set_owned(FLOW, {TP: REMOTE})
    h.tick()
    (halt,) = h.service.status(FLOW)["halted"]
    assert halt["kind"] == "missing" and "remote topic does not exist" in halt["reason"]


def test_a_partition_waiting_long_for_its_offsets_is_reconciled_again_whole(
    flow: FlowConfig,
) -> None:
    """What a partition waits for may change (its remote topic deleted meanwhile, a
    source partition gone): after AWAIT_FULL_S its facts are all read again."""
    h = Harness(flow)
    h.facts.unreadable = {TP: "Broker: Not leader for partition"}
    h.service.set_owned(FLOW, {TP: REMOTE})
    h.tick()
    for _ in range(14):
        h.clock.now += 2
        h.tick()
    assert len(h.facts.gathered) == 1 and len(h.facts.asked) == 14
    h.clock.now += 2  # 30 s after it began to wait
    h.tick()
    assert len(h.facts.gathered) == 2 and len(h.facts.asked) == 14
    h.clock.now += 2  # waits again, asked only that again
    h.tick()
    assert len(h.facts.gathered) == 2 and len(h.facts.asked) == 15


def test_a_flow_whose_cluster_hangs_does_not_hold_up_the_plans_of_the_others(
    flow: FlowConfig, other: FlowConfig
) -> None:
    """Each flow is planned on its own thread: OTHER's facts do not answer, FLOW's
    partitions are planned meanwhile."""
    h = Harness(flow, others=[other])
    release, entered = threading.Event(), threading.Event()

    class HangingFacts(FakeFacts):
        def gather(self, routes):  # type: ignore[no-untyped-def]
            entered.set()
            release.wait(10)
            return super().gather(routes)

    h.service._adapters.get(OTHER).facts = HangingFacts()  # type: ignore[misc]
    h.report()
    h.service.set_owned(OTHER, {TP: f"{OTHER.split('->')[0]}.orders"})
    h.service.set_owned(FLOW, {TP: REMOTE})
    hung = threading.Thread(target=h.service.work, args=(OTHER,), daemon=True)
    hung.start()
    try:
        assert entered.wait(5)
        h.service.work(FLOW)
        assert h.plan() is not None, "FLOW is planned while OTHER's cluster hangs"
    finally:
        release.set()
        hung.join(10)


class CopiedMeanwhileStore(FakeStore):
    """Loading the progress takes long enough (a pause, a slow broker) for another
    driver to copy on: the source grows and the recorded progress moves with it."""

    def __init__(self, journal: Journal, facts: FakeFacts) -> None:
        super().__init__(journal, {})
        self.facts = facts

    def load(self) -> dict[tuple[str, int], Progress]:
        self.facts.facts = PartitionFacts("S1", 0, 2000, "T1", 1500)
        return {TP: Progress(1500, 1500, 1600, "S1", "T1")}


def test_progress_recorded_while_the_facts_were_read_is_never_taken_for_a_truncation(
    flow: FlowConfig,
) -> None:
    """The progress is read before the source's end, so a source end read before a pause
    can never be compared with progress another driver recorded during it."""
    h = Harness(flow, store=CopiedMeanwhileStore)
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 1000)
    plan = started(h)
    assert not h.service.status(FLOW)["halted"]
    assert plan["start"] == 1500, plan


def test_a_halt_found_after_the_lease_ran_out_is_not_recorded(flow: FlowConfig) -> None:
    """A driver that lost its lease while deciding may be a woken zombie whose partition is
    another driver's now: it halts nothing, and decides again once it may write."""
    h = Harness(flow, loaded={TP: Progress(1500, 1500, 1600, "S1", "T1")})
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 1500)  # ends before 1500: truncated
    gather = h.facts.gather

    def gather_then_lose_the_lease(routes):  # type: ignore[no-untyped-def]
        found = gather(routes)
        h.lease = 0  # paused while reading: the lease ran out meanwhile
        return found

    h.facts.gather = gather_then_lose_the_lease  # type: ignore[method-assign]
    h.service.set_owned(FLOW, {TP: REMOTE})
    h.tick()
    assert not h.service.status(FLOW)["halted"]
    assert not [e for e in h.events if e.kind == "halted"]
    h.facts.gather = gather  # type: ignore[method-assign]
    h.lease = 5000
    h.clock.now += 60
    h.tick()
    (halt,) = h.service.status(FLOW)["halted"]
    assert halt["kind"] == "truncated"


# -- protocol 2: reports and answers carry what changed --------------------------------


def report2(
    h: Harness,
    *partitions: dict[str, object],
    full: bool = False,
    applied: int = -1,
    broken: dict[str, object] | None = None,
) -> tuple[int, dict]:  # type: ignore[type-arg]
    """A report of the JVM slot (protocol 2): only the partitions given."""
    Harness.seq += 1
    body = {
        "protocol": 2,
        "full": full,
        "job": "job-1",
        "slot": 0,
        "seq": Harness.seq,
        "answered": applied,
        "exiting": False,
        "units": [unit(FLOW, *partitions, broken=broken, applied=applied)],
    }
    return h.service.on_report("job-1", 0, body)


def running2(h: Harness) -> tuple[int, int]:
    """A partition handed out and reported once in full; its plan and the last version."""
    plan = started(h)["plan"]
    _status, answer = report2(h, part(plan, 0, 0), full=True)
    return plan, answer["version"]


def test_a_delta_answer_carries_only_what_changed_since_the_answer_the_slot_holds(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan, version = running2(h)
    _status, answer = report2(h, applied=version)
    assert answer["protocol"] == 2 and answer["base"] == version and not answer["full"]
    assert answer["units"][FLOW]["partitions"] == [] and answer["units"][FLOW]["removed"] == []
    assert "settings" not in answer["units"][FLOW], "the settings did not change"
    assert answer["units"][FLOW]["lease_ms"] == 5000, "every answer renews the lease"
    h.clock.now += 2  # past the commit interval: a new reservation
    _status, answer = report2(h, part(plan, 60, 60, records=60), applied=answer["version"])
    (changed,) = answer["units"][FLOW]["partitions"]
    assert (changed["plan"], changed["reserve"]) == (plan, 160)
    h.service.set_owned(FLOW, {})
    _status, answer = report2(h, applied=answer["version"])
    assert answer["units"][FLOW]["partitions"] == []
    assert answer["units"][FLOW]["removed"] == [[*TP]], "the slot is told to stop it"


def test_a_slot_that_missed_an_answer_gets_the_whole_state(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan, version = running2(h)
    report2(h, applied=version)  # this answer is lost: the slot still holds ``version``
    _status, answer = report2(h, applied=version)
    assert "base" not in answer, "not relative to an answer the slot does not hold"
    assert [p["plan"] for p in answer["units"][FLOW]["partitions"]] == [plan]
    assert "settings" in answer["units"][FLOW]


def test_a_slot_is_asked_for_a_full_report_until_one_is_taken(flow: FlowConfig) -> None:
    h = Harness(flow)
    started(h)
    _status, answer = report2(h)
    assert answer["full"] is True
    _status, answer = report2(h, full=True)
    assert answer["full"] is False


def test_a_partition_left_out_of_a_delta_is_still_running(flow: FlowConfig) -> None:
    h = Harness(flow)
    plan, version = running2(h)
    h.service.set_owned(FLOW, {})
    _status, answer = report2(h, applied=version)
    withdrawn = answer["version"]
    report2(h, applied=withdrawn)  # applied, and the partition unchanged: still stopping
    assert TP in h.service.held(FLOW), "it ran: the driver waits until it is seen stopped"
    report2(h, part(plan, 0, 0, state="stopped"), applied=withdrawn)
    assert TP not in h.service.held(FLOW)


def test_a_commit_due_with_time_alone_is_made_though_the_delta_leaves_it_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG.replace("srm.poison.max.tries: 2", "srm.commit.interval.ms: 5000"))
    h = Harness(load_config(path).flow("primary", "backup"))
    plan, version = running2(h)
    _status, answer = report2(h, part(plan, 10, 10, syncs=[[0, 0], [9, 9]]), applied=version)
    assert h.journal.progress()[-1] == (TP, Progress(0, 0, 100, "S1", "T1")), "not due yet"
    h.clock.now += 6
    _status, answer = report2(h, applied=answer["version"])  # nothing changed in the slot
    assert h.journal.progress()[-1] == (TP, Progress(10, 10, 110, "S1", "T1"))
    syncs = [kind for kind, _ in h.journal.entries].count("sync")
    assert syncs == 2, "the syncs of an entry taken in are not written again"


def test_a_broken_unit_does_not_take_a_partition_left_out_of_its_delta_for_stopped(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan, version = running2(h)
    broken = {"kind": "transient", "message": "x", "topic": None, "partition": None,
              "offset": -1, "class": None}  # fmt: skip
    report2(h, applied=version, broken=broken)  # its partition still sending, unchanged
    h.clock.now += 2
    h.tick()
    assert h.plan() is None, "a send of the broken unit may be pending: no reconcile yet"
    report2(h, part(plan, 0, 0, state="stopped"), broken=broken)
    h.clock.now += 2
    h.tick()
    assert h.plan() is not None, "seen stopped: reconciled and planned again"


def test_a_slot_of_an_unknown_protocol_is_refused_with_what_to_do(flow: FlowConfig) -> None:
    h = Harness(flow)
    body = {"protocol": 3, "job": "job-1", "slot": 0, "seq": 1, "exiting": False, "units": []}
    status, answer = h.service.on_report("job-1", 0, body)
    assert status == 400
    assert "protocol 3" in answer["error"] and "srm-copier.jar" in answer["error"]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("records", "5", "'5'"),
        ("acked_up", 1.5, "1.5"),
        ("latency_hist", [0, True], "True"),
        ("plan", None, "None"),
    ],
)
def test_a_report_with_a_field_of_the_wrong_kind_is_refused_naming_it(
    flow: FlowConfig, field: str, value: object, named: str
) -> None:
    h = Harness(flow)
    plan = started(h)["plan"]
    entry = part(plan, 3, 3) | {field: value}
    status, answer = h.report(entry)
    assert status == 400 and f"{named} is not a whole number" in answer["error"]
    assert h.service.status(FLOW)["records"] == 0, "nothing of it taken in"


def test_a_new_run_of_a_slot_gets_whole_answers_whatever_version_it_names(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    plan, version = running2(h)
    body = {"protocol": 2, "full": True, "job": "job-1", "slot": 0, "seq": 0, "run": NEW_RUN,
            "answered": version, "exiting": False, "units": [unit(FLOW)]}  # fmt: skip
    status, answer = h.service.on_report("job-1", 0, body)  # its seq and versions from 0
    assert status == 200 and "base" not in answer, "the old run's answer is no base for it"
    assert "settings" in answer["units"][FLOW]


def test_larger_records_and_a_longer_round_trip_resize_the_clients_in_the_next_answer(
    flow: FlowConfig,
) -> None:
    """The flow worker hands over the largest max.message.bytes of the source topics and
    the round trip to the source: the slot's next answer carries settings sized for them,
    once; the same again, a size the defaults already carry, a loopback round trip or
    jitter send nothing new."""
    h = Harness(flow)
    plan, version = running2(h)
    h.service.size_clients(FLOW, 1_048_588, 0.8)
    _status, answer = report2(h, part(plan, 0, 0), applied=version)
    assert "settings" not in answer["units"][FLOW], "the defaults carry a 1 MB batch"
    h.service.size_clients(FLOW, 20 * 1024 * 1024, 0.8)
    _status, answer = report2(h, part(plan, 0, 0), applied=answer["version"])
    sized = answer["units"][FLOW]["settings"]
    assert int(sized["producer"]["max.request.size"]) > 20 * 1024 * 1024
    assert int(sized["consumer"]["max.partition.fetch.bytes"]) > 20 * 1024 * 1024
    h.service.size_clients(FLOW, 20 * 1024 * 1024, 1.7)
    _status, answer = report2(h, part(plan, 0, 0), applied=answer["version"])
    assert "settings" not in answer["units"][FLOW], "a loopback round trip changes nothing"
    h.service.size_clients(FLOW, 20 * 1024 * 1024, 150.0)
    _status, answer = report2(h, part(plan, 0, 0), applied=answer["version"])
    across = answer["units"][FLOW]["settings"]["consumer"]
    assert int(across["fetch.max.bytes"]) == 256 * 1024 * 1024 * 256 // 1000, "256 MiB/s, 256 ms"
    assert across["max.partition.fetch.bytes"] == sized["consumer"]["max.partition.fetch.bytes"]
    h.service.size_clients(FLOW, 20 * 1024 * 1024, 170.0)
    _status, answer = report2(h, part(plan, 0, 0), applied=answer["version"])
    assert "settings" not in answer["units"][FLOW], "jitter within a power of two: no change"


def test_a_plan_carries_the_codec_of_its_source_topic(flow: FlowConfig) -> None:
    """On the record copy, whose producers compress with their source's codec."""
    h = Harness(dataclasses.replace(flow, copy_batches=False))
    h.facts.codec = "lz4"
    assert started(h)["codec"] == "lz4"


def test_a_running_plan_gets_its_codec_once_the_source_has_one(flow: FlowConfig) -> None:
    h = Harness(dataclasses.replace(flow, copy_batches=False))
    plan = started(h)
    assert "codec" not in plan, "an empty source topic has no codec yet"
    h.facts.codec = "zstd"
    h.clock.now += 6  # past the next look at unknown codecs
    h.tick()
    later = h.plan()
    assert later is not None and (later["plan"], later["codec"]) == (plan["plan"], "zstd")
    assert later["start"] == plan["start"], "the same plan, only compressed otherwise"


def test_a_flow_copying_batches_asks_no_codec_and_its_plans_carry_none(flow: FlowConfig) -> None:
    """Whole batches keep their own codec: the source is never asked (a look per topic,
    every 5 s while unknown), and a plan never changes for one."""
    h = Harness(flow)  # batches: the default
    asked: list[object] = []
    h.facts.codecs = lambda partitions: asked.append(partitions) or {}  # type: ignore[method-assign]
    plan = started(h)
    h.clock.now += 700  # past the looks at unknown codecs and the refresh of every codec
    h.tick()
    later = h.plan()
    assert "codec" not in plan and later is not None and "codec" not in later
    assert asked == []


# -- elastic slots (copying/slots.py): a start-up grace, slots added while copying get
# partitions through the restart's hand-over, a lost slot's partitions move to the others
# after its lease and writes ran out, and a pause of the driver itself loses no slot.

ELASTIC_PARTITIONS = 4


def entry(plan: int, partition: int, acked: int = 0, state: str = "sending") -> dict[str, object]:
    return {**part(plan, acked, acked, state=state), "partition": partition}


def plans(h: Harness, slot: int, *entries: dict[str, object]) -> dict[int, int]:
    """Report ``entries`` as ``slot``; the plans of its (whole) answer: partition -> plan."""
    status, answer = h.report(*entries, slot=slot)
    assert status == 200, answer
    unit = answer["units"].get(FLOW)
    return {} if unit is None else {p["partition"]: p["plan"] for p in unit["partitions"]}


def both_running(h: Harness) -> tuple[dict[int, int], dict[int, int]]:
    """Slots 0 and 1 answer, 4 partitions are planned over them; their plans."""
    h.report(slot=0)
    h.report(slot=1)
    h.service.set_owned(FLOW, {("orders", p): REMOTE for p in range(ELASTIC_PARTITIONS)})
    h.service.tick()
    h.service.work(FLOW)
    return plans(h, 0), plans(h, 1)


def test_partitions_are_spread_over_the_slots_that_report_within_the_grace(
    flow: FlowConfig,
) -> None:
    h = Harness(flow, grace_s=5.0)
    h.service.set_owned(FLOW, {("orders", p): REMOTE for p in range(ELASTIC_PARTITIONS)})
    h.tick()  # slot 0 reports first
    first = set(plans(h, 0))
    assert len(first) == 2, "slot 1's partitions wait for it"
    h.clock.now += 3
    h.report(slot=1)
    h.tick()
    assert set(plans(h, 1)) == set(range(ELASTIC_PARTITIONS)) - first
    assert set(plans(h, 0)) == first


def test_after_the_grace_partitions_go_to_the_slots_that_answer(flow: FlowConfig) -> None:
    h = Harness(flow, grace_s=5.0)
    h.service.set_owned(FLOW, {("orders", p): REMOTE for p in range(ELASTIC_PARTITIONS)})
    h.tick()
    h.clock.now += 4
    h.tick()
    assert len(plans(h, 0)) == 2
    h.clock.now += 2  # slot 1 never came (Spark has one core)
    h.tick()
    assert set(plans(h, 0)) == {0, 1, 2, 3}


def test_a_slot_added_while_copying_gets_partitions_and_the_others_run_on(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    zero, one = both_running(h)
    assert (len(zero), len(one)) == (2, 2)
    h.job.more = [2]  # an executor was added: Spark can run one more task
    h.clock.now += 2  # the driver asks Spark every 2 s
    h.service.tick()
    assert h.service.status(FLOW)["slot_events"][-1]["slots"] == [2]
    assert plans(h, 2) == {}, "a slot that has not reported yet is given nothing"
    h.clock.now += 1
    h.service.tick()  # it reported: re-balanced, one partition moves to it
    now_zero, now_one = plans(h, 0), plans(h, 1)
    (moved,) = set(zero) - set(now_zero)
    assert now_zero == {p: zero[p] for p in now_zero} and now_one == one, "the others run on"
    assert plans(h, 2) == {}, "not before its old slot said it stopped"
    plans(h, 0, entry(zero[moved], moved, state="stopped"))
    h.clock.now += 1
    h.service.work(FLOW)
    on_two = plans(h, 2)
    assert set(on_two) == {moved} and on_two[moved] > zero[moved], "re-planned, reconciled"
    assert moved not in plans(h, 0)
    assert plans(h, 1) == one
    status = h.service.status(FLOW)
    assert status["slots"] == {"0": 1, "1": 2, "2": 1}
    assert {"event": "rebalanced", "slot": 2, "partitions": 1}.items() <= next(
        e for e in status["slot_events"] if e["event"] == "rebalanced"
    ).items()


def test_a_lost_slots_partitions_move_to_the_others_after_its_lease_and_writes(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    zero, one = both_running(h)
    silent_from = h.clock.now
    plans(h, 1, *(entry(plan, p, 10) for p, plan in one.items()))
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 10)  # what slot 1 wrote
    granted = h.clock.now + h.lease / 1000
    lost_at = None
    while lost_at is None:  # slot 1 is silent, slot 0 answers
        h.clock.now += 1
        h.tick()
        if any(e["event"] == "lost" for e in h.service.status(FLOW)["slot_events"]):
            lost_at = h.clock.now
    assert lost_at >= silent_from + SLOT_LOST_S
    assert plans(h, 0) == zero, "slot 0 runs on meanwhile"
    lost = next(e for e in h.service.status(FLOW)["slot_events"] if e["event"] == "lost")
    assert (lost["slot"], lost["partitions"]) == (1, 2)
    code, answer = h.report(slot=1)
    assert code == 410 and "lost" in answer["error"], "the old run, if it wakes, ends"
    # Its last lease, then a record handed over then landing (10 s + 2 s), and 2 %.
    wait_out = granted + 0.02 * (granted - lost_at) + 12
    assert lost_at + lost["fenced_s"] == pytest.approx(wait_out, abs=0.1)
    while h.clock.now + 1 < wait_out:
        h.clock.now += 1
        h.tick()
        assert set(plans(h, 0)) == set(zero), "nothing moves while the old run may write"
    h.clock.now = wait_out + 0.1
    h.tick()
    status, answer = h.report(slot=0)
    moved = {p["partition"]: p for p in answer["units"][FLOW]["partitions"]}
    assert set(moved) == {0, 1, 2, 3}
    for p in one:
        assert moved[p]["plan"] > one[p] and moved[p]["start"] == 10, "reconciled from 10"
    assert not h.service.status(FLOW)["halted"]


def test_a_pause_of_the_driver_itself_loses_no_slot(flow: FlowConfig) -> None:
    h = Harness(flow)
    zero, one = both_running(h)
    h.clock.now += 40  # the driver was stopped: no report was taken, no pass ran
    h.service.tick()
    h.report(slot=1)
    assert not [e for e in h.service.status(FLOW)["slot_events"] if e["event"] == "lost"]
    assert plans(h, 0) == zero and plans(h, 1) == one


# -- a slot whose executor Spark removed is lost at once (copying/slots.py); the fence is
# its lease and writes all the same, whether the executor is dead or only cut off.


def on_executor(h: Harness, slot: int, executor: str, *entries: dict[str, object]) -> dict:  # type: ignore[type-arg]
    """Report ``entries`` as ``slot``'s run on Spark's executor ``executor``; the answer."""
    Harness.seq += 1
    run = {"id": f"run-{slot}", "attempt": 0, "executor": f"executor {executor} (host)",
           "executor_id": executor}  # fmt: skip
    body = {"job": "job-1", "slot": slot, "seq": Harness.seq, "answered": -1,
            "exiting": False, "units": [unit(FLOW, *entries)], "run": run}  # fmt: skip
    status, answer = h.service.on_report("job-1", slot, body)
    return {"status": status, **answer}


def on_executors(h: Harness) -> tuple[dict[int, int], dict[int, int]]:
    """Slot 0 on executor 1, slot 1 on executor 2, 4 partitions over them; their plans."""
    h.job.listed = frozenset({"1", "2"})
    on_executor(h, 0, "1")
    on_executor(h, 1, "2")
    h.service.set_owned(FLOW, {("orders", p): REMOTE for p in range(ELASTIC_PARTITIONS)})
    h.clock.now += 1
    h.service.tick()
    h.service.work(FLOW)
    zero, one = (
        {p["partition"]: p["plan"] for p in on_executor(h, s, e)["units"][FLOW]["partitions"]}
        for s, e in ((0, "1"), (1, "2"))
    )
    assert (len(zero), len(one)) == (2, 2)
    return zero, one


def test_a_slot_whose_executor_spark_removed_is_lost_at_once_and_fenced_by_its_lease(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    zero, one = on_executors(h)
    on_executor(h, 1, "2", *(entry(plan, p, 10) for p, plan in one.items()))
    h.facts.facts = PartitionFacts("S1", 0, 1000, "T1", 10)  # what slot 1 wrote
    granted = h.clock.now + h.lease / 1000
    h.job.listed = frozenset({"1", "3"})  # executor 2 removed, executor 3 added
    h.clock.now += 1  # the driver asks Spark every second
    h.service.tick()
    lost_at = h.clock.now
    (lost,) = (e for e in h.service.status(FLOW)["slot_events"] if e["event"] == "lost")
    assert (lost["slot"], lost["partitions"]) == (1, 2), "at once, not after 15 s of silence"
    assert lost["why"] == "Spark removed executor 2"
    # Spark may be wrong (a worker cut off from the master, an executor paused): the run
    # may be alive. It is fenced as a silent one is: no more answers, and its partitions
    # wait for its last lease and the writes handed over before it (10 s + 2 s, and 2 %).
    assert on_executor(h, 1, "2")["status"] == 410, "the old run, if alive, ends"
    wait_out = granted + 0.02 * (granted - lost_at) + 12
    assert lost_at + lost["fenced_s"] == pytest.approx(wait_out, abs=0.1)
    while h.clock.now + 1 < wait_out:
        h.clock.now += 1
        on_executor(h, 0, "1")
        h.service.tick()
        h.service.work(FLOW)
        got = {p["partition"] for p in on_executor(h, 0, "1")["units"][FLOW]["partitions"]}
        assert got == set(zero), "slot 0 runs on; nothing moves while the old run may write"
    h.clock.now = wait_out + 0.1
    on_executor(h, 0, "1")
    h.service.tick()
    h.service.work(FLOW)
    moved = {p["partition"]: p for p in on_executor(h, 0, "1")["units"][FLOW]["partitions"]}
    assert set(moved) == {0, 1, 2, 3}
    for p in one:
        assert moved[p]["plan"] > one[p] and moved[p]["start"] == 10, "reconciled from 10"
    assert not h.service.status(FLOW)["halted"]
    events = h.service.status(FLOW)["slot_events"]
    assert [e["slot"] for e in events if e["event"] == "lost"] == [1], "slot 0 never lost"


def test_an_executor_spark_never_listed_or_cannot_be_asked_about_loses_no_slot(
    flow: FlowConfig,
) -> None:
    h = Harness(flow)
    h.job.listed = frozenset({"1"})
    on_executor(h, 0, "1")
    on_executor(h, 1, "9")  # registered after Spark was asked: not yet listed
    for listed in (None, frozenset({"1"}), None, frozenset({"1", "9"}), None):
        h.job.listed = listed  # None: local mode, or Spark not answering now
        h.clock.now += 1
        on_executor(h, 0, "1")
        on_executor(h, 1, "9")
        h.service.tick()
    assert not [e for e in h.service.status(FLOW)["slot_events"] if e["event"] == "lost"]
    assert h.service.status(FLOW)["slots"].keys() == {"0", "1"}


def test_a_report_whose_run_was_fenced_while_its_progress_was_written_gets_no_lease(
    flow: FlowConfig,
) -> None:
    """Spark removed the slot's executor while the driver wrote that slot's report: the
    fence counted from the leases granted until then, so the answer may grant none."""
    h: Harness
    armed = False

    class FencedMeanwhile(FakeStore):
        def write(self, updates: Iterable[tuple[tuple[str, int], Progress]]) -> None:
            super().write(updates)
            if armed:
                h.job.listed = frozenset({"1"})
                h.clock.now += 1
                h.service.tick()  # the runtime thread, meanwhile

    h = Harness(flow, store=lambda journal, _facts: FencedMeanwhile(journal, {}))
    zero, one = on_executors(h)
    h.clock.now += 2  # past the commit interval: the report's progress is written
    writes, armed = h.journal.writes, True
    answer = on_executor(h, 1, "2", *(entry(plan, p, 10) for p, plan in one.items()))
    assert answer["status"] == 410 and "lost" in answer["error"]
    (lost,) = (e for e in h.service.status(FLOW)["slot_events"] if e["event"] == "lost")
    assert lost["slot"] == 1
    assert h.journal.writes > writes, "the progress it reported was written (it is true)"


def test_while_spark_starts_no_partition_is_taken_and_the_job_starts_once_it_is_up(
    flow: FlowConfig,
) -> None:
    """Spark starts beside the flows (srm_driver.spark.SparkStart): until it is up the
    service takes no partition (a flow's worker creates their remote topics meanwhile)
    and starts no job; then the job starts and partitions are placed on its slots."""
    h = Harness(flow, spark=False)
    h.service.tick()
    h.service.work(FLOW)
    assert not h.service.accepting() and h.job.job_id is None and h.service.fatal() is None
    h.job.up = True
    h.service.tick()
    assert h.service.accepting() and h.job.job_id == "job-1"
    h.service.set_owned(FLOW, {("orders", 0): "primary.orders", ("orders", 1): "primary.orders"})
    h.tick()
    assert h.service.status(FLOW)["partitions"] == 2


def test_a_spark_that_cannot_start_is_the_drivers_fatal_error(flow: FlowConfig) -> None:
    why = "Spark did not start with master 'spark://nowhere:7077': connection refused"
    h = Harness(flow, spark=SparkSetupError(why))
    h.service.tick()
    assert h.service.fatal() == why
    assert not h.service.accepting() and h.job.job_id is None


def test_a_unit_stopped_by_its_lease_says_so_in_the_log(
    flow: FlowConfig, caplog: pytest.LogCaptureFixture
) -> None:
    """A lease that ran out in a slot re-plans every partition of the unit: quiet (not a
    warning) but in the log, where a cold start's long tail was otherwise unexplained."""
    h = Harness(flow)
    plan = started(h)
    lease = {"kind": "lease", "message": "the lease of primary->backup ran out in this slot",
             "topic": None, "partition": None, "offset": -1, "class": None}  # fmt: skip
    with caplog.at_level(logging.INFO, logger="srm_driver.copying.intake"):
        h.report(part(plan["plan"], 5, 5), broken=lease)
    said = [r for r in caplog.records if "ran out in this slot" in r.getMessage()]
    assert said and said[0].levelno == logging.INFO
    assert "copy slot 0" in said[0].getMessage() and "1 partitions" in said[0].getMessage()
    assert h.service.status(FLOW)["by_status"] == {"pending": 1}


# -- a report slow to be recorded: the slot keeps its leases meanwhile -------------------


class BlockingStore(FakeStore):
    """Progress writes that wait for ``release`` once ``armed`` (a busy target)."""

    def __init__(self, journal: Journal) -> None:
        super().__init__(journal, {})
        self.armed = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def write(self, updates: Iterable[tuple[tuple[str, int], Progress]]) -> None:
        if self.armed:
            self.entered.set()
            self.release.wait(30)
        super().write(updates)


def keep(h: Harness, *, slot: int = 0, run: str = "", attempt: int = 0) -> tuple[int, dict]:  # type: ignore[type-arg]
    """A slot's request for its leases alone (its report's answer is late)."""
    return h.service.on_keep("job-1", slot, {"protocol": 2, "run": {"id": run, "attempt": attempt}})


def recording(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> tuple[BlockingStore, threading.Thread, list[tuple[int, dict]]]:  # type: ignore[type-arg]
    """A partition copies on slot 0; its next report's progress write hangs (the answer
    waits for it: the write budget is raised), on a thread of its own. The store, that
    thread and where its answer goes."""
    monkeypatch.setattr(reports, "WRITE_BUDGET_S", 60.0)
    plan = started(h)["plan"]
    store = h.service._adapters.get(FLOW).store
    assert isinstance(store, BlockingStore)
    store.armed = True
    h.clock.now += 2  # past the commit interval: the report's progress is written
    answered: list[tuple[int, dict]] = []  # type: ignore[type-arg]
    thread = threading.Thread(
        target=lambda: answered.append(h.report(part(plan, 40, 40, records=40))), daemon=True
    )
    thread.start()
    assert store.entered.wait(10), "the report's progress is being written"
    return store, thread, answered


def test_a_slot_whose_report_is_still_being_recorded_keeps_its_leases(
    flow: FlowConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording a report takes longer than a lease: the slot asks for its leases alone
    and gets its flow's, counted into the slot's last lease (a fence waits for it), and
    nothing of the report is taken in before its write ends; then it is answered."""
    h = Harness(flow, store=lambda journal, _facts: BlockingStore(journal))
    store, thread, answered = recording(h, monkeypatch)
    try:
        h.clock.now += 4
        status, answer = keep(h)
        assert status == 200 and answer["units"] == {FLOW: {"lease_ms": 5000}}
        assert answer["recording"] is True, "the slot's report is being recorded"
        assert h.service._ledger.granted[0] == h.clock.now + 5, "a fence waits for this lease"
        assert h.service.status(FLOW)["records"] == 0, "the report is not taken in by it"
        h.lease = 0
        assert keep(h)[1]["units"] == {FLOW: {"lease_ms": 0}}, "no lease: none to keep"
    finally:
        store.release.set()
        thread.join(10)
    assert answered[0][0] == 200 and h.service.status(FLOW)["records"] == 40
    assert keep(h)[1]["recording"] is False, "answered: the slot waits for nothing more"


def test_a_slot_keeps_its_leases_while_the_ledgers_lock_is_held(flow: FlowConfig) -> None:
    """A report of 30,000 partitions holds the ledger's lock for seconds while it is taken
    in: a keep takes the fence lock alone, so it is answered meanwhile, and its lease
    counts into the slot's last one."""
    h = Harness(flow)
    started(h)
    ledger = h.service._ledger
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with ledger.lock:
            held.set()
            done.wait(30)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    answered: list[tuple[int, dict]] = []  # type: ignore[type-arg]
    try:
        assert held.wait(10)
        h.clock.now += 3
        asking = threading.Thread(target=lambda: answered.append(keep(h)), daemon=True)
        asking.start()
        asking.join(10)
        assert answered, "the keep waited for the ledger's lock"
        assert answered[0] == (200, {"protocol": 2, "units": {FLOW: {"lease_ms": 5000}},
                                     "recording": False})  # fmt: skip
        with ledger.fence_lock:
            assert ledger.granted[0] == h.clock.now + 5
    finally:
        done.set()
        holder.join(10)


def test_a_job_that_ended_by_itself_grants_no_lease_past_its_wait_out(
    flow: FlowConfig,
) -> None:
    """A keep (or a report's answer) that passed the job's id check just before the job
    was found ended: its run is over (410), so no lease outlasts the wait-out the driver
    counted from the leases granted before."""
    h = Harness(flow)
    started(h)
    ledger = h.service._ledger
    h.job.active = 1  # a slot still runs on this host: the wait-out counts
    h.job.cancel()  # the job ends by itself
    h.tick()
    with ledger.fence_lock:
        granted = dict(ledger.granted)
    h.clock.now += 1
    status, answer = h.service._desk.keep(0, SlotRun(), h.clock.now)
    assert status == 410, answer
    with ledger.fence_lock:
        assert ledger.granted == granted, "no lease past the wait-out"


def test_a_slot_lost_or_run_again_keeps_no_lease(flow: FlowConfig) -> None:
    """The fence holds for keeps as for reports: a lost run is told 410 and its last lease
    stays where the fence counted from; another run's keep is refused, and one of a run
    not yet taken in gets nothing until its first report is answered."""
    h = Harness(flow)
    started(h)
    assert keep(h, run="newer", attempt=1)[0] == 409
    assert keep(h, run="other", attempt=0)[0] == 410
    granted = h.service._ledger.granted[0]
    for _ in range(8):  # silent, its passes 2 s apart: lost after SLOT_LOST_S
        h.clock.now += 2
        h.service.tick()
    assert [e for e in h.service.status(FLOW)["slot_events"] if e["event"] == "lost"]
    status, answer = keep(h)
    assert status == 410 and "was lost" in answer["error"]
    assert h.service._ledger.granted[0] == granted, "no lease past the fence"


def test_a_slot_that_keeps_its_leases_is_not_lost_while_its_report_is_recorded(
    flow: FlowConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report recorded for longer than the slot's silence allows (15 s): the slot's
    keeps tell the driver it is alive, so its partitions are not fenced and moved."""
    h = Harness(flow, store=lambda journal, _facts: BlockingStore(journal))
    store, thread, _answered = recording(h, monkeypatch)
    try:
        for _ in range(int(SLOT_LOST_S)):
            h.clock.now += 2
            assert keep(h)[0] == 200
            h.service.tick()
        assert not [e for e in h.service.status(FLOW)["slot_events"] if e["event"] == "lost"]
        assert h.service.status(FLOW)["by_status"] == {"running": 1}
    finally:
        store.release.set()
        thread.join(10)


# -- work that follows the change: a flow's planning pass over idle partitions -----------


def _idle_flow(flow: FlowConfig, count: int) -> Harness:
    """``count`` partitions of FLOW copying (their codec known), nothing to do."""
    h = Harness(flow)
    h.facts.codec = "zstd"
    h.service.set_owned(FLOW, {("orders", p): REMOTE for p in range(count)})
    h.tick()
    assert h.service.status(FLOW)["by_status"] == {"running": count}
    return h


@contextlib.contextmanager
def _state_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts every attribute read of a PartitionState while the block runs."""
    reads = [0]
    read = PartitionState.__getattribute__

    def counting(self: PartitionState, name: str) -> object:
        reads[0] += 1
        return read(self, name)

    monkeypatch.setattr(PartitionState, "__getattribute__", counting)
    try:
        yield reads
    finally:
        monkeypatch.setattr(PartitionState, "__getattribute__", read)


@pytest.mark.parametrize("count", [10, 3000])
def test_a_planning_pass_reads_no_state_of_a_running_partition(
    flow: FlowConfig, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Each flow's thread plans what is due many times a second: it walked every partition
    of the flow under the ledger's lock (10,000 at every pass). Now a pass reads the
    states of the pending and releasing ones only, and codecs are looked for only among
    the running plans without one: the same reads for 10 running partitions as for 3,000."""
    h = _idle_flow(flow, count)
    h.clock.now += 6  # codecs of running plans without one are due
    planner = h.service._planner
    with _state_reads(monkeypatch) as reads:
        planner.plan_due(h.clock.now, FLOW)
        h.service._checks.check_codecs(h.clock.now, FLOW)
    assert reads[0] == 0, f"{reads[0]} reads of partition states"
    with h.service._ledger.lock:  # one partition sent back: the pass looks at it alone
        h.service._ledger.parts.get(FLOW, ("orders", 1)).retry_later(h.clock.now, "test")  # type: ignore[union-attr]
    with _state_reads(monkeypatch) as reads:
        planner.plan_due(h.clock.now, FLOW)
    assert 0 < reads[0] < 50


@pytest.mark.parametrize("count", [10, 3000])
def test_the_partitions_held_are_worked_out_again_only_when_they_change(
    flow: FlowConfig, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """The heartbeat reports the tasks of the partitions held every second, per log
    served: asking for them walked every partition of the flow under the ledger's lock.
    Now the same set comes back, no state read, until a partition halts or comes back."""
    h = _idle_flow(flow, count)
    held = h.service.held(FLOW)
    assert len(held) == count
    with _state_reads(monkeypatch) as reads:
        assert h.service.held(FLOW) is held and h.service.held(FLOW) is held
    assert reads[0] == 0, f"{reads[0]} reads of partition states"
    state = h.service._ledger.parts.get(FLOW, ("orders", 1))
    assert state is not None
    with h.service._ledger.lock:
        state.status = "halted"
    assert h.service.held(FLOW) == held - {("orders", 1)}
    with h.service._ledger.lock:
        state.status = "pending"  # resumed
    assert h.service.held(FLOW) == held


@pytest.mark.parametrize("count", [10, 3000])
def test_an_identity_check_reads_only_partitions_started_since_or_of_a_changed_topic(
    flow: FlowConfig, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Every 2 s the running partitions' topics are asked for their ids: each check walked
    every running partition under the ledger's lock. Now the topics are asked (one per
    topic, not per partition) and partitions are read only when they started since the
    last check or their topic's ids changed; a recreated topic still stops them all."""
    h = _idle_flow(flow, count)
    check = h.service._checks.check_identities
    h.clock.now += 3
    check(h.clock.now, FLOW)  # the first check compares every partition that started
    with _state_reads(monkeypatch) as reads:
        for _ in range(3):
            h.clock.now += 3
            check(h.clock.now, FLOW)
    assert reads[0] == 0, f"{reads[0]} reads of partition states"
    assert h.facts.described[-3:] == [1, 1, 1], "one topic asked, not one per partition"

    h.facts.facts = PartitionFacts("S2", 0, 10, "T1", 0)  # the source topic was recreated
    h.clock.now += 3
    check(h.clock.now, FLOW)
    assert h.service.status(FLOW)["by_status"] == {"pending": count}, "every one stopped"


class _CountingLock:
    """The ledger's lock, counting how often it is taken."""

    def __init__(self, lock: threading.RLock) -> None:
        self._lock = lock
        self.taken = 0

    def __enter__(self) -> bool:
        self.taken += 1
        return self._lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)  # type: ignore[arg-type]


@pytest.mark.parametrize("count", [10, 2000])
def test_a_batch_of_new_partitions_takes_the_ledgers_lock_as_often_as_one(
    flow: FlowConfig, count: int
) -> None:
    """A report of 15,000 partitions holds the ledger's lock about a second while it is
    taken in; a reconcile that took the lock once per partition (its status, progress
    and resume read before its decision) queued 2,000 times behind such reports: at
    30,000 partitions a unit's 13,205 partitions restarted 89 s after their break. A
    batch now reads them under one hold: as often for 2,000 partitions as for 10."""
    h = Harness(flow)
    h.tick()  # slot 0 reports
    h.service.set_owned(FLOW, {("orders", p): REMOTE for p in range(count)})
    ledger = h.service._ledger
    counting = _CountingLock(ledger.lock)
    ledger.lock = counting  # type: ignore[assignment]
    try:
        h.service.work(FLOW)
    finally:
        ledger.lock = counting._lock
    assert h.service.status(FLOW)["by_status"] == {"running": count}
    assert counting.taken < 15, f"the ledger's lock taken {counting.taken} times"


def test_a_state_as_reported_is_a_copy_with_the_reports_positions_and_not_watched() -> None:
    """What a report's commit is decided from (copying/positions.as_reported): the state's
    every field as it is, the entry's acknowledgements and next send; changing it touches
    neither the state nor its watcher."""
    state = PartitionState(FLOW, TP, REMOTE, 0)
    state.progress, state.acked, state.next_send = Progress(5, 5, 105, "S1", "T1"), (5, 5), 5
    changed: list[PartitionState] = []
    state.watch(changed.append)
    entry = PartitionReport(TP[0], TP[1], 1, "sending", 40, 41, 45, 0, 0, 0, 0, 0, 0, (), None)
    seen = as_reported(state, entry)
    expected = dataclasses.replace(state, acked=(40, 41), next_send=45)
    assert dataclasses.asdict(seen) == dataclasses.asdict(expected)
    seen.status = "halted"
    seen.plan = None
    assert changed == [] and state.status == "pending" and state.acked == (5, 5)
