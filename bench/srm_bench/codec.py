"""``make bench --codec zstd|lz4|gzip|snappy``: the data set on a compressed topic.

The data set is then written by a producer compressing with that codec into a topic at
``compression.type=producer`` (Kafka's default), and its values are JSON documents that
compress as real topics do (the default data set's random bytes do not compress at all).
Each replicator's copy is judged by what it costs and what it leaves: CPU seconds per GiB
of record values (start-up included, as the catch-up's CPU time), the bytes of the
remote topic's log segments against the source's, and the codec of the remote batches
(read from the log with a raw Fetch, :mod:`srm_local.log_batches`).

MirrorMaker 2 with defaults writes with its producer's default (none). MirrorMaker 2
tuned gets the data set's codec as ``backup.producer.compression.type``, which is what a
careful operator does for a compressed topic; SRM gets no setting: it takes the codec
from the source topic.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

CODECS = ("zstd", "lz4", "gzip", "snappy")
_SEED = 20261126
_WORDS = (
    "order", "customer", "shipped", "pending", "paid", "refund", "warehouse", "berlin",
    "lisbon", "express", "standard", "priority", "invoice", "sku", "quantity", "price",
)  # fmt: skip


def json_values(record_size: int, count: int = 64) -> list[bytes]:
    """``count`` JSON documents of ``record_size`` bytes (space padded; a size too small
    for one event gives the document cut to that size)."""
    rng = random.Random(_SEED)
    values = []
    for n in range(count):
        events: list[dict[str, object]] = []
        text = json.dumps({"id": n, "events": events})
        while True:
            events.append(
                {
                    "type": rng.choice(_WORDS),
                    "at": 1_700_000_000_000 + rng.randrange(10**9),
                    "city": rng.choice(_WORDS),
                    "amount": round(rng.random() * 1000, 2),
                }
            )
            longer = json.dumps({"id": n, "events": events})
            if len(longer) > record_size:
                break
            text = longer
        values.append(text.encode()[:record_size].ljust(record_size, b" "))
    return values


def log_bytes(cluster_folder: Path, topic: str) -> int:
    """Bytes of ``topic``'s log segments in a local cluster's data folder."""
    data = cluster_folder / "data"
    return sum(
        segment.stat().st_size
        for folder in data.glob(f"{topic}-*")
        if folder.name.rpartition("-")[0] == topic
        for segment in folder.glob("*.log")
    )


@dataclass(frozen=True)
class CodecResult:
    """What one replicator's copy of the compressed data set left on the target."""

    target_mb: float
    target_ratio: float  # target bytes / source bytes
    target_codecs: tuple[str, ...]
    cpu_s_per_gib: float

    def describe(self) -> dict[str, object]:
        return {
            "target_mb": round(self.target_mb, 2),
            "target_ratio": round(self.target_ratio, 3),
            "target_codecs": list(self.target_codecs),
            "cpu_s_per_gib": round(self.cpu_s_per_gib, 2),
        }


def measure_codec(
    source_folder: Path,
    target_folder: Path,
    target_bootstrap: str,
    topic: str,
    remote: str,
    cpu_seconds: float,
    value_bytes: int,
) -> CodecResult:
    """The copy's bytes and codec on the target (once it caught up), and its CPU time per
    GiB of record values."""
    from srm_local.log_batches import data_codecs, log_batches

    source, target = log_bytes(source_folder, topic), log_bytes(target_folder, remote)
    codecs = data_codecs(log_batches(target_bootstrap, remote, first=20))
    return CodecResult(
        target_mb=target / 2**20,
        target_ratio=target / source if source else float("nan"),
        target_codecs=tuple(sorted(codecs)),
        cpu_s_per_gib=cpu_seconds / (value_bytes / 2**30),
    )
