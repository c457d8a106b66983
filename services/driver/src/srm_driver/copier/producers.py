"""A unit's producers of copies: one per codec its partitions' sources use.

librdkafka compresses with one codec per producer (confluent-kafka has no per-record or
per-topic codec), so a unit whose partitions come from topics of different codecs holds
one producer for each, made at its first copy. Each partition sends to one of them at a
time (:meth:`~srm_driver.copier.partition.PartitionCopy.change_codec`), so the broker sees
one idempotent producer per remote partition, in sequence, as with a single producer.
Whatever happens to one producer happens to all (the unit's rules: the first failure
purges every one of them), so the unit treats them as one.

A flow whose producer config sets ``compression.type`` keeps that codec for every copy
(MirrorMaker 2's behaviour, which that setting asks for); otherwise a partition's copies
get its source topic's codec, and a partition whose codec is not known yet gets
librdkafka's default (none).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Producer

from srm_driver.copier import clients


class Producers:
    """See the module docstring; used under the unit's lock, like one producer."""

    def __init__(self, settings: Mapping[str, str], delivered: Callable[[Any, Any], None]) -> None:
        self._settings = settings
        self._delivered = delivered
        self._configured = "compression.type" in settings
        self._by_codec: dict[str, Producer] = {}

    def for_codec(self, codec: str) -> Producer:
        """The producer of copies compressed with ``codec`` ("": the configured one)."""
        key = "" if self._configured else codec
        producer = self._by_codec.get(key)
        if producer is None:
            settings = {**self._settings, "compression.type": key} if key else self._settings
            producer = self._by_codec[key] = clients.producer(settings, self._delivered)
        return producer

    def __len__(self) -> int:
        """Copies queued or in flight, in all of them."""
        return sum(len(producer) for producer in self._by_codec.values())

    def poll(self, timeout: float = 0) -> int:
        """Serve delivery reports of all of them: waiting up to ``timeout`` on the one
        with most in flight when the others had none (raises what ``poll`` raises)."""
        producers = list(self._by_codec.values())
        if len(producers) == 1:
            return int(producers[0].poll(timeout))
        served = 0
        for producer in producers:
            served += producer.poll(0)
        if served == 0 and timeout > 0 and producers:
            served += max(producers, key=len).poll(timeout)
        return served

    def purge(self, *, in_queue: bool, in_flight: bool) -> None:
        for producer in self._by_codec.values():
            producer.purge(in_queue=in_queue, in_flight=in_flight)
