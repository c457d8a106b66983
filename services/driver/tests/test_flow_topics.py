"""A flow's remote topics kept in step at a cost that follows what changed: a pass looks at
the remote topics not ready yet, by name, every few seconds; a remote topic the target
has but does not list yet (a broker still loading thousands of new partitions) or lists
with a transient error is not created again. Counted in requests and partition entries
read from a fake controller (:class:`srm_driver.testing.FakeController`), never timed."""

from __future__ import annotations

import pytest
from srm_common.config import parse_yaml_text
from srm_driver import flow_topics
from srm_driver.flow_topics import FlowTopics
from srm_driver.testing import FakeController

PASS_S = 0.2


def flow():  # noqa: ANN201 - a FlowConfig
    config = parse_yaml_text(
        "clusters:\n  primary: {bootstrap.servers: 'p:9'}\n  backup: {bootstrap.servers: 'b:9'}\n"
        "flows:\n  primary->backup: {enabled: true, topics: 'scale.*'}\n"
    )
    return config.flow("primary", "backup")


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    clock = [1000.0]
    monkeypatch.setattr(flow_topics.time, "monotonic", lambda: clock[0])
    return clock


def source_with(topics: int, partitions: int) -> FakeController:
    source = FakeController()
    source.topics = {f"scale.t{i:04d}": partitions for i in range(topics)}
    return source


def owned_of(source: FakeController) -> frozenset[tuple[str, int]]:
    return frozenset((t, p) for t, n in source.topics.items() for p in range(n))


def creates(target: FakeController) -> int:
    return sum(items for what, items, _records in target.requests if what == "create")


def passes(topics: FlowTopics, owned: frozenset, now: list[float], seconds: float) -> int:
    """Run the worker's passes for ``seconds``; the partitions ready after the last."""
    ready = {}
    for _ in range(round(seconds / PASS_S)):
        now[0] += PASS_S
        ready = topics.ready(owned)
    return len(ready)


def test_remote_topics_the_target_has_but_does_not_list_yet_are_looked_at_not_created_again(
    now: list[float],
) -> None:
    """1,000 topics created in two requests; the broker lists the 909 of the first at once
    and the 91 of the second only minutes later (it loads the first's 9,090 partitions
    meanwhile). Passes five times a second: the 91 are looked at by name every 2 s, never
    created again, and the source is not read again."""
    source, target = source_with(1000, 10), FakeController(hide_created=True)
    topics = FlowTopics(flow(), source, target)  # type: ignore[arg-type]
    owned = owned_of(source)

    assert len(topics.ready(owned)) == 0
    assert creates(target) == 1000 and len(target.requests) == 2
    later = {f"primary.scale.t{i:04d}" for i in range(909, 1000)}
    target.hidden &= later
    listings, looks = target.listings, len(target.described_topics)
    read, source_reads = target.entries, source.entries

    assert passes(topics, owned, now, 30.0) == 9090
    assert creates(target) == 1000, "no topic the target said it has is sent again"
    assert target.listings <= listings + 1, "at most one listing of the whole cluster"
    looked = target.described_topics[looks:]
    assert 10 <= len(looked) <= 30 / flow_topics.LOOK_EVERY_S + 1, "a look every 2 s"
    assert all(set(names) <= later for names in looked[1:]), "only the missing, by name"
    assert target.entries - read <= 9090 + 15 * 910, "what is read follows what is missing"
    assert source.entries == source_reads, "the source is not read for topics it created"

    target.hidden.clear()
    assert passes(topics, owned, now, 2.2) == 10_000


@pytest.mark.parametrize("count", [10, 1000])
def test_a_pass_while_every_remote_topic_is_ready_asks_the_clusters_nothing(
    now: list[float], count: int
) -> None:
    source, target = source_with(count, 10), FakeController()
    topics = FlowTopics(flow(), source, target)  # type: ignore[arg-type]
    owned = owned_of(source)
    assert passes(topics, owned, now, 1.0) == count * 10
    asked = (target.listings, len(target.described_topics), target.entries, source.entries)

    assert passes(topics, owned, now, 60.0) == count * 10
    assert (target.listings, len(target.described_topics), target.entries, source.entries) == asked


