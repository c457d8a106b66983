"""``make bench --codec zstd|lz4|gzip|snappy``: the data set on a compressed topic.

The data set is then written by a producer compressing with that codec into a topic at
``compression.type=producer`` (Kafka's default), and its values are JSON documents that
compress as real topics do (the default data set's random bytes do not compress at all),
each different from the others, so that the bytes compress as much as JSON does and not
as much as repetition would. Each replicator's copy is judged by what it costs (the
catch-up's steady CPU seconds per GiB, as without ``--codec``) and what it leaves: the
bytes of the remote topic's log segments against the source's, and the codec of the
remote batches (read from the log with a raw Fetch, :mod:`srm_harness.log_batches`).

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
# Distinct documents: more than a source batch holds per partition (the load writes
# batches of up to 1 MB, record i to partition i % partitions), so no batch holds the
# same document twice and the byte ratios are those of JSON, not of repetition.
DOCUMENTS = 16384
_SEED = 20261126
_WORDS = (
    "order", "customer", "shipped", "pending", "paid", "refund", "warehouse", "berlin",
    "lisbon", "express", "standard", "priority", "invoice", "sku", "quantity", "price",
)  # fmt: skip


def json_values(record_size: int, count: int = DOCUMENTS) -> list[bytes]:
    """``count`` distinct JSON documents of ``record_size`` bytes (space padded; a size
    too small for one event gives the document cut to that size): order events with
    random ids, times, amounts and a trace id each, as an API writes them."""
    rng = random.Random(_SEED)
    values = []
    for n in range(count):
        customer = rng.randrange(10**7)
        events: list[dict[str, object]] = []
        text = json.dumps({"id": n, "customer": customer, "events": events})
        while True:
            events.append(
                {
                    "type": rng.choice(_WORDS),
                    "at": 1_700_000_000_000 + rng.randrange(10**9),
                    "city": rng.choice(_WORDS),
                    "sku": f"{rng.choice(_WORDS)}-{rng.randrange(10**5)}",
                    "amount": round(rng.random() * 1000, 2),
                    "trace": rng.randbytes(8).hex(),
                }
            )
            longer = json.dumps({"id": n, "customer": customer, "events": events})
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

    def describe(self) -> dict[str, object]:
        return {
            "target_mb": round(self.target_mb, 2),
            "target_ratio": round(self.target_ratio, 3),
            "target_codecs": list(self.target_codecs),
        }


def measure_codec(
    source_folder: Path,
    target_folder: Path,
    target_bootstrap: str,
    topic: str,
    remote: str,
) -> CodecResult:
    """The copy's bytes and codec on the target (once it caught up)."""
    from srm_harness.log_batches import data_codecs, log_batches

    source, target = log_bytes(source_folder, topic), log_bytes(target_folder, remote)
    codecs = data_codecs(log_batches(target_bootstrap, remote, first=20))
    return CodecResult(
        target_mb=target / 2**20,
        target_ratio=target / source if source else float("nan"),
        target_codecs=tuple(sorted(codecs)),
    )
