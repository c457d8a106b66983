"""Control events: golden bytes of released versions, upcasting, round trips, clear errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from srm_common.control.events import (
    EVENT_TYPES,
    PATTERN_EVENTS,
    UPCASTERS,
    AssignmentChanged,
    ConfigApplied,
    CoordinatorElected,
    DriverJoined,
    DriverLeft,
    Envelope,
    Event,
    EventDecodeError,
    FlowBaseline,
    FlowDisabled,
    FlowEnabled,
    LogMigrated,
    LogStarted,
    NewerEvent,
    NotAnEvent,
    PartitionHalted,
    PartitionResumeRequested,
    RecordsLost,
    TaskConfigsGenerated,
    TaskConfigsPart,
    TopicsAllowed,
    TopicsDenyRemoved,
    decode,
    describe,
    encode,
    event_key,
)
from srm_common.control.task_configs import task_configs
from srm_common.errors import SrmError
from srm_common.tracecontext import TraceContext

GOLDEN_PATH = Path(__file__).parents[1] / "golden" / "control_events_v1.json"
GOLDEN = json.loads(GOLDEN_PATH.read_text(encoding="utf-8"))["records"]

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
patterns = st.lists(names, max_size=4).map(tuple)
flows = st.sampled_from(["primary->backup", "backup->primary", "a->b"])
ints = st.integers(-(2**53), 2**53)
baselines = st.builds(FlowBaseline, st.booleans(), patterns, patterns, patterns, patterns)
topic_entries = st.lists(
    st.tuples(names, st.integers(0, 10_000), st.lists(st.integers(0, 99), max_size=6).map(tuple)),
    max_size=3,
).map(tuple)
group_entries = st.lists(st.tuples(st.integers(0, 99), patterns), max_size=3).map(tuple)

EVENTS: dict[type[Event], st.SearchStrategy[Event]] = {
    LogStarted: st.builds(LogStarted, names, st.none() | names, names, names),
    LogMigrated: st.builds(LogMigrated, names, names),
    CoordinatorElected: st.builds(CoordinatorElected, names, names, ints),
    ConfigApplied: st.builds(ConfigApplied, names, st.dictionaries(flows, baselines)),
    FlowEnabled: st.builds(FlowEnabled, flows),
    FlowDisabled: st.builds(FlowDisabled, flows),
    **{cls: st.builds(cls, flows, patterns) for cls in PATTERN_EVENTS},
    TaskConfigsGenerated: st.builds(
        TaskConfigsGenerated,
        flows,
        ints,
        st.integers(0, 100),
        st.integers(0, 100),
        st.booleans(),
        st.integers(0, 2**31),
        topic_entries,
        group_entries,
        st.integers(0, 10),
    ),
    TaskConfigsPart: st.builds(
        TaskConfigsPart, flows, ints, st.integers(0, 10), topic_entries, group_entries
    ),
    DriverJoined: st.builds(DriverJoined, names, names, names, names),
    PartitionHalted: st.builds(
        PartitionHalted, flows, names, st.integers(0, 10_000), names, names, names
    ),
    PartitionResumeRequested: st.builds(
        PartitionResumeRequested,
        flows,
        names,
        st.integers(0, 10_000),
        st.sampled_from(["copy-end", "source-start", "source-end", "offset"]),
        st.none() | st.integers(0, 2**53),
        names,
    ),
    RecordsLost: st.builds(RecordsLost, flows, names, st.integers(0, 10_000), ints, ints, names),
    DriverLeft: st.builds(DriverLeft, names, names),
    AssignmentChanged: st.builds(AssignmentChanged, ints, st.dictionaries(names, names), patterns),
}
traces = st.builds(
    TraceContext,
    st.builds(
        "00-{}-{}-{}".format,
        st.from_regex(r"[0-9a-f]{31}[1-9a-f]", fullmatch=True),
        st.from_regex(r"[0-9a-f]{15}[1-9a-f]", fullmatch=True),
        st.sampled_from(["00", "01"]),
    ),
    st.sampled_from(["", "vendor=x", "a=1,b=2"]),
)
envelopes = st.builds(
    Envelope,
    st.one_of(*EVENTS.values()),
    ints,
    st.none() | names,
    st.none() | names,
    trace=st.none() | traces,
)


def test_every_event_type_has_a_strategy_and_a_golden_record_per_version() -> None:
    assert set(EVENTS) == set(EVENT_TYPES.values()), "an event type is missing a strategy"
    golden = {(json.loads(r["value"])["type"], json.loads(r["value"])["version"]) for r in GOLDEN}
    released = {(t, v) for t, cls in EVENT_TYPES.items() for v in range(1, cls.VERSION + 1)}
    assert released <= golden, f"no golden bytes for {sorted(released - golden)}"


def test_every_older_version_has_an_upcaster() -> None:
    needed = {(t, v) for t, cls in EVENT_TYPES.items() for v in range(1, cls.VERSION)}
    assert needed <= UPCASTERS.keys(), f"no upcaster for {sorted(needed - UPCASTERS.keys())}"


@pytest.mark.parametrize("record", GOLDEN, ids=[r["name"] for r in GOLDEN])
def test_golden_bytes_decode_and_reencode_as_the_current_version(record: dict[str, object]) -> None:
    value, current, offset = record["value"], record["current"], record["offset"]
    assert isinstance(value, str) and isinstance(current, str) and isinstance(offset, int)
    envelope = decode(value.encode(), offset=offset)
    assert envelope.offset == offset
    assert encode(envelope) == current.encode(), f"{record['name']} no longer decodes as released"


def test_driver_joined_v1_is_upcast_with_an_empty_host() -> None:
    v1 = next(r for r in GOLDEN if r["name"] == "driver.joined v1 (before host)")
    envelope = decode(v1["value"].encode(), offset=41)
    assert envelope == Envelope(
        DriverJoined("d2", "http://h:8081", "", ""), 1700000000000, offset=41
    )


def test_driver_joined_v2_is_upcast_with_an_instance_matching_any() -> None:
    v2 = next(r for r in GOLDEN if r["name"] == "driver.joined v2")
    envelope = decode(v2["value"].encode(), offset=42)
    assert envelope.event == DriverJoined("d2", "http://h:8081", "h", "")


@given(envelopes)
def test_decode_inverts_encode_for_every_event_type(envelope: Envelope) -> None:
    decoded = decode(encode(envelope), offset=7)
    assert decoded == dataclasses.replace(envelope, offset=7)


def test_encoding_is_compact_sorted_json_without_the_offset() -> None:
    envelope = Envelope(FlowEnabled("a->b"), 5, "alice", "c-1", offset=99)
    assert encode(envelope) == (
        b'{"at":5,"by":"alice","command":"c-1","data":{"flow":"a->b"},'
        b'"type":"flow.enabled","version":1}'
    )


def _record(type_: str, version: int, data: object, **extra: object) -> bytes:
    return json.dumps({"type": type_, "version": version, "at": 1, "data": data, **extra}).encode()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (b"not json", "control event at offset 12 is not JSON"),
        (b"\xff\xfe", "control event at offset 12 is not JSON"),
        (b"[1]", "is not a JSON object but a list"),
        (b'{"version":1}', "missing field 'type'"),
        (
            _record("flow.renamed", 1, {}),
            "unknown event type 'flow.renamed'; it was written by a newer SRM: upgrade",
        ),
        (
            _record("driver.joined", 4, {"driver": "d", "url": "u", "host": "h", "zone": "z"}),
            "(driver.joined v4): this release reads up to v3; it was written by a newer SRM",
        ),
        (_record("driver.joined", 0, {}), "field 'version' must be 1 or more"),
        (_record("flow.enabled", 1, {}), "(flow.enabled v1): missing field 'flow'"),
        (_record("flow.enabled", "1", {}), "field 'version' must be an integer, not a string"),
        (_record("flow.enabled", 1, {"flow": 3}), "field 'flow' must be a string, not an integer"),
        (_record("flow.enabled", 1, {"flow": "a"}, by=1), "'by' must be a string or null"),
        (
            _record("topics.allowed", 1, {"flow": "a", "patterns": "x"}),
            "field 'patterns' must be a list, not a string",
        ),
        (
            _record(
                "task_configs.generated",
                1,
                {
                    "flow": "f",
                    "generation": 1,
                    "source": [[["t"]]],
                    "checkpoint": [],
                    "heartbeat": True,
                },
            ),
            "field 'source' must be a list of source tasks, each a list of [topic, partition]",
        ),
        (
            _record(
                "task_configs.part",
                1,
                {"flow": "f", "generation": 1, "part": 0, "topics": [["t", 0, "01"]], "groups": []},
            ),
            "field 'topics[0][2]' must be a list, not a string",
        ),
        (
            _record("config.applied", 1, {"path": "p", "flows": {"a->b": {"enabled": 1}}}),
            "field 'flows.a->b.enabled' must be true or false, not an integer",
        ),
        (
            _record("assignment.changed", 1, {"generation": 1, "assigned": [], "revoked": []}),
            "field 'assigned' must be an object, not a list",
        ),
    ],
)
def test_bad_records_are_refused_with_one_clear_line(value: bytes, message: str) -> None:
    with pytest.raises(EventDecodeError) as caught:
        decode(value, offset=12)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, SrmError)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (b"junk", NotAnEvent),
        (b"", NotAnEvent),
        (b'{"type":"flow.enabled"}', NotAnEvent),
        (_record("flow.enabled", 1, {"flow": 3}), NotAnEvent),
        (_record("flow.enabled", 0, {"flow": "a"}), NotAnEvent),
        # Only a well-formed envelope can be a newer SRM's event.
        (b'{"type":"flow.renamed","version":1}', NotAnEvent),
        (_record("flow.renamed", 1, {}), NewerEvent),
        (_record("flow.enabled", 2, {"flow": "a"}), NewerEvent),
    ],
)
def test_a_record_is_either_not_an_event_or_an_event_of_a_newer_srm(
    value: bytes, kind: type[EventDecodeError]
) -> None:
    with pytest.raises(EventDecodeError) as caught:
        decode(value, offset=3)
    assert type(caught.value) is kind


def test_events_are_immutable_and_copy_what_they_are_given() -> None:
    assigned = {"t": "d1"}
    event = AssignmentChanged(1, assigned, ["x"])  # type: ignore[arg-type]
    assigned["t"] = "d2"
    assert event.assigned == {"t": "d1"} and event.revoked == ("x",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.generation = 2  # type: ignore[misc]
    assert TopicsAllowed("a->b", ["x"]).patterns == ("x",)  # type: ignore[arg-type]


def test_record_key_is_the_flow_the_driver_or_cluster() -> None:
    assert event_key(TopicsDenyRemoved("a->b", ("x",))) == b"a->b"
    assert event_key(task_configs("a->b", 1, (), (), False)) == b"a->b"
    assert event_key(TaskConfigsPart("a->b", 1, 0, (), ())) == b"a->b"
    assert event_key(FlowDisabled("a->b")) == b"a->b"
    assert event_key(DriverLeft("d2", "stopped")) == b"d2"
    assert event_key(DriverJoined("d2", "u", "h")) == b"d2"
    assert event_key(AssignmentChanged(1, {}, ())) == b"cluster"
    assert event_key(ConfigApplied("p", {})) == b"cluster"


@pytest.mark.parametrize(
    ("event", "line"),
    [
        (
            TopicsAllowed("primary->backup", ("orders.*", "payments")),
            "topics allowlist of primary->backup: + orders.*, payments",
        ),
        (TopicsDenyRemoved("a->b", ("x",)), "topics denylist of a->b: - x"),
        (DriverJoined("d2", "http://h:8081", "h"), "driver d2 joined (http://h:8081)"),
        (
            DriverLeft("d2", "stopped and left the group"),
            "driver d2 left: stopped and left the group",
        ),
        (
            AssignmentChanged(5, {"a": "d1", "b": "d2", "c": "d1"}, ("e",)),
            "assignment generation 5: 3 assigned, 1 revoked",
        ),
        (
            task_configs(
                "primary->backup",
                2,
                tuple(tuple(("t", p) for p in range(i, 12, 4)) for i in range(4)),
                (("g1", "g2"),),
                True,
            ),
            "task configs of primary->backup (generation 2): 4 source tasks over 12 partitions,"
            " 1 checkpoint task, heartbeat",
        ),
        (
            task_configs("a->b", 1, ((("t", 0),),), (), False),
            "task configs of a->b (generation 1): 1 source task over 1 partition,"
            " 0 checkpoint tasks, no heartbeat",
        ),
        (
            TaskConfigsGenerated("a->b", 3, 4, 0, False, 100_000, (), (), 3),
            "task configs of a->b (generation 3): 4 source tasks over 100000 partitions,"
            " 0 checkpoint tasks, no heartbeat, in 4 events",
        ),
        (
            TaskConfigsPart("a->b", 3, 0, (("t", 0, (0, 1, 0)), ("u", 0, (1,))), ((0, ("g",)),)),
            "task configs of a->b (generation 3), part 1: 4 partitions, 1 group",
        ),
        (FlowEnabled("a->b"), "flow a->b enabled"),
        (
            ConfigApplied("srm.properties", {"a->b": FlowBaseline(True, (), (), (), ())}),
            "config srm.properties applied: 1 flow, enabled: a->b",
        ),
        (
            CoordinatorElected("c1", "http://c1:8090", 3),
            "coordinator c1 leads (epoch 3, http://c1:8090)",
        ),
        (LogStarted("5f0c", None, ""), "event log 5f0c started"),
        (
            LogStarted("a41d", "5f0c", "audit export state.json"),
            "event log a41d restored from lost log 5f0c (audit export state.json)",
        ),
    ],
)
def test_describe_gives_one_human_line(event: Event, line: str) -> None:
    assert describe(Envelope(event, 0)) == line


def test_a_trace_context_is_kept_in_the_envelope_when_a_command_caused_the_event() -> None:
    record = next(r for r in GOLDEN if r["name"].startswith("topics.allowed v1 with a trace"))
    envelope = decode(record["value"].encode(), offset=120)
    assert envelope.trace == TraceContext(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=x"
    )
    assert envelope.trace.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"


def test_events_without_a_trace_encode_as_before_when_no_command_traced_them() -> None:
    envelope = Envelope(FlowEnabled("a->b"), 1, "x", "c")
    assert b"trace" not in encode(envelope)
    assert decode(encode(envelope)).trace is None


@pytest.mark.parametrize(
    "trace",
    [
        "not an object",
        {"traceparent": 7},
        {"traceparent": "00-zz-garbage"},
        {"traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
        {"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
        {},
    ],
)
def test_a_garbled_trace_is_dropped_and_the_event_still_read_when_trace_is_bad(
    trace: object,
) -> None:
    record = json.loads(encode(Envelope(FlowEnabled("a->b"), 1, "x", "c")))
    record["trace"] = trace
    envelope = decode(json.dumps(record).encode(), offset=3)
    assert envelope == Envelope(FlowEnabled("a->b"), 1, "x", "c", 3)
