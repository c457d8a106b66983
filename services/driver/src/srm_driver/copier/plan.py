"""What the driver wants one flow's unit in a slot to do, from one control answer.

Its ``version`` (reported back once the unit applied it), ``epoch`` (raised by the driver
after it re-planned a unit that broke), the clients' settings, the origin and copy
header settings of a shared (identity policy) target, and the plan of every partition.
A partition missing here is to be stopped. The shape is the answer's unit entry in
:mod:`srm_driver.copying.protocol`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class Wanted:
    """One partition's plan: copy upstream ``start``.. to ``remote`` from downstream
    ``down``, never at or past upstream ``reserve``."""

    plan: int
    remote: str
    start: int
    down: int
    reserve: int


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

    @property
    def shared(self) -> bool:
        """The remote partitions have other writers (identity policy)."""
        return self.copy_header is not None


def parse_plan(flow: str, version: int, body: Mapping[str, Any]) -> UnitPlan:
    """The unit entry ``body`` of answer ``version``; ValueError naming a bad field."""
    try:
        settings = body["settings"]
        partitions = {
            (str(p["topic"]), _number(p, "partition")): Wanted(
                plan=_number(p, "plan"),
                remote=str(p["remote"]),
                start=_number(p, "start"),
                down=_number(p, "down"),
                reserve=_number(p, "reserve"),
            )
            for p in body["partitions"]
        }
        return UnitPlan(
            flow=flow,
            version=version,
            epoch=_number(body, "epoch"),
            consumer={str(k): str(v) for k, v in settings["consumer"].items()},
            producer={str(k): str(v) for k, v in settings["producer"].items()},
            origin_header=settings.get("origin_header"),
            copy_header=settings.get("copy_header"),
            source=str(settings["source"]),
            target=str(settings["target"]),
            poll_ms=_number(settings, "poll_ms"),
            partitions=partitions,
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"control answer: missing or bad field {exc}") from None


def _number(body: Mapping[str, Any], key: str) -> int:
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"control answer: {key!r} is not a whole number: {value!r}")
    return value
