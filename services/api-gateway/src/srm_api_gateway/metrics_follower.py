"""Reads the aggregated metrics topic of every target cluster into the store, with
aiokafka on an event loop of its own thread, from the beginning (the topic is compacted:
what it holds is the latest of each window).

A cluster that does not answer, or has no aggregated topic yet, is retried without
stopping the others; a record that is not an aggregate is skipped and counted with its
reason (``status()``), never stored.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from srm_common.adapters.kafka_clients import aiokafka_security
from srm_common.errors import SrmError
from srm_common.metrics.aggregate import AGGREGATED_TOPIC, Aggregate, AggregateError, read
from srm_common.metrics.raw import TopicMapping
from srm_common.redaction import redact_text

from srm_api_gateway.metric_store import MetricStore

if TYPE_CHECKING:
    from aiokafka import AIOKafkaConsumer

log = logging.getLogger(__name__)

RETRY_S = 5.0


def consumer_options(alias: str, keys: Mapping[str, str]) -> dict[str, Any]:
    """The options of the consumer of ``alias``'s aggregated metrics (the composition root
    builds it); SrmError or ValueError when its security settings cannot be read."""
    return {
        "bootstrap_servers": keys["bootstrap.servers"],
        **aiokafka_security(keys),
        "group_id": None,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "metadata_max_age_ms": 5000,
        "client_id": f"srm-api-gateway-{alias}",
    }


class MetricsFollower:
    """``start()``/``close()``; ``clusters`` maps alias -> the cluster's client keys
    (MM2's Java keys, security included) or just its bootstrap servers; ``sink`` (the SQL
    read model) is given every record stored, with where it was read; ``consumer(alias,
    keys)`` makes a consumer of a cluster (made from :func:`consumer_options`), again
    after each failure."""

    def __init__(
        self,
        clusters: Mapping[str, str | Mapping[str, str]],
        store: MetricStore,
        sink: Callable[[str, int, int, Aggregate | TopicMapping], None] | None = None,
        *,
        consumer: Callable[[str, Mapping[str, str]], AIOKafkaConsumer],
    ) -> None:
        self._consumer = consumer
        self._clusters = {
            alias: {"bootstrap.servers": keys} if isinstance(keys, str) else dict(keys)
            for alias, keys in clusters.items()
        }
        self._store = store
        self._sink = sink
        self._stop = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._status: dict[str, dict[str, object]] = {
            alias: {"records": 0, "skipped": 0, "last_skipped": None, "error": None}
            for alias in self._clusters
        }
        self._thread = threading.Thread(target=self._run, name="metrics", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(lambda: None)
        self._thread.join(10)

    def status(self) -> dict[str, dict[str, object]]:
        return {alias: dict(values) for alias, values in self._status.items()}

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        tasks = [asyncio.create_task(self._follow(a, s)) for a, s in self._clusters.items()]
        while not self._stop.is_set():
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _follow(self, alias: str, keys: Mapping[str, str]) -> None:
        from aiokafka.errors import KafkaError

        status = self._status[alias]
        while not self._stop.is_set():
            # Subscribed only once the topic exists: aiokafka logs an ERROR line for a
            # missing topic at every metadata refresh, hundreds before an aggregator
            # creates it.
            try:
                consumer = self._consumer(alias, keys)
            except (SrmError, ValueError) as exc:  # a store that cannot be read: said once
                status["error"] = str(exc)
                log.error("metrics of %s cannot be read: %s", alias, exc)
                return
            try:
                await consumer.start()
                while AGGREGATED_TOPIC not in await consumer.topics():
                    status["error"] = f"no {AGGREGATED_TOPIC} yet (an aggregator creates it)"
                    await asyncio.sleep(RETRY_S)
                    if self._stop.is_set():
                        return
                consumer.subscribe([AGGREGATED_TOPIC])
                status["error"] = None
                while not self._stop.is_set():
                    batches = await consumer.getmany(timeout_ms=500, max_records=2000)
                    for records in batches.values():
                        for record in records:
                            self._take(alias, record.value, record.offset, record.partition)
            except asyncio.CancelledError:
                raise
            except (KafkaError, OSError) as exc:
                reason = redact_text(f"{type(exc).__name__}: {exc}")
                status["error"] = reason
                log.warning("metrics of %s: %s (retrying in %.0f s)", alias, reason, RETRY_S)
            finally:
                await consumer.stop()
            await asyncio.sleep(RETRY_S)

    def _take(self, alias: str, value: bytes | None, offset: int, partition: int = 0) -> None:
        status = self._status[alias]
        try:
            record = read(value)
        except AggregateError as exc:
            status["skipped"] = int(status["skipped"]) + 1  # type: ignore[call-overload]
            status["last_skipped"] = f"{AGGREGATED_TOPIC}@{offset}: {exc}"
            return
        self._store.add(record, alias)
        if self._sink is not None:
            self._sink(alias, partition, offset, record)
        status["records"] = int(status["records"]) + 1  # type: ignore[call-overload]