@pytest.mark.parametrize("count", [3, 300])  # asked by name; with a whole listing
def test_a_remote_topic_listed_with_a_transient_error_exists_and_is_not_created(
    now: list[float], count: int
) -> None:
    """LEADER_NOT_AVAILABLE in its metadata (just created, by another driver): it is
    there; its partitions are handed over once it is listed cleanly."""
    source, target = source_with(count, 2), FakeController()
    target.topics = {f"primary.{t}": 2 for t in source.topics}
    target.unsettled = {"primary.scale.t0001"}
    topics = FlowTopics(flow(), source, target)  # type: ignore[arg-type]
    owned = owned_of(source)

    assert passes(topics, owned, now, 10.0) == 2 * count - 2
    assert creates(target) == 0 and target.requests == []
    assert target.listings == (count > 200)
    target.unsettled.clear()
    assert passes(topics, owned, now, 2.2) == 2 * count


def test_a_remote_topic_not_listed_a_minute_after_the_target_said_it_has_it_is_sent_again(
    now: list[float],
) -> None:
    """Deleted right after its creation was answered: after TRUST_PRESENT_S unlisted it is
    created again, once."""
    source, target = source_with(1, 4), FakeController(hide_created=True)
    topics = FlowTopics(flow(), source, target)  # type: ignore[arg-type]
    owned = owned_of(source)
    assert passes(topics, owned, now, 1.0) == 0 and creates(target) == 1
    del target.topics["primary.scale.t0000"]  # deleted meanwhile
    target.hidden.clear()
    target.hide_created = False

    assert passes(topics, owned, now, flow_topics.TRUST_PRESENT_S - 2) == 0
    assert creates(target) == 1, "within the minute it is only looked at"
    assert passes(topics, owned, now, 4.0) == 4
    assert creates(target) == 2


def test_a_ready_remote_topic_listed_with_a_transient_error_keeps_its_partitions(
    now: list[float],
) -> None:
    """At a refresh the target lists a remote topic whose partitions copy with
    LEADER_NOT_AVAILABLE (a broker restarting): they are not let go for it."""
    source, target = source_with(2, 3), FakeController()
    target.topics = {f"primary.{t}": 3 for t in source.topics}
    topics = FlowTopics(flow(), source, target)  # type: ignore[arg-type]
    owned = owned_of(source)
    assert passes(topics, owned, now, 1.0) == 6
    target.unsettled = {"primary.scale.t0000"}
    refresh = flow().refresh_topics_interval_seconds
    assert passes(topics, owned, now, refresh + 1) == 6
    assert target.listings + len(target.described_topics) >= 2, "the refresh looked"
    assert target.requests == []


def test_a_new_topic_whose_source_grew_at_once_is_grown_at_the_next_look(
    now: list[float],
) -> None:
    source, target = source_with(1, 4), FakeController()
    topics = FlowTopics(flow(), source, target)  # type: ignore[arg-type]
    assert passes(topics, owned_of(source), now, 1.0) == 4
    source.topics["scale.t0000"] = 6  # and the task source hands over the new partitions
    assert passes(topics, owned_of(source), now, 1.0) == 6
    assert [what for what, _items, _records in target.requests] == ["create", "grow"]


def test_a_round_of_thousands_of_changes_logs_a_bounded_number_of_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    changes = [
        f"created backup:primary.scale.t{i:04d} (10 partitions, 0 configs)" for i in range(3000)
    ]
    with caplog.at_level("DEBUG", logger=flow_topics.log.name):
        flow_topics.log_changes("primary->backup", changes)
    info = [r.getMessage() for r in caplog.records if r.levelname == "INFO"]
    debug = [r.getMessage() for r in caplog.records if r.levelname == "DEBUG"]
    assert info[: flow_topics.LISTED_CHANGES] == [f"primary->backup: {c}" for c in changes[:20]]
    assert info[flow_topics.LISTED_CHANGES :] == [
        "primary->backup: and 2980 more changes like these (listed at DEBUG)"
    ]
    assert debug == [f"primary->backup: {c}" for c in changes[20:]], "none is lost"


def test_a_round_of_a_few_changes_logs_each_at_info(caplog: pytest.LogCaptureFixture) -> None:
    changes = ["created backup:primary.a (1 partition, 0 configs)", "grew backup:primary.b"]
    with caplog.at_level("DEBUG", logger=flow_topics.log.name):
        flow_topics.log_changes("primary->backup", changes)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", f"primary->backup: {c}") for c in changes
    ]


