"""The composition root: every adapter of a driver built from its validated settings.

Nothing else in the driver builds a Kafka client (confluent-kafka's, or through
:mod:`srm_common.adapters.kafka_clients` and :func:`srm_driver.kafka_admin.admin_client`),
an event-log client, the coordinator's HTTP client, a Spark session or an HTTP server;
classes receive what they use, or a factory from here when they need one per flow, task
or target. Modules say which keys their clients need (``producer_config``); the clients
are made here. Tests build the same classes from fakes. ``tests/test_composition_roots.py``
keeps it so (it names any other module that calls a client constructor); the copy slot
(:mod:`srm_driver.copier`, a process of its own) has its own root, ``copier/clients.py``.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING

from srm_common.adapters import kafka_clients
from srm_common.adapters.control_topics import check_control_topics
from srm_common.adapters.discovery import Discovery
from srm_common.adapters.event_log_end import EventLogEnd
from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.adapters.flow_offsets import FlowOffsets
from srm_common.adapters.group_admin import ClusterGroups
from srm_common.adapters.heartbeats import BeatWriter
from srm_common.adapters.http_auth import listener_security
from srm_common.adapters.http_client import credentials
from srm_common.adapters.http_server import HttpServer
from srm_common.adapters.http_tls import listener_certificate
from srm_common.adapters.kafka_reader import TopicTail
from srm_common.config.control import ControlSettings
from srm_common.config.model import FlowConfig
from srm_common.domain.policy import mm2_offsets_topic
from srm_common.metrics.raw import RAW_TOPIC

from srm_driver.acl_sync import AclSync, AclSyncJob
from srm_driver.checkpoints import Checkpointer, CheckpointRunner
from srm_driver.control import LinkPorts
from srm_driver.coordinated_tasks import CoordinatedTaskSource
from srm_driver.coordinator_client import CoordinatorClient
from srm_driver.copying.clients import unit_settings
from srm_driver.copying.facts import FlowFacts
from srm_driver.copying.job import CopyJob
from srm_driver.copying.ports import FlowAdapters
from srm_driver.copying.service import CopyService
from srm_driver.driver import Driver
from srm_driver.flow_topics import FlowTopics
from srm_driver.heartbeats import HeartbeatEmitter, HeartbeatTask
from srm_driver.internal_writer import InternalWriter, producer_config
from srm_driver.kafka_admin import admin_client, create_topic, ensure_compacted_topic
from srm_driver.progress_store import ProgressStore
from srm_driver.raw_metrics import RawMetrics
from srm_driver.raw_metrics_writer import RAW_TOPIC_PARTITIONS, TargetWriter
from srm_driver.raw_metrics_writer import producer_config as metrics_producer_config
from srm_driver.rest import copier_principal, create_app
from srm_driver.runtime import DriverRuntime
from srm_driver.settings import DriverSettings
from srm_driver.spark import SparkStart, spark_session
from srm_driver.static_tasks import StaticTaskSource
from srm_driver.tasks import TaskSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def build(settings: DriverSettings, *, session: SparkSession | None = None) -> Driver:
    """Every part of a driver, wired; Spark is starting (on a thread of its own: the copy
    job waits for it) or ``session`` is used (and left running at the end); nothing is
    copying yet."""
    driver = Driver(settings)
    config = settings.config
    discovery = Discovery()
    access, tls = listener_security(config.extra)
    # The copy slots' channel: a secret of this run only, handed to the slots with the job.
    secret = secrets.token_urlsafe(32)
    access.add_token(copier_principal(settings.driver_id), secret)
    if settings.standalone:
        source: TaskSource = StaticTaskSource(config, discovery, flows=settings.flows)
    else:
        leader_credentials = credentials(config.extra, token_file=settings.token_file)
        coordinated = CoordinatedTaskSource(
            config,
            settings.control,
            settings.driver_id,
            discovery,
            link_ports=lambda log: link_ports(log, settings.driver_id),
            leader_client=lambda _target, leader_url: CoordinatorClient(
                leader_url, settings.driver_id, leader_credentials
            ),
        )
        source = driver.coordination = coordinated
    driver.source = source
    driver.server = HttpServer(
        create_app(driver, access),
        host=settings.host,
        port=settings.port,
        name="srm-driver http",
        access=access,
        tls=tls,
    )
    driver.closers.append(driver.server.stop)
    if session is None:
        # On a thread of its own: the flows create their topics while Spark starts.
        master, conf = settings.spark_master, settings.spark_conf
        spark = SparkStart(master, lambda: spark_session(master, conf=conf)).begin()
        driver.closers.append(spark.stop)
    else:
        spark = SparkStart.running(session)
    job = CopyJob(
        spark,
        driver.server.url,
        secret,
        server_certificate=listener_certificate(tls) if tls is not None else None,
    )
    driver.closers.append(job.close)
    flows = settings.flows
    copy = CopyService(
        adapters=lambda flow: flow_adapters(flow, settings),
        flows=flows,
        job=job,
        lease_ms=source.lease_ms,
        lease_held_since=source.lease_held_since,
        publish=source.publish,
        write_timeout_ms=settings.control.write_timeout_ms,
    )
    driver.runtime = DriverRuntime(
        source=source,
        copy=copy,
        flow_topics=lambda flow: FlowTopics(
            flow, admin_client(flow.source_admin), admin_client(flow.target_admin)
        ),
        heartbeat=lambda flow, stop: HeartbeatEmitter(flow, stop, heartbeat_task(flow)),
        checkpoints=lambda task_id, flow, task, stop: CheckpointRunner(
            task_id, checkpointer(flow, task.groups), stop
        ),
        metrics=RawMetrics(settings.driver_id, partitions=copy.metrics, writer=target_writer),
        acl_sync=lambda flow, stop: AclSyncJob(
            flow,
            stop,
            AclSync(flow, admin_client(flow.source_admin), admin_client(flow.target_admin)),
        ),
    )
    return driver


def link_ports(log: ControlSettings, driver: str) -> LinkPorts:
    """The Kafka clients of the driver's link to one target's log: the log's reader
    (opened by its follower), where the log ends, the heartbeats' writer."""
    return LinkPorts(
        reader=lambda: EventLogReader(log, client_id=f"{driver}-log-{log.cluster}"),
        end=EventLogEnd(log),
        beats=BeatWriter(log, client_id=f"{driver}-beats-{log.cluster}"),
        check=lambda: check_control_topics(log, timeout=10),
    )


