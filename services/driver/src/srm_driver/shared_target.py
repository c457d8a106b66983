"""Finding our last copy in a remote partition that other producers write too.

Under the identity policy the remote topic is the target's own topic, so the resume
cannot count records; each copy carries ``srm.copy = <source alias>/<upstream offset>``
and a restart reads the partition from the recorded position to its end for the last one.
Only done at start and after a failed batch, over at most one batch plus local writes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, TopicPartition

from srm_driver.kafka_admin import KafkaAdminError

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
    consumer = Consumer(
        {
            **consumer_config,
            "group.id": f"srm-resume-scan-{source_alias}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_uncommitted",
        }
    )
    found: int | None = None
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        begin = max(start, low)
        if begin >= high:
            return None
        consumer.assign([TopicPartition(topic, partition, begin)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return found
                raise KafkaAdminError(f"reading {topic}-{partition} to resume: {error}")
            for key, value in message.headers() or ():
                if key == COPY_HEADER and value is not None and value.startswith(prefix):
                    found = int(value[len(prefix) :])
            if message.offset() + 1 >= high:
                return found
        raise KafkaAdminError(f"could not read {topic}-{partition} to its end within {timeout} s")
    finally:
        consumer.close()
