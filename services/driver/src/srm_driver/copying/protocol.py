"""The control channel between the driver and its copy slots (JSON over HTTP), parsed.

A slot (:class:`srm_driver.copier.control.SlotRunner`, in a PySpark worker) POSTs a
:class:`SlotReport` to ``/internal/v1/copy/{job}/slots/{slot}`` every ``report_ms`` or
when something happened; the answer (built by
:class:`srm_driver.copying.reports.ReportDesk`) is the desired state of the slot
plus the leases of its units. Both sides are level triggered: a lost
request or answer is repaired by the next one.

Two versions, named by ``protocol`` in the report and the answer. Protocol 1 (a report
without the field: a slot of an older version) carries whole states both ways. Protocol 2
(the copy slot, :mod:`srm_driver.copier.control`) carries what changed:

* a report lists only the partitions whose entry differs from the last one the driver took
  in (or that carry syncs), and says ``"full": false``; it lists every partition (``"full":
  true``) when it is the slot's first, at least every 30 s, and when the last answer asked
  (``"full": true``, until the driver has taken a full report of the slot). A partition
  left out is where its last entry taken in said (the driver keeps it as
  ``PartitionState.reported``, and makes the commits that come due with time from it);
* an answer to a report whose ``answered`` is the version of the last answer sent to the
  slot carries ``"base"`` (that version) and per unit only the changed or new plans
  (``partitions``), the partitions taken away (``removed``: ``[topic, partition]``
  pairs) and ``settings`` only when they changed; the slot applies it only onto the
  version it holds, else it keeps that version and the next answer is whole
  (:mod:`srm_driver.copying.answers`). Units, epochs and leases are in every answer.

A slot of a protocol this driver does not speak is refused (400, naming both); a slot
stops when an answer does not say protocol 2 (a driver that took a left-out
partition for one that is not running would re-plan it while it copies).

Report (slot -> driver)::

    {"protocol": 2, "full": true, "job": "3f2a", "slot": 0, "seq": 41, "answered": 40,
     "lease_ms": 3870, "exiting": false,
     "run": {"id": "9c1e77", "attempt": 1, "executor": "executor 2 (host)", "executor_id": "2"},
     "units": [{"flow": "primary->backup", "epoch": 2, "applied": 40, "broken": null,
                "broken_epoch": -1, "poll_error": null, "exited": false, "lease_ms": 3870,
                "partitions": [{"topic": "orders", "partition": 3, "plan": 7,
                                "state": "sending", "acked_up": 1200, "acked_down": 1180,
                                "next_send": 1212,
                                "outstanding": 12, "records": 950, "bytes": 972800,
                                "dropped": 0, "latency_sum_ms": 4211, "latency_max_ms": 31,
                                "latency_min_ms": 1, "latency_hist": [0, 3, 120, ...],
                                "source_end": 1250, "pending_ts": 1731400000123,
                                "syncs": [[250, 230], [1199, 1179]], "error": null}]}]}

Answer (driver -> slot)::

    {"protocol": 2, "version": 41, "base": 40, "full": false, "lease_ms": 4000,
     "report_ms": 200, "stop": false, "refused": [],
     "units": {"primary->backup": {"epoch": 2, "lease_ms": 4000, "settings": {...},
               "partitions": [{"topic": "orders", "partition": 3, "plan": 7,
                               "remote": "primary.orders", "start": 250, "down": 230,
                               "reserve": 50250, "codec": "zstd"}],
               "removed": [["orders", 5]]}}}

Leases are per flow: a unit's ``lease_ms`` is how long its flow's records may still be
handed to its producer, counted by the slot from when it sent the report (at most
``LEASE_CAP_MS``; 0 revokes it at once). A unit with no entry in the answer is stopped and
given nothing: its lease runs out by itself, as every lease does when the driver does not
answer. The slot-level ``lease_ms`` is the longest unit lease (``LEASE_CAP_MS`` when the
answer has no unit); a slot uses it only for a unit entry without a ``lease_ms`` of its
own (a driver of an older version), and reports the longest lease it holds. A unit's
report also carries what its lease has left (``lease_ms``), for the logs.

A plan's ``codec`` (absent: not known) is the source topic's codec: the slot compresses
that partition's copies with it (:mod:`srm_driver.source_codecs`). It may change within a
plan (the driver found it after the plan was handed out); the slot moves the partition to
a producer of the new codec once nothing of it is in flight there.

``refused`` lists the flows whose part of the report the driver did not take in (no
lease for a write that part needed, or the write failed): the slot keeps that part (syncs,
partitions it saw stopped, a unit that exited) and reports it again; every other part is
taken in (:mod:`srm_driver.copying.reports`).

Counters are cumulative per plan (``latency_hist``: copies per bucket of
:data:`srm_common.metrics.raw.LATENCY_BOUNDS_MS`, which the slot's histogram
shares; ``latency_min_ms`` -1 before the first); ``source_end`` is where the source
partition ends as the slot's consumer last saw it and ``pending_ts`` the timestamp of the
oldest record sent but not acknowledged, or the one waiting for its reservation (-1: not
known, none). A slot of an older version sends none of these four: they read as unknown
and empty. Syncs are those not yet in an answered report. An
answer's ``version`` is the ``seq`` of the report it answers; a report says which answer
the slot applied last (``answered``) and which one each unit's loop applied last
(``applied``, read before its partitions): a plan left out of an answer the unit has
applied, not in its report and (protocol 2) never in a report taken in, never ran there
or was seen stopped already.

**Keeping the leases while an answer is late.** A slot whose answer has not come after
``KEEP_AFTER_S`` (1 s: the driver is slow to record the report, its progress writes wait
on a busy target) asks for its leases alone, every second until the answer comes, on a
connection of its own: ``POST /internal/v1/copy/{job}/slots/{slot}/lease`` with
``{"protocol": 2, "run": {...}}``, answered ``{"protocol": 2, "units": {"<flow>":
{"lease_ms": 4000}}, "recording": true}`` (its flows with partitions on the slot, each its
flow's lease now; whether a report of the slot is being recorded) and counted, as every
lease, from when that request was sent. Five keeps in a row that find no report being
recorded make the slot give up the answer and report again (the report, or its answer,
was lost on a connection that went dead). It is decided as an
answer's leases are, under the same fence: a run fenced or taken over is answered 410
(and stops, as for a report), a run whose first report was not taken in yet 409 (nothing
granted), and the lease granted counts into the slot's last lease, from which a fence
waits. Nothing of the report in flight is taken in by it, and it changes no plan. It also
tells the driver the slot is alive (a slot is lost after 15 s unheard, not after 15 s
without an answer). So a driver slower to answer than a lease no longer stops every unit
of the slot (which re-verified and restarted all their partitions); the answer, when it
comes, is applied as usual.

``run`` names the run of the slot (:class:`SlotRun`): Spark runs a slot's task again
when it lost the executor it ran on, and the new run starts its ``seq`` from 0. A run
with a higher attempt than the slot's current one takes the slot over (the old run is
fenced: :mod:`srm_driver.copying.runs`); a report of a run that was taken over, or of a
lower attempt, is answered 410, so that run stops and ends. Its ``executor_id`` (Spark's
id of the executor, when the slot can tell) lets the driver find the slot lost as soon as
Spark removes that executor (:mod:`srm_driver.copying.slots`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from srm_common.errors import SrmError

TopicPartition = tuple[str, int]
# 1: whole states both ways (slots of older versions); 2: what changed (the slot now).
PROTOCOLS = (1, 2)
DELTA_PROTOCOL = 2


class ProtocolError(SrmError):
    """A report that does not have the shape above (a slot of another version?)."""


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a unit broke or a partition stopped: ``kind`` is ``transient``, ``poison``,
    ``conflict``, ``lease`` or ``out_of_range``."""

    kind: str
    message: str
    topic: str | None = None
    partition: int | None = None
    offset: int = -1
    error_class: str | None = None

    @property
    def partition_key(self) -> TopicPartition | None:
        if self.topic is None or self.partition is None:
            return None
        return (self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class PartitionReport:
    topic: str
    partition: int
    plan: int
    state: str  # sending | waiting_reservation | stopping | stopped
    acked_up: int
    acked_down: int
    next_send: int
    outstanding: int
    records: int
    bytes: int
    dropped: int
    latency_sum_ms: int
    latency_max_ms: int
    syncs: tuple[tuple[int, int], ...]
    error: Failure | None
    uncertain: bool = False
    latency_min_ms: int = -1
    latency_hist: tuple[int, ...] = ()
    source_end: int = -1
    pending_ts: int = -1

    @property
    def key(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def stopped(self) -> bool:
        return self.state == "stopped"


@dataclass(frozen=True, slots=True)
class UnitReport:
    flow: str
    epoch: int
    broken: Failure | None
    broken_epoch: int
    poll_error: str | None
    exited: bool
    partitions: tuple[PartitionReport, ...]
    applied: int = -1


@dataclass(frozen=True, slots=True)
class SlotRun:
    """One run of a slot: Spark runs a slot's task again (a new attempt, on another
    executor) when it lost the executor of the run before. ``id`` is the run's own
    (random), ``attempt`` Spark's attempt number of the task, ``executor`` where it runs,
    for people. A report without a run (a slot of an older version) is run ``""``."""

    id: str = ""
    attempt: int = 0
    executor: str = ""
    # Spark's id of the executor, when the slot can tell (a standalone worker's executor
    # folder, SPARK_EXECUTOR_ID where the cluster manager sets it): a slot whose executor
    # Spark removed is lost at once; "" leaves it to the slot's silence.
    executor_id: str = ""

    def __str__(self) -> str:
        where = f" on {self.executor}" if self.executor else ""
        return f"task attempt {self.attempt}{where}"


@dataclass(frozen=True, slots=True)
class SlotReport:
    job: str
    slot: int
    seq: int
    exiting: bool
    units: tuple[UnitReport, ...]
    run: SlotRun = SlotRun()
    answered: int = -1
    protocol: int = 1
    # Every partition of every unit is listed (always so in protocol 1).
    full: bool = True


def parse_report(body: Mapping[str, Any]) -> SlotReport:
    """The report in ``body``; :class:`ProtocolError` naming the first bad field."""
    protocol = body.get("protocol", 1)
    if protocol not in PROTOCOLS or isinstance(protocol, bool):
        raise ProtocolError(
            f"a copy slot of protocol {protocol!r} reported; this driver speaks"
            f" {' and '.join(map(str, PROTOCOLS))}: run the driver with the srm-copier.jar"
            " of its own version (make jars)"
        )
    try:
        return SlotReport(
            run=_run(body.get("run")),
            job=str(body["job"]),
            slot=_int(body["slot"]),
            seq=_int(body["seq"]),
            exiting=bool(body.get("exiting", False)),
            units=tuple(_unit(u) for u in body["units"]),
            answered=_int(body.get("answered", -1)),
            protocol=protocol,
            full=protocol < DELTA_PROTOCOL or body.get("full") is True,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed copy slot report: {exc!r}") from exc


def parse_keep(body: Mapping[str, Any]) -> SlotRun:
    """The run of the slot asking to keep its leases (``POST .../slots/{slot}/lease``,
    see the module docstring); :class:`ProtocolError` when ``body`` is not one."""
    protocol = body.get("protocol")
    if protocol != DELTA_PROTOCOL or isinstance(protocol, bool):
        raise ProtocolError(
            f"a copy slot of protocol {protocol!r} asked to keep its leases; only slots of"
            f" protocol {DELTA_PROTOCOL} do: run the driver and its slots of one version"
        )
    try:
        return _run(body["run"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed lease keep of a copy slot: {exc!r}") from exc


def _run(body: Mapping[str, Any] | None) -> SlotRun:
    if body is None:
        return SlotRun()
    return SlotRun(
        id=str(body["id"]),
        attempt=_int(body.get("attempt", 0)),
        executor=str(body.get("executor") or ""),
        executor_id=str(body.get("executor_id") or ""),
    )


def _unit(body: Mapping[str, Any]) -> UnitReport:
    return UnitReport(
        flow=str(body["flow"]),
        epoch=_int(body["epoch"]),
        broken=_failure(body.get("broken")),
        broken_epoch=_int(body.get("broken_epoch", -1)),
        poll_error=body.get("poll_error"),
        exited=bool(body.get("exited", False)),
        partitions=tuple(_partition(p) for p in body["partitions"]),
        applied=_int(body.get("applied", -1)),
    )


def _partition(body: Mapping[str, Any]) -> PartitionReport:
    # Checked in bulk, not field by field: a full report has thousands of these.
    get = body.get
    acked_up = body["acked_up"]
    numbers = (
        body["partition"],
        body["plan"],
        acked_up,
        body["acked_down"],
        get("next_send", acked_up),
        body["outstanding"],
        body["records"],
        body["bytes"],
        body["dropped"],
        body["latency_sum_ms"],
        body["latency_max_ms"],
        get("latency_min_ms", -1),
        get("source_end", -1),
        get("pending_ts", -1),
    )
    hist = tuple(get("latency_hist", ()))
    for value in (*numbers, *hist):
        if type(value) is not int:
            raise ValueError(f"{value!r} is not a whole number")
    syncs = body["syncs"]
    return PartitionReport(
        topic=str(body["topic"]),
        partition=numbers[0],
        plan=numbers[1],
        state=str(body["state"]),
        acked_up=acked_up,
        acked_down=numbers[3],
        next_send=numbers[4],
        outstanding=numbers[5],
        records=numbers[6],
        bytes=numbers[7],
        dropped=numbers[8],
        latency_sum_ms=numbers[9],
        latency_max_ms=numbers[10],
        syncs=tuple((_int(up), _int(down)) for up, down in syncs) if syncs else (),
        error=_failure(get("error")),
        uncertain=bool(get("uncertain", False)),
        latency_min_ms=numbers[11],
        latency_hist=hist,
        source_end=numbers[12],
        pending_ts=numbers[13],
    )


def _failure(body: Mapping[str, Any] | None) -> Failure | None:
    if body is None:
        return None
    partition = body.get("partition")
    return Failure(
        kind=str(body["kind"]),
        message=str(body.get("message") or ""),
        topic=body.get("topic"),
        partition=None if partition is None else _int(partition),
        offset=_int(body.get("offset", -1)),
        error_class=body.get("class"),
    )


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{value!r} is not a whole number")
    return value


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """One partition's plan in an answer (see the module docstring)."""

    topic: str
    partition: int
    plan: int
    remote: str
    start: int
    down: int
    reserve: int
    # The source's codec, for the copies' producer ("": not known, the configured one).
    codec: str = ""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "topic": self.topic,
            "partition": self.partition,
            "plan": self.plan,
            "remote": self.remote,
            "start": self.start,
            "down": self.down,
            "reserve": self.reserve,
        }
        if self.codec:
            out["codec"] = self.codec
        return out
