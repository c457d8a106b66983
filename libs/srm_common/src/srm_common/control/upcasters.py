"""Upcasters: each turns an event's data as an older release wrote it (``(type,
version)``) into the next version's, so that every event ever appended still folds.
:mod:`srm_common.control.codec` applies them in order on decode; the golden bytes
(``libs/srm_common/tests/golden/control_events_v1.json``) hold an event of every version."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from srm_common.control.schema import EventDecodeError

Data = dict[str, object]


def upcast_driver_joined_v1_to_v2(data: Data) -> Data:
    """v1 drivers did not report their host; an unknown host is ``""``."""
    return {**data, "host": ""}


def upcast_driver_joined_v2_to_v3(data: Data) -> Data:
    """v2 drivers had no incarnation; ``""`` matches any instance of the id."""
    return {**data, "instance": ""}


def upcast_task_configs_v1_to_v2(data: Data) -> Data:
    """v1 listed each source task's partitions and each checkpoint task's groups; v2
    gives each topic's partitions their task, all inline (``parts`` 0)."""
    try:
        source = [[(str(t), int(p)) for t, p in task] for task in data["source"]]  # type: ignore[attr-defined]
        checkpoint = [list(groups) for groups in data["checkpoint"]]  # type: ignore[attr-defined]
    except (KeyError, TypeError, ValueError) as exc:
        raise EventDecodeError(
            "task_configs.generated v1: field 'source' must be a list of source tasks, each"
            " a list of [topic, partition], and 'checkpoint' a list of lists of groups"
        ) from exc
    owner: dict[str, dict[int, int]] = {}
    for index, task in enumerate(source):
        for topic, partition in task:
            owner.setdefault(topic, {})[partition] = index
    topics: list[list[object]] = []
    for topic in sorted(owner):
        run: list[int] = []
        first = previous = -2
        for partition in sorted(owner[topic]):
            if partition != previous + 1 and run:
                topics.append([topic, first, run])
                run = []
            if not run:
                first = partition
            run.append(owner[topic][partition])
            previous = partition
        if run:
            topics.append([topic, first, run])
    rest = {k: v for k, v in data.items() if k not in ("source", "checkpoint")}
    return {
        **rest,
        "source_tasks": len(source),
        "checkpoint_tasks": len(checkpoint),
        "partitions": sum(len(partitions) for partitions in owner.values()),
        "topics": topics,
        "groups": [[index, groups] for index, groups in enumerate(checkpoint)],
        "parts": 0,
    }


def upcast_log_started_v1_to_v2(data: Data) -> Data:
    """v1 logs were the one log of every flow: no target."""
    return {**data, "target": ""}


UPCASTERS: Mapping[tuple[str, int], Callable[[Data], Data]] = {
    ("log.started", 1): upcast_log_started_v1_to_v2,
    ("driver.joined", 1): upcast_driver_joined_v1_to_v2,
    ("driver.joined", 2): upcast_driver_joined_v2_to_v3,
    ("task_configs.generated", 1): upcast_task_configs_v1_to_v2,
}
