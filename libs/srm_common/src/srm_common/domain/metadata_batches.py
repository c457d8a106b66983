"""Admin changes cut into requests the KRaft controller accepts. Pure.

The controller refuses a request whose changes generate more than 10,000 metadata
records in one user operation (``QuorumController.MAX_RECORDS_PER_USER_OP``), whole:
``PolicyViolationException: Unable to perform excessively large batch operation`` (and
a request adding more than 10,000 partitions with ``Excessively large number of
partitions per request``). One
new topic costs one topic record, one record per partition and one per config; growing a
topic one per partition added; a config change one per config set or deleted; an ACL one
per binding. So a change is cut by its records, largest first request never past the
limit::

    1,000 new topics x 10 partitions, 2 configs each: 13 records a topic, 13,000 in all
    limit 10,000:  request 1: 769 topics (9,997 records)   request 2: 231 (3,003)

A request the controller still refuses (its records counted otherwise, or a lower cap)
is split in halves and each sent again (:func:`halves`); a single change that alone
passes the limit (a topic of more partitions than it allows) is made in steps instead:
created with as many partitions as fit, then grown (:func:`growth_steps`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

# KRaft's cap on the records of one user operation (Kafka 3.x and 4.x).
MAX_RECORDS_PER_REQUEST = 10_000
# What the controller says when it refuses a request for that cap: "Unable to perform
# excessively large batch operation." (records), or "Excessively large number of
# partitions per request." (a request adding more than 10,000 partitions), both
# POLICY_VIOLATION (measured on Kafka 4.1.1).
TOO_LARGE_MESSAGE = "excessively large"


def new_topic_records(partitions: int, configs: int) -> int:
    """Records one new topic generates: the topic, its partitions, its configs."""
    return 1 + partitions + configs


def chunks(items: Sequence[T], cost: Callable[[T], int], limit: int) -> list[list[T]]:
    """``items`` in order, cut into runs whose costs add up to at most ``limit`` (an item
    that alone costs more goes alone). ``ValueError`` when ``limit`` is below 1."""
    if limit < 1:
        raise ValueError(f"the records limit must be at least 1, got {limit}")
    cut: list[list[T]] = []
    current: list[T] = []
    used = 0
    for item in items:
        price = max(1, cost(item))
        if current and used + price > limit:
            cut.append(current)
            current, used = [], 0
        current.append(item)
        used += price
    if current:
        cut.append(current)
    return cut


def halves(chunk: Sequence[T]) -> tuple[list[T], list[T]]:
    """A refused request's items as two requests (the first holds the odd one)."""
    middle = (len(chunk) + 1) // 2
    return list(chunk[:middle]), list(chunk[middle:])


def growth_steps(current: int, wanted: int, limit: int) -> list[int]:
    """Partition counts to grow a topic through, from ``current`` to ``wanted``, each
    step adding at most ``limit`` partitions; empty when nothing is to grow."""
    if limit < 1:
        raise ValueError(f"the records limit must be at least 1, got {limit}")
    steps = []
    count = current
    while count < wanted:
        count = min(wanted, count + limit)
        steps.append(count)
    return steps


def partitions_at_creation(partitions: int, configs: int, limit: int) -> int:
    """How many partitions a new topic can be created with in one request; the rest is
    added by growing it (at least 1)."""
    return max(1, min(partitions, limit - 1 - configs))


def is_too_large(message: str) -> bool:
    """Whether a refusal is the controller's cap on one operation (not a topic policy)."""
    return TOO_LARGE_MESSAGE in message.lower()