def internal_writer(
    topic: str,
    producer: Mapping[str, str],
    *,
    partition: int | None = 0,
    timeout_ms: int | None = None,
) -> InternalWriter:
    """A writer of internal records to ``topic`` with a producer of its own."""
    config = producer_config(producer, timeout_ms=timeout_ms)
    return InternalWriter(topic, kafka_clients.producer(config), partition=partition)


def heartbeat_task(flow: FlowConfig) -> HeartbeatTask:
    """``flow``'s heartbeat task: its writer, and the creation of the heartbeats topic on
    the target (a new admin client each try, as the task retries it)."""
    topic = flow.replication_policy().heartbeats_topic()
    return HeartbeatTask(
        flow,
        writer=internal_writer(topic, flow.target_internal_producer),
        prepare=lambda: ensure_compacted_topic(
            admin_client(flow.target_admin),
            topic,
            replication_factor=flow.heartbeats_topic_replication_factor,
        ),
    )


def checkpointer(flow: FlowConfig, groups: tuple[str, ...]) -> Checkpointer:
    """A checkpoint task of ``flow`` holding ``groups``, with its clients."""
    topic = flow.replication_policy().checkpoints_topic(flow.source)
    target = admin_client(flow.target_admin)
    return Checkpointer(
        flow,
        groups,
        offsets=FlowOffsets(flow),
        source=ClusterGroups(admin_client(flow.source_admin), flow.source),
        target=ClusterGroups(target, flow.target),
        writer=internal_writer(topic, flow.target_internal_producer),
        prepare=lambda: ensure_compacted_topic(
            target, topic, replication_factor=flow.checkpoints_topic_replication_factor
        ),
    )


def target_writer(flow: FlowConfig) -> TargetWriter:
    """The raw metrics' writer of ``flow``'s target cluster: the topic created with the
    flow's ``srm.metrics.topic.replication.factor``."""
    admin = admin_client(flow.target_admin)
    return TargetWriter(
        flow.target,
        producer=kafka_clients.producer(metrics_producer_config(flow)),
        ensure_topic=lambda: create_topic(
            admin,
            RAW_TOPIC,
            partitions=RAW_TOPIC_PARTITIONS,
            replication_factor=flow.metrics_topic_replication_factor,
            config={"cleanup.policy": "delete"},
        ),
    )


def flow_adapters(flow: FlowConfig, settings: DriverSettings) -> FlowAdapters:
    """The clients of one flow's copying; creates its internal topics (KafkaAdminError
    when the target or the syncs cluster does not answer: tried again later)."""
    write_timeout = settings.control.write_timeout_ms
    partitions, factor = settings.progress_topics[flow.name]
    store = ProgressStore(
        flow.source,
        admin=admin_client(flow.target_admin),
        writer=internal_writer(
            mm2_offsets_topic(flow.source),
            flow.target_internal_producer,
            partition=None,
            timeout_ms=write_timeout,
        ),
        tail=TopicTail(flow.target_consumer, mm2_offsets_topic(flow.source), timeout=60.0),
        partitions=partitions,
        replication_factor=factor,
    )
    store.ensure_topic()
    policy = flow.replication_policy()
    if flow.offset_syncs_topic_location == "target":
        syncs_topic, admin, producer = (
            policy.offset_syncs_topic(flow.source),
            flow.target_admin,
            flow.target_internal_producer,
        )
    else:
        syncs_topic, admin, producer = (
            policy.offset_syncs_topic(flow.target),
            flow.source_admin,
            flow.source_producer,
        )
    ensure_compacted_topic(
        admin_client(admin),
        syncs_topic,
        replication_factor=flow.offset_syncs_topic_replication_factor,
    )
    syncs = internal_writer(syncs_topic, producer, timeout_ms=write_timeout)
    return FlowAdapters(
        flow=flow,
        store=store,
        syncs=syncs,
        facts=FlowFacts(flow, admin_client(flow.source_admin), admin_client(flow.target_admin)),
        settings=unit_settings(flow, write_timeout_ms=write_timeout),
        shared=flow.keeps_topic_names,
    )
