"""A clean stop (SIGTERM) leaves every partition's recorded progress where its copy ends,
on both copy paths, even when the target refuses the progress write for a moment then.

At a stop the copy slots finish what they sent and report it one last time; the driver
records each partition's final progress from that report (``copying/reports.py``). One
driver process runs two flows between the session's clusters, under aliases of this
test's own (so the progress topics are this test's): ``east->west`` passes whole batches
through (``srm.copy.batches``), ``west->east`` copies record by record. Progress is
recorded only when the plan is made and at the stop (a commit interval of 10 minutes):
whatever the slots copied is in the progress topic only if the final report was taken.

Once both copies caught up, both progress topics refuse every write (their
``max.message.bytes`` below a progress record), the driver gets SIGTERM, and the topics
take writes again once the driver said it cannot record progress and then a slot ended
or 2 s passed. A slot asks the driver again to take its last report while it is refused
(``copier/control.py``, ``FINAL_REPORT_S``); before, it gave up after three tries in
about 0.15 s, and the progress stayed where the plan put it. (The progress left behind
the copy after test_batch_copy.py's kill -9 test has another cause, by design: see the
comment there.) Then every partition's progress, read as the driver reads it
(``ProgressStore``), says: the next upstream offset is the source's end, the next copy
lands at the remote partition's end (the same offsets: no gaps), and nothing is reserved
(the release's mark).
"""

from __future__ import annotations

import re
import signal
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from srm_common.adapters.kafka_reader import TopicTail
from srm_common.config.loader import load_config
from srm_common.domain.policy import mm2_offsets_topic
from srm_common.domain.progress import Progress
from srm_driver.bootstrap import internal_writer
from srm_driver.progress_store import ProgressStore
from srm_harness.clients import admin, end_offsets, list_topics, produce
from srm_harness.control import write_config
from srm_harness.processes import DriverProcess
from srm_harness.records import RECENT_MS, Record
from srm_harness.waits import wait_caught_up, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 2
RECORDS = 600
SLOT_ENDED = re.compile(r"copy slot \d+ of job \w+ ended")


def _refuse_writes(bootstrap: str, topic: str, refuse: bool) -> None:
    """``topic`` refuses every record (max.message.bytes 1), or is back on the default."""
    entry = (
        ConfigEntry("max.message.bytes", "1", incremental_operation=AlterConfigOpType.SET)
        if refuse
        else ConfigEntry("max.message.bytes", None, incremental_operation=AlterConfigOpType.DELETE)
    )
    handle = admin(bootstrap)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    for future in handle.incremental_alter_configs([resource]).values():
        future.result(30)

    def applied() -> bool:
        described = handle.describe_configs([ConfigResource(ResourceType.TOPIC, topic)])
        configs = next(iter(described.values())).result(10)
        return (configs["max.message.bytes"].value == "1") == refuse

    wait_until(applied, 30, f"{topic} {'refuses' if refuse else 'takes'} writes", step=0.1)


def _recorded(config: Path, source: str, target: str) -> Mapping[tuple[str, int], Progress]:
    """The progress of flow ``source->target`` as the driver reads it."""
    flow = load_config(config).flow(source, target)
    topic = mm2_offsets_topic(flow.source)
    store = ProgressStore(
        flow.source,
        admin=AdminClient(dict(flow.target_admin)),
        writer=internal_writer(topic, flow.target_internal_producer, partition=None),
        tail=TopicTail(flow.target_consumer, topic, timeout=60.0),
    )
    try:
        return dict(store.load())
    finally:
        store.close()


def test_a_clean_stop_records_where_each_copy_ends_even_if_refused_a_while(kafka, tmp_path):  # type: ignore[no-untyped-def]
    token = uuid.uuid4().hex[:8]
    east, west = f"east{token}", f"west{token}"
    bootstrap = {east: kafka["primary"], west: kafka["backup"]}
    fixture_alias = {east: "primary", west: "backup"}
    batches = kafka.create_topic("primary", f"batches-{token}", partitions=PARTITIONS)
    records = kafka.create_topic("backup", f"records-{token}", partitions=PARTITIONS)
    # (source, target) -> its topic, whether it passes batches through
    flows = {(east, west): (batches, True), (west, east): (records, False)}
    for (source, _target), (topic, _batches) in flows.items():
        produce(bootstrap[source], topic, [
            Record(b"k%d" % n, b"value %d " % n * 20, (("n", b"%d" % n),), RECENT_MS + n,
                   n % PARTITIONS)
            for n in range(RECORDS)
        ], config={"linger.ms": "20"})  # fmt: skip
    config = write_config(
        tmp_path,
        bootstrap,
        flows={
            f"{source}->{target}": {
                "enabled": True,
                "topics": [topic],
                "srm.copy.batches": whole,
                "srm.commit.interval.ms": 600_000,
            }
            for (source, target), (topic, whole) in flows.items()
        },
    )
    driver = DriverProcess(config, tmp_path / "driver.log")
    progress_topics = [(bootstrap[target], mm2_offsets_topic(source)) for source, target in flows]
    refusing = False
    try:
        driver.start()
        for (source, target), (topic, _batches) in flows.items():
            wait_caught_up(
                bootstrap[source], topic, bootstrap[target], f"{source}.{topic}", 180,
                stalled_after=120, detail=lambda: driver.log_text()[-3000:],
            )  # fmt: skip
        refusing = True
        for where, topic in progress_topics:
            _refuse_writes(where, topic, refuse=True)
        assert driver.process is not None
        driver.process.send_signal(signal.SIGTERM)
        wait_until(
            lambda: "cannot record progress of" in driver.log_text(),
            60,
            "the driver refuses the final reports it cannot record",
            detail=lambda: driver.log_text()[-3000:],
            step=0.1,
        )
        refused_at = time.monotonic()
        # Well inside the slot's FINAL_REPORT_S (5 s), with the time the topics take to
        # take writes again.
        while time.monotonic() - refused_at < 2 and not SLOT_ENDED.search(driver.log_text()):
            time.sleep(0.1)
        for where, topic in progress_topics:
            _refuse_writes(where, topic, refuse=False)
        refusing = False
        assert driver.process.wait(60) == 0, driver.log_text()[-3000:]
    finally:
        for where, topic in progress_topics if refusing else ():
            _refuse_writes(where, topic, refuse=False)
        if driver.alive():
            driver.kill9()
        for alias, where in bootstrap.items():
            made = [(fixture_alias[alias], t) for t in list_topics(where) if token in t]
            kafka.created += [pair for pair in made if pair not in kafka.created]

    for (source, target), (topic, whole) in flows.items():
        ends = end_offsets(bootstrap[source], topic)
        remote = end_offsets(bootstrap[target], f"{source}.{topic}")
        assert remote == ends and sum(ends.values()) == RECORDS
        recorded = _recorded(config, source, target)
        path = "batches" if whole else "records"
        for partition, end in ends.items():
            got = recorded.get((topic, partition))
            assert got is not None, f"{path}: no progress of {topic}-{partition}"
            where = (got.next_upstream, got.next_downstream, got.inflight_end)
            assert where == (end, remote[partition], None), (
                f"{path}: {topic}-{partition} recorded at {where}, copied up to {end}"
            )
    assert "ending with its last report not recorded" not in driver.log_text()
