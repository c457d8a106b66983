"""Finding our last copy in a remote partition that other producers write too.

Under the identity policy the remote topic is the target's own topic, so the resume
cannot count records; each copy carries ``srm.copy = <source alias>/<upstream offset>``
and a restart reads the partition from the recorded position to its end for the last one.
Only done at start and after a failed batch, over at most one batch plus local writes.
"""

from __future__ import annotations

from collections.abc import Mapping

from srm_common.adapters.kafka_reader import read_partitions

COPY_HEADER = "srm.copy"


def last_copied_offset(
    consumer_config: Mapping[str, str],
    topic: str,
    partition: int,
    *,
    start: int,
    source_alias: str,
    timeout: float = 60.0,
) -> int | None:
    """Upstream offset named by the last ``srm.copy`` header of ``source_alias`` in
    ``topic``-``partition`` from offset ``start`` to the end; None if there is none."""
    prefix = f"{source_alias}/".encode()
    found: int | None = None
    for message in read_partitions(
        consumer_config,
        {(topic, partition): start},
        what=f"reading {topic}-{partition} to resume",
        timeout=timeout,
    ):
        for key, value in message.headers() or ():
            if key == COPY_HEADER and value is not None and value.startswith(prefix):
                found = int(value[len(prefix) :])
    return found
