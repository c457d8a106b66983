"""A flow's task configs as events of bounded size, at any partition count. Pure.

Each partition is written once, as the source task that holds it, grouped by topic::

    source task 0: a-0 a-2 b-0        topics: ("a", 0, (0, 1, 0))    a-0 -> 0, a-1 -> 1, a-2 -> 0
    source task 1: a-1 b-1                    ("b", 0, (0, 1))       b-0 -> 0, b-1 -> 1

so a partition costs two or three bytes besides its topic's name, once per topic (v1 of
the event listed ``["topic",partition]`` per partition, about 19 bytes: one event
passed Kafka's 1 MB default near 50,000 partitions). Whatever does not fit in
:data:`PART_BYTES` goes into :class:`TaskConfigsPart` events written before the
:class:`TaskConfigsGenerated` that completes them, all in the leader's one transaction::

    10,000 partitions, 1,000 topics:   1 event of 41 KB        (v1: 190 KB)
    100,000 partitions, 10,000 topics: 3 parts of 131 KB + 1   (v1: one of 1.9 MB)

Readers fold the parts and apply the set at the last event (``state.apply``); a set
whose parts are not all there (a log cut in the middle, never written so by a leader)
is not applied, the flow keeps its previous task configs, and the leader plans again.
Why a chunked set and not ranges or whole topics per task: docs/design.md, section 8.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache, lru_cache

from srm_common.control.schema import (
    GroupOwners,
    TaskConfigsGenerated,
    TaskConfigsPart,
    TopicOwners,
)

TopicPartition = tuple[str, int]

# Entries (topics and groups) in one event, in bytes of their JSON: every event then
# stays under EVENT_BYTES_MAX with its envelope (who, when, command, trace), far under
# Kafka's 1 MB default record size.
PART_BYTES = 128 * 1024
EVENT_BYTES_MAX = 256 * 1024


def task_config_events(
    flow: str,
    generation: int,
    source: Sequence[Sequence[TopicPartition]],
    checkpoint: Sequence[Sequence[str]],
    heartbeat: bool,
    *,
    budget: int = PART_BYTES,
) -> list[TaskConfigsPart | TaskConfigsGenerated]:
    """The events of one task config set: its parts, then the event that completes it.
    ``source[i]`` are the partitions of source task i, ``checkpoint[i]`` the groups of
    checkpoint task i."""
    topics = topic_entries(source, budget)
    groups = group_entries(checkpoint, budget)
    chunks = _pack([*topics, *groups], budget)
    events: list[TaskConfigsPart | TaskConfigsGenerated] = []
    for index, chunk in enumerate(chunks[:-1]):
        events.append(TaskConfigsPart(flow, generation, index, *_split(chunk)))
    last_topics, last_groups = _split(chunks[-1]) if chunks else ((), ())
    events.append(
        TaskConfigsGenerated(
            flow,
            generation,
            source_tasks=len(source),
            checkpoint_tasks=len(checkpoint),
            heartbeat=heartbeat,
            partitions=sum(len(owners) for _topic, _first, owners in topics),
            topics=last_topics,
            groups=last_groups,
            parts=len(chunks) - 1 if chunks else 0,
        )
    )
    return events


def task_configs(
    flow: str,
    generation: int,
    source: Sequence[Sequence[TopicPartition]],
    checkpoint: Sequence[Sequence[str]] = (),
    heartbeat: bool = False,
) -> TaskConfigsGenerated:
    """The one event of a task config set small enough for one (tests, examples);
    ``ValueError`` if it needs parts."""
    *parts, last = task_config_events(flow, generation, source, checkpoint, heartbeat)
    if parts:
        raise ValueError(f"the task configs of {flow} need {len(parts) + 1} events")
    assert isinstance(last, TaskConfigsGenerated)
    return last


def assemble(
    event: TaskConfigsGenerated, parts: Sequence[TaskConfigsPart]
) -> tuple[tuple[tuple[TopicPartition, ...], ...], tuple[tuple[str, ...], ...]] | None:
    """Each source task's partitions and each checkpoint task's groups, from ``event``
    and its ``parts`` (those folded since the set started); None unless they are exactly
    parts 0..n-1 of the same flow and generation. Entries naming a task the set does not
    have are left out (the fold accepts every logged event; a leader never writes them)."""
    wanted = [p for p in parts if p.flow == event.flow and p.generation == event.generation]
    if sorted(p.part for p in wanted) != list(range(event.parts)):
        return None
    wanted.sort(key=lambda p: p.part)
    source: list[list[TopicPartition]] = [[] for _ in range(max(0, event.source_tasks))]
    groups: list[list[str]] = [[] for _ in range(max(0, event.checkpoint_tasks))]
    chunks = [*((p.topics, p.groups) for p in wanted), (event.topics, event.groups)]
    add = [task.append for task in source]
    tasks = len(source)
    for chunk_topics, chunk_groups in chunks:
        for topic, first, owners in chunk_topics:
            for partition, owner in enumerate(owners, first):
                if 0 <= owner < tasks:
                    add[owner]((topic, partition))
        for index, names in chunk_groups:
            if 0 <= index < len(groups):
                groups[index].extend(names)
    # Entries come in topic order and each run in partition order, so each task's
    # partitions are sorted as planning sorts them.
    return tuple(map(tuple, source)), tuple(map(tuple, groups))


def topic_entries(
    source: Sequence[Sequence[TopicPartition]], budget: int = PART_BYTES
) -> list[TopicOwners]:
    """Per topic (sorted), each run of consecutive partitions with their task; a run
    whose entry would pass ``budget`` bytes is cut into several."""
    owner: dict[str, dict[int, int]] = {}
    for index, task in enumerate(source):
        for topic, partition in task:
            owner.setdefault(topic, {})[partition] = index
    entries: list[TopicOwners] = []
    for topic in sorted(owner):
        of_topic = owner[topic]
        name = _json_bytes(topic)
        count = len(of_topic)
        widest = len(str(max(of_topic.values())))
        if of_topic.keys() == _first(count) and name + count * (widest + 1) + 30 <= budget:
            # The usual topic: partitions 0..n-1, all in one entry.
            entries.append((topic, 0, tuple(of_topic[p] for p in range(count))))
            continue
        run: list[int] = []
        first = previous = -2
        size = 0
        for partition in sorted(of_topic):
            task = of_topic[partition]
            cost = len(str(task)) + 1
            fixed = name + len(str(first)) + 8
            if run and (partition != previous + 1 or fixed + size + cost > budget):
                entries.append((topic, first, tuple(run)))
                run, size = [], 0
            if not run:
                first = partition
            run.append(task)
            size += cost
            previous = partition
        if run:
            entries.append((topic, first, tuple(run)))
    return entries


@cache
def _first(count: int) -> frozenset[int]:
    return frozenset(range(count))


def group_entries(
    checkpoint: Sequence[Sequence[str]], budget: int = PART_BYTES
) -> list[GroupOwners]:
    """Each checkpoint task's groups, cut into several entries when they would pass
    ``budget`` bytes."""
    entries: list[GroupOwners] = []
    for index, names in enumerate(checkpoint):
        run: list[str] = []
        size = len(str(index)) + 8
        for group in names:
            cost = _json_bytes(group) + 1
            if run and size + cost > budget:
                entries.append((index, tuple(run)))
                run, size = [], len(str(index)) + 8
            run.append(group)
            size += cost
        if run:
            entries.append((index, tuple(run)))
    return entries


def entry_bytes(entry: TopicOwners | GroupOwners) -> int:
    """Bytes of ``entry`` in an event's JSON, with the comma that separates it."""
    if isinstance(entry[0], str):
        topic, first, owners = entry  # type: ignore[misc]
        digits = len(",".join(map(str, owners)))
        return _json_bytes(topic) + len(str(first)) + digits + 7
    index, names = entry  # type: ignore[misc]
    listed = sum(_json_bytes(name) for name in names) + max(0, len(names) - 1)
    return len(str(index)) + listed + 6


def _pack(
    entries: Sequence[TopicOwners | GroupOwners], budget: int
) -> list[list[TopicOwners | GroupOwners]]:
    chunks: list[list[TopicOwners | GroupOwners]] = []
    current: list[TopicOwners | GroupOwners] = []
    used = 0
    for entry in entries:
        size = entry_bytes(entry)
        if current and used + size > budget:
            chunks.append(current)
            current, used = [], 0
        current.append(entry)
        used += size
    if current:
        chunks.append(current)
    return chunks


def _split(
    chunk: Sequence[TopicOwners | GroupOwners],
) -> tuple[tuple[TopicOwners, ...], tuple[GroupOwners, ...]]:
    topics = tuple(e for e in chunk if isinstance(e[0], str))
    groups = tuple(e for e in chunk if not isinstance(e[0], str))
    return topics, groups  # type: ignore[return-value]


@lru_cache(maxsize=65536)
def _json_bytes(text: str) -> int:
    """Bytes of ``text`` as a JSON string (a topic name's characters need no escape)."""
    if _PLAIN_TEXT.fullmatch(text):
        return len(text) + 2
    return len(json.dumps(text, ensure_ascii=False).encode())


_PLAIN_TEXT = re.compile(r"[A-Za-z0-9._\- ]*")
