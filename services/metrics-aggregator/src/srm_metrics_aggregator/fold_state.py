"""The folds' state (:data:`Store`, a Faust table with a changelog in the service, a dict
in tests): each record applied once (:func:`once`), and state keys by partition
(:func:`scan_keys`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

from srm_metrics_aggregator.fold_records import Out

Store = MutableMapping[str, bytes]


def once(
    store: Any,
    counts: Any,
    partition: int,
    offset: int | None,
    outs: list[Out],
    work: Callable[[int, bytes | None, bytes | None], list[Out]],
    key: bytes | None,
    value: bytes | None,
) -> list[Out]:
    """``outs`` plus what ``work`` sends for the record at ``offset`` of ``partition``,
    unless that offset was done already (a replay after a crash: counted, skipped). The
    offset is written last, to the same changelog partition as the state: when it is
    there after a crash, so is everything the record changed."""
    if offset is not None:
        done = store.get(f"o|{partition}")
        if done is not None and offset <= int(done):
            counts["replayed"] += 1
            return outs
    outs.extend(work(partition, key, value))
    if offset is not None:
        store[f"o|{partition}"] = str(offset).encode()
    return outs


def scan_keys(keys: Iterable[str], prefix: str) -> dict[int, list[str]]:
    """Keys ``prefix|<partition>|...`` by partition."""
    found: dict[int, list[str]] = {}
    for key in keys:
        kind, _, rest = key.partition("|")
        if kind == prefix:
            found.setdefault(int(rest.split("|", 1)[0]), []).append(key)
    return {p: sorted(keys) for p, keys in found.items()}