class Unreachable(FakeController):
    """The target's brokers cut off: every describe fails with a transport error (what
    librdkafka answers for a topic when it cannot reach the broker), and a whole listing
    raises, as for a cluster that does not answer."""

    cut = False

    def describe_topics(self, topics, request_timeout: float = 0):  # type: ignore[no-untyped-def]
        if not self.cut:
            return super().describe_topics(topics, request_timeout)
        from confluent_kafka import KafkaError
        from srm_driver.testing import failed_future

        self.described_topics.append(list(topics.topic_names))
        return {name: failed_future(KafkaError._TRANSPORT) for name in topics.topic_names}


def test_a_target_cut_off_does_not_make_its_remote_topics_absent(now: list[float]) -> None:
    """Seen in test_site_loss: a describe that failed with a transport error was read as
    "this topic does not exist", so a flow let go of every partition it was copying into
    the cut-off site (and did not take them back). Now such a listing is an error: the
    partitions stay as they were listed last, and are copied on once it answers."""
    source, target = source_with(3, 2), Unreachable()
    topics = FlowTopics(flow(), source, target)  # type: ignore[arg-type]
    owned = owned_of(source)
    assert passes(topics, owned, now, 5.0) == 6
    target.cut = True
    refresh = flow().refresh_topics_interval_seconds  # every owned topic is listed again
    assert passes(topics, owned, now, refresh + 5.0) == 6, "still ready while cut off"
    target.cut = False
    assert passes(topics, owned, now, 30.0) == 6


def test_a_describe_the_broker_answered_with_an_error_is_an_absent_topic() -> None:
    """A remote name the broker refuses (TOPIC_EXCEPTION for a name past Kafka's
    limit) is an answer: that topic is absent, the listing of the others goes on."""
    from confluent_kafka import KafkaError
    from srm_driver.testing import failed_future
    from srm_driver.topic_listing import list_topics_of

    class Refusing(FakeController):
        def describe_topics(self, topics, request_timeout: float = 0):  # type: ignore[no-untyped-def]
            found = super().describe_topics(topics, request_timeout)
            found["bad"] = failed_future(KafkaError.TOPIC_EXCEPTION)
            return found

    target = Refusing()
    target.topics = {"good": 2}
    listing = list_topics_of(target, ["good", "bad"])  # type: ignore[arg-type]
    assert listing.counts == {"good": 2} and not listing.unsettled


def flow_refreshing_every(seconds: int):  # noqa: ANN201 - a FlowConfig
    config = parse_yaml_text(
        "clusters:\n  primary: {bootstrap.servers: 'p:9'}\n  backup: {bootstrap.servers: 'b:9'}\n"
        "flows:\n  primary->backup: {enabled: true, topics: 'scale.*',"
        f" refresh.topics.interval.seconds: {seconds}}}\n"
    )
    return config.flow("primary", "backup")


@pytest.mark.parametrize(("listing_s", "most", "least"), [(0.0, 31, 29), (6.0, 11, 9)])
def test_a_refresh_that_takes_long_keeps_to_a_fifth_of_the_flows_time(
    now: list[float], listing_s: float, most: int, least: int
) -> None:
    """At 30,000 partitions one refresh (3,000 topics listed on both clusters, every
    partition built into a Python object under the GIL) took 5-33 s on loaded brokers:
    at a 10 s interval the topics thread listed almost without a break, and the cold start
    ran a quarter slower. The next refresh now comes at least the interval after the last
    ended, and at least four times its length: a quick one every 10 s as configured, a 6 s
    one every 30 s. (New topics do not wait for it: they come as owned partitions
    whose remote topics are missing, and are looked at by name at once.)"""
    source, target = source_with(300, 2), FakeController()
    target.topics = {f"primary.{t}": 2 for t in source.topics}
    listed = target.list_topics

    def slow(topic: str | None = None, timeout: float = 0) -> object:
        now[0] += listing_s
        return listed(topic, timeout)

    target.list_topics = slow  # type: ignore[method-assign]
    topics = FlowTopics(flow_refreshing_every(10), source, target)  # type: ignore[arg-type]
    owned = owned_of(source)
    assert passes(topics, owned, now, 0.2) == 600
    before = target.listings
    started = now[0]
    while now[0] - started < 300:
        now[0] += PASS_S
        topics.ready(owned)
    assert least <= target.listings - before <= most
