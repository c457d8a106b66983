"""The Faust app: thin agents over the pure folds (:mod:`srm_metrics_aggregator.raw_folder`,
:mod:`srm_metrics_aggregator.merger`).

Topics on the aggregated cluster (``<id>`` is ``srm.metrics.aggregator.id``)::

    srm-metrics-raw.internal          in: drivers' samples (created here if missing)
    <id>.contributions.internal       windows of one subject, keyed by the one above
    <id>.raw-state.internal           changelog of the raw fold's table (compacted)
    <id>.merge-state.internal         changelog of the merge's table (compacted)
    srm-metrics-aggregated.internal   out: every window, keyed by window and subject
    srm-metrics-dead.internal         out: records not folded, reason in header srm.reason

Every instance with the same id joins one consumer group: Kafka shares the raw and the
contribution partitions among them, and each table partition moves with its topic
partition (Faust recovers it from its changelog before the agent reads on). Tables live
in memory (Faust's ``memory://`` store): the changelogs are what survives a crash.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

import faust
from confluent_kafka.admin import AdminClient, NewTopic
from srm_common import telemetry
from srm_common.adapters.kafka_reader import read_partitions
from srm_common.metrics.aggregate import AGGREGATED_TOPIC, DEAD_TOPIC
from srm_common.metrics.raw import RAW_TOPIC

from srm_metrics_aggregator.credentials import broker_credentials
from srm_metrics_aggregator.fold_records import AGGREGATED, CONTRIBUTIONS, DEAD, Out
from srm_metrics_aggregator.merger import Merger
from srm_metrics_aggregator.raw_folder import RawFolder
from srm_metrics_aggregator.settings import AggregatorSettings

log = logging.getLogger("srm_metrics_aggregator")


class TableState(MutableMapping[str, bytes]):
    """A Faust table as the folds' state: keys are text to the folds and bytes in the
    table, so they read back the same after the changelog restored them."""

    def __init__(self, table: faust.Table) -> None:
        self.table = table

    def __getitem__(self, key: str) -> bytes:
        value = self.table[key.encode()]
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: bytes) -> None:
        self.table[key.encode()] = value

    def __delitem__(self, key: str) -> None:
        del self.table[key.encode()]

    def __iter__(self) -> Iterator[str]:
        return (key.decode() for key in list(self.table.keys()))

    def __len__(self) -> int:
        return len(self.table)


def prepare_topics(
    settings: AggregatorSettings, admin: AdminClient, timeout: float = 30
) -> tuple[int, int]:
    """Create what is missing of the raw topic and the aggregator's own topics (Faust
    ignores for good a topic it subscribes to before it exists) through ``admin`` (the
    aggregated cluster's); the raw topic's partition count, which every other topic gets,
    and their replication factor."""
    deadline = time.monotonic() + timeout
    metadata = admin.list_topics(timeout=timeout)
    factor = settings.replication_factor or min(3, max(1, len(metadata.brokers)))
    described = metadata.topics.get(RAW_TOPIC)
    if described is None or described.error is not None:
        _create(admin, RAW_TOPIC, settings.raw_partitions, factor, {}, timeout)
    partitions = _raw_partitions(admin, deadline)
    compacted = {"cleanup.policy": "compact"}
    own = {
        settings.topic("contributions"): {},
        settings.topic("raw-state"): compacted,
        settings.topic("merge-state"): compacted,
        AGGREGATED_TOPIC: compacted,
        DEAD_TOPIC: {},
    }
    for name, config in own.items():
        if name not in metadata.topics:
            _create(admin, name, partitions, factor, config, timeout)
    return partitions, factor


def _raw_partitions(admin: AdminClient, deadline: float) -> int:
    """The raw topic's partition count once its metadata shows every partition with a
    leader: just created (by us, a driver or a twin), it can be listed with an error or
    no partitions for a moment, and Faust must not be built on a count of 0."""
    while True:
        left = max(1.0, deadline - time.monotonic())
        described = admin.list_topics(RAW_TOPIC, timeout=left).topics.get(RAW_TOPIC)
        ready = described is not None and described.error is None and described.partitions
        if ready and all(p.leader >= 0 for p in described.partitions.values()):
            return len(described.partitions)
        if time.monotonic() >= deadline:
            error = described.error if described is not None else "not listed"
            raise TimeoutError(f"{RAW_TOPIC} has no partitions with leaders yet ({error})")
        time.sleep(0.5)


def _create(
    admin: AdminClient,
    name: str,
    partitions: int,
    factor: int,
    config: dict[str, str],
    timeout: float,
) -> None:
    topic = NewTopic(name, num_partitions=partitions, replication_factor=factor, config=config)
    try:
        admin.create_topics([topic])[name].result(timeout)
        log.info("created %s (%d partitions, replication factor %d)", name, partitions, factor)
    except Exception as exc:  # created meanwhile (by a driver, a twin): fine
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise


def build_app(
    settings: AggregatorSettings, *, partitions: int, replication_factor: int, datadir: str
) -> faust.App:
    """The app, its topics, tables and agents; nothing connects before the worker starts."""
    app = faust.App(
        settings.app_id,
        broker=[f"kafka://{server}" for server in settings.bootstrap_servers],
        broker_credentials=broker_credentials(settings.client),
        store="memory://",
        datadir=datadir,
        web_enabled=False,
        topic_disable_leader=True,
        topic_partitions=partitions,
        topic_replication_factor=replication_factor,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        key_serializer="raw",
        value_serializer="raw",
        table_standby_replicas=1,
        # A killed instance's partitions move after 10 s (Faust's default: 60 s).
        broker_session_timeout=10.0,
        broker_heartbeat_interval=1.0,
    )

    def topic(name: str, **options: Any) -> faust.TopicT:
        return app.topic(
            name,
            key_type=bytes,
            value_type=bytes,
            key_serializer="raw",
            value_serializer="raw",
            **options,
        )

    def own(name: str, *, compacting: bool) -> faust.TopicT:
        return topic(
            name,
            partitions=partitions,
            replicas=replication_factor,
            internal=True,
            compacting=compacting,
            deleting=not compacting,
        )

    raw_topic = topic(RAW_TOPIC)
    contributions = own(settings.topic("contributions"), compacting=False)
    outputs = {
        AGGREGATED: own(AGGREGATED_TOPIC, compacting=True),
        DEAD: own(DEAD_TOPIC, compacting=False),
        CONTRIBUTIONS: contributions,
    }

    def table(name: str) -> TableState:
        return TableState(
            app.Table(
                name,
                partitions=partitions,
                key_type=bytes,
                value_type=bytes,
                changelog_topic=own(settings.topic(name), compacting=True),
            )
        )

    folder = RawFolder(table("raw-state"), settings.folds)
    merger = Merger(table("merge-state"), settings.folds)

    # One sender at a time, records in the order the folds made them: else a timer's
    # update of an open window could land after the agent closed it.
    sending = asyncio.Lock()

    # Service metrics (OpenTelemetry; exported only when configured): records sent by
    # role (aggregated, contributions, dead: dead-lettered) and what the folds did.
    meter = telemetry.meter()
    sent = meter.create_counter("srm.aggregator.records.sent", description="records out by role")
    outcomes = meter.create_counter(
        "srm.aggregator.records.read", description="records read by what the fold did"
    )
    exported: Counter[tuple[str, str]] = Counter()

    async def send(outs: Iterable[Out]) -> None:
        for out in outs:
            await outputs[out.role].send(key=out.key, value=out.value, headers=list(out.headers))
            sent.add(1, {"role": out.role})

    def count_outcomes() -> None:
        for fold, counts in (("raw", folder.counts), ("merge", merger.counts)):
            for outcome, total in list(counts.items()):
                added = total - exported[(fold, outcome)]
                if added > 0:  # (after a reset of the folds, counting starts again)
                    outcomes.add(added, {"fold": fold, "outcome": outcome})
                exported[(fold, outcome)] = total

    reader_config = {**settings.client, "bootstrap.servers": ",".join(settings.bootstrap_servers)}

    def skipped(
        topic_name: str, start: int | None, partition: int, offset: int
    ) -> list[tuple[int, bytes | None, bytes | None]]:
        """The records of ``partition`` from ``start`` (the offset after the last one
        folded; None: nothing folded there yet, so from the log's start) to ``offset``:
        Faust drops the records it fetched before a rebalance and acknowledges them, so
        their offsets may be committed unread, also before the first record folded."""
        start = 0 if start is None else start
        if start >= offset:
            return []
        found = []
        for message in read_partitions(
            reader_config,
            {(topic_name, partition): start},
            what=f"{topic_name} [{partition}] {start}..{offset - 1}, skipped by Faust",
            limit=offset - start,
        ):
            if message.offset() < offset:
                found.append((message.offset(), message.key(), message.value()))
        if not found:
            return []  # before the log's start: deleted by retention, nothing skipped
        log.warning(
            "%s [%d]: %d records at %d..%d skipped in a rebalance, read directly",
            topic_name,
            partition,
            len(found),
            start,
            offset - 1,
        )
        return found

    @app.agent(raw_topic, name="fold-raw")
    async def fold_raw(stream: faust.StreamT) -> None:
        async for event in stream.events():
            message = event.message
            async with sending:
                start = folder.next_offset(message.partition)
                for offset, key, value in skipped(
                    RAW_TOPIC, start, message.partition, message.offset
                ):
                    await send(folder.fold(message.partition, key, value, offset))
                await send(
                    folder.fold(message.partition, message.key, message.value, message.offset)
                )

    @app.agent(contributions, name="merge")
    async def merge(stream: faust.StreamT) -> None:
        async for event in stream.events():
            message = event.message
            async with sending:
                start = merger.next_offset(message.partition)
                for offset, key, value in skipped(
                    message.topic, start, message.partition, message.offset
                ):
                    await send(merger.merge(message.partition, key, value, offset))
                await send(
                    merger.merge(message.partition, message.key, message.value, message.offset)
                )

    @app.timer(interval=0.5)
    async def flush_open_windows() -> None:
        async with sending:
            await send(folder.flush())
            await send(merger.flush())

    @app.timer(interval=0.5)
    async def resend_after_rebalance() -> None:
        if app.rebalancing or app.in_recovery:
            return  # the tables are not restored yet
        held = app.consumer.assignment()
        async with sending:
            for tp in held:
                if tp.topic == RAW_TOPIC:
                    await send(folder.resend(tp.partition))
                elif tp.topic == contributions.get_topic_name():
                    await send(merger.resend(tp.partition))

    reported: list[str] = [""]

    @app.timer(interval=2.0)
    async def report() -> None:
        count_outcomes()
        line = f"raw records {dict(folder.counts)}; contributions {dict(merger.counts)}"
        if line != reported[0]:
            reported[0] = line
            log.info("%s", line)

    def forget(*_args: Any, **_kwargs: Any) -> None:
        folder.reset()
        merger.reset()

    async def on_assigned(sender: Any, assigned: Any, **_kwargs: Any) -> None:
        forget()
        raw = sorted(tp.partition for tp in assigned if tp.topic == RAW_TOPIC)
        log.info("assigned raw partitions %s of %s", raw, RAW_TOPIC)

    async def on_revoked(sender: Any, revoked: Any, **_kwargs: Any) -> None:
        forget()

    app.on_partitions_assigned.connect(on_assigned)
    app.on_partitions_revoked.connect(on_revoked)
    return app
