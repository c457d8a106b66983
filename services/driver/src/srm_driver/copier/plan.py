"""What the driver wants one flow's unit in a slot to do, from one control answer.

Its ``version`` (reported back once the unit applied it), ``epoch`` (raised by the driver
after it re-planned a unit that broke), the clients' settings, the origin and copy
header settings of a shared (identity policy) target, and the plan of every partition.
A partition missing here is to be stopped. The shape is the answer's unit entry in
:mod:`srm_driver.copying.protocol`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Wanted:
    """One partition's plan: copy upstream ``start``.. to ``remote`` from downstream
    ``down``, never at or past upstream ``reserve``, compressed with ``codec`` (the
    source's; "": the producer's configured one)."""

    plan: int
    remote: str
    start: int
    down: int
    reserve: int
    codec: str = ""


@dataclass(frozen=True, slots=True)
class UnitPlan:
    flow: str
    version: int
    epoch: int
    consumer: Mapping[str, str]
    producer: Mapping[str, str]
    origin_header: str | None
    copy_header: str | None
    source: str
    target: str
    poll_ms: int
    partitions: Mapping[TopicPartition, Wanted]
    # Whole record batches passed through (``srm.copy.batches``): the reservation window a
    # batch must fit in (``srm.batch.max.records``); 0 when the unit copies record by
    # record (:mod:`srm_driver.copier.batch_unit`).
    batch_window: int = 0

    @property
    def batches(self) -> bool:
        return self.batch_window > 0

    @property
    def shared(self) -> bool:
        """The remote partitions have other writers (identity policy)."""
        return self.copy_header is not None


def parse_plan(flow: str, version: int, body: Mapping[str, Any]) -> UnitPlan:
    """The whole unit entry ``body`` of answer ``version``; ValueError naming a bad field."""
    try:
        partitions = _partitions(body["partitions"])
        return _unit_plan(flow, version, _number(body, "epoch"), body["settings"], partitions)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"control answer: missing or bad field {exc}") from None


@dataclass
class _Unit:
    epoch: int
    settings: Mapping[str, Any]
    partitions: dict[TopicPartition, Wanted] = field(default_factory=dict)


class Desired:
    """What the driver wants this slot to run, per flow, as of the last answer applied.

    Answers of copy protocol 2 carry either the whole of it or (with ``base``) only what
    changed since the answer of that version: plans new or changed (``partitions``), the
    partitions taken away (``removed``) and the settings only when they changed. A delta
    is applied only onto the version held here; otherwise nothing of it is, the slot
    keeps reporting the version it holds, and the driver answers with the whole state.
    """

    def __init__(self) -> None:
        self.version = -1
        self._units: dict[str, _Unit] = {}

    @property
    def flows(self) -> set[str]:
        return set(self._units)

    def apply(self, version: int, base: int | None, units: Mapping[str, Any]) -> bool:
        """Apply answer ``version``'s units; False (nothing changed) when it is a delta
        onto another version than the one held. ValueError naming a bad field."""
        if base is not None and base != self.version:
            return False
        applied: dict[str, _Unit] = {}
        try:
            for flow, body in units.items():
                before = self._units.get(flow) if base is not None else None
                settings = body.get("settings")
                if settings is None:
                    if before is None:
                        raise ValueError(f"control answer: no settings for {flow}")
                    settings = before.settings
                removed = body.get("removed") or ()
                changed = _partitions(body["partitions"])
                if before is not None and not removed and not changed:
                    # Nothing changed: the same mapping (never changed once made), so a
                    # unit can tell by identity that its partitions' plans are the same.
                    applied[flow] = _Unit(_number(body, "epoch"), settings, before.partitions)
                    continue
                unit = _Unit(_number(body, "epoch"), settings)
                if before is not None:
                    unit.partitions.update(before.partitions)
                for topic, partition in removed:
                    unit.partitions.pop((str(topic), int(partition)), None)
                unit.partitions.update(changed)
                applied[flow] = unit
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"control answer: missing or bad field {exc}") from None
        self._units, self.version = applied, version
        return True

    def plan(self, flow: str) -> UnitPlan:
        """The plan of ``flow``'s unit as of the version held."""
        unit = self._units[flow]
        try:
            return _unit_plan(flow, self.version, unit.epoch, unit.settings, unit.partitions)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"control answer: missing or bad field {exc}") from None


def _partitions(items: Any) -> dict[TopicPartition, Wanted]:
    return {
        (str(p["topic"]), _number(p, "partition")): Wanted(
            plan=_number(p, "plan"),
            remote=str(p["remote"]),
            start=_number(p, "start"),
            down=_number(p, "down"),
            reserve=_number(p, "reserve"),
            codec=str(p.get("codec") or ""),
        )
        for p in items
    }


def _unit_plan(
    flow: str,
    version: int,
    epoch: int,
    settings: Mapping[str, Any],
    partitions: Mapping[TopicPartition, Wanted],
) -> UnitPlan:
    return UnitPlan(
        flow=flow,
        version=version,
        epoch=epoch,
        consumer={str(k): str(v) for k, v in settings["consumer"].items()},
        producer={str(k): str(v) for k, v in settings["producer"].items()},
        origin_header=settings.get("origin_header"),
        copy_header=settings.get("copy_header"),
        source=str(settings["source"]),
        target=str(settings["target"]),
        poll_ms=_number(settings, "poll_ms"),
        partitions=partitions,
        batch_window=_window(settings["batches"]) if settings.get("batches") else 0,
    )


def _window(batches: Mapping[str, Any]) -> int:
    """The batch copy's window: a unit told to copy batches never falls back to records
    in silence (a window of 0 would read as "off")."""
    window = _number(batches, "window")
    if window < 1:
        raise ValueError(
            f"control answer: batches' 'window' (srm.batch.max.records) must be >= 1, got {window}"
        )
    return window


def _number(body: Mapping[str, Any], key: str) -> int:
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"control answer: {key!r} is not a whole number: {value!r}")
    return value
