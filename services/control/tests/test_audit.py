"""The audit trail's rendering: times in, history and state out (no Kafka)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from srm_common.control.events import (
    AssignmentChanged,
    CoordinatorElected,
    DriverJoined,
    Envelope,
    Event,
    FlowEnabled,
    TopicsAllowed,
    TopicsDenied,
)
from srm_common.control.state import replay
from srm_common.control.task_configs import task_configs
from srm_control.audit import (
    format_time,
    parse_time,
    render_history,
    render_state,
    render_states,
)

T0 = int(datetime(2026, 11, 20, 9, 30, tzinfo=UTC).timestamp() * 1000)


def envelopes(*events: tuple[int, Event]) -> list[Envelope]:
    return [Envelope(event, at_ms, f"user{i}", offset=i) for i, (at_ms, event) in enumerate(events)]


LOG = envelopes(
    (T0, CoordinatorElected("c1", "http://c1:1", 1)),
    (T0 + 1, FlowEnabled("a->b")),
    (T0 + 2, TopicsAllowed("a->b", ("orders",))),
    (T0 + 3, TopicsAllowed("b->a", ("billing",))),
    (T0 + 4, task_configs("a->b", 1, ((("orders", 0), ("orders", 1)),), (), True)),
    (T0 + 5, DriverJoined("d1", "http://d1:1", "h1")),
    (
        T0 + 6,
        AssignmentChanged(
            1, {"a->b|MirrorSourceConnector-0": "d1", "a->b|MirrorHeartbeatConnector-0": "d1"}, ()
        ),
    ),
    (T0 + 60_000, TopicsDenied("a->b", ("orders.tmp",))),
)


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-20T09:30:00Z",
        "2026-11-20T09:30:00+00:00",
        "2026-11-20T10:30:00+01:00",
        "2026-11-20T09:30:00",
        " 2026-11-20T09:30:00Z ",
        str(T0),
    ],
)
def test_parse_time_reads_iso_with_or_without_zone_and_epoch_ms(text: str) -> None:
    assert parse_time(text) == T0


def test_parse_time_keeps_milliseconds() -> None:
    assert parse_time("2026-11-20T09:30:00.250Z") == T0 + 250


@pytest.mark.parametrize("text", ["yesterday", "", "2026-13-40", "12:00 tomorrow"])
def test_parse_time_refuses_other_text_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_time(text)
    message = str(info.value)
    assert "is not a time" in message
    assert "2026-11-20T09:30:00Z" in message and "epoch milliseconds" in message
    assert "\n" not in message


def test_format_time_is_utc_with_milliseconds() -> None:
    assert format_time(T0 + 7) == "2026-11-20T09:30:00.007Z"
    assert parse_time(format_time(T0 + 7)) == T0 + 7


def test_history_shows_configuration_changes_only_by_default() -> None:
    text = render_history({"b": LOG})
    assert "topics allowlist of a->b: + orders" in text
    assert "flow a->b enabled" in text
    assert "[user2]" in text
    assert "joined" not in text and "assignment generation" not in text
    assert "task configs" not in text


def test_history_with_everything_includes_membership_and_assignment() -> None:
    text = render_history({"b": LOG}, everything=True)
    assert "driver d1 joined" in text
    assert "assignment generation 1: 2 assigned, 0 revoked" in text
    assert "task configs of a->b (generation 1)" in text
    assert len(text.splitlines()) == len(LOG)


def test_history_filters_by_flow() -> None:
    text = render_history({"b": LOG}, flow="b->a")
    assert text.splitlines() == [
        f"{format_time(T0 + 3)}  b  #3     topics allowlist of b->a: + billing  [user3]"
    ]


def test_history_filters_by_time() -> None:
    lines = render_history({"b": LOG}, since_ms=T0 + 60_000).splitlines()
    assert len(lines) == 1 and "denylist of a->b: + orders.tmp" in lines[0]


def test_history_without_matching_events_says_so() -> None:
    assert (
        render_history({"b": LOG}, flow="x->y")
        == "no changes recorded (--all shows membership too)"
    )
    assert render_history({"b": []}, everything=True) == "no changes recorded"


def test_history_as_json_lists_each_change() -> None:
    rows = json.loads(render_history({"b": LOG}, flow="a->b", as_json=True))
    assert [row["type"] for row in rows] == [
        FlowEnabled.TYPE,
        TopicsAllowed.TYPE,
        TopicsDenied.TYPE,
    ]
    assert rows[1] == {
        "log": "b",
        "offset": 2,
        "at": format_time(T0 + 2),
        "type": TopicsAllowed.TYPE,
        "by": "user2",
        "change": "topics allowlist of a->b: + orders",
    }


def test_state_shows_leader_flows_tasks_and_drivers() -> None:
    state = replay(LOG)
    text = render_state(state, T0 + 10)
    assert f"state at {format_time(T0 + 10)} (after event #{len(LOG) - 1}" in text
    assert "leader: c1 (epoch 1)" in text
    assert "  a->b: enabled" in text
    assert "    topics allow: orders" in text
    assert "    topics deny:  orders.tmp" in text
    assert "  b->a: disabled" in text
    assert "tasks (generation 1): 1 source, 0 checkpoint, heartbeat; topics: orders" in text
    assert "drivers (1), assignment generation 1:" in text
    assert "  d1: 2 tasks" in text


def test_state_at_an_earlier_moment_is_the_replay_up_to_it() -> None:
    state = replay(LOG, until_ms=T0 + 2)
    text = render_state(state, T0 + 2)
    assert "topics allow: orders" in text
    assert "topics deny:  -" in text
    assert "drivers (0)" in text


def test_state_as_json_carries_digest_and_state() -> None:
    state = replay(LOG)
    data = json.loads(render_state(state, T0, as_json=True))
    assert data["digest"] == state.digest()
    assert data["offset"] == len(LOG) - 1
    assert data["state"]["flows"]["a->b"]["topics_exclude"] == ["orders.tmp"]


def test_the_history_of_several_logs_is_one_by_time_each_entry_naming_its_log() -> None:
    """Two target logs: merged by time; a log whose leader's clock stepped back keeps
    its own order (no state depends on the order across logs)."""
    into_b = [
        Envelope(FlowEnabled("a->b"), T0 + 100, "u", offset=0),
        Envelope(TopicsAllowed("a->b", ("x",)), T0 + 5_000, "u", offset=2),
        Envelope(TopicsAllowed("a->b", ("y",)), T0 + 4_900, "u", offset=4),  # clock stepped
    ]
    into_c = [
        Envelope(FlowEnabled("b->c"), T0 + 1_000, "u", offset=0),
        Envelope(TopicsAllowed("b->c", ("z",)), T0 + 4_950, "u", offset=2),
    ]
    rows = json.loads(render_history({"b": into_b, "c": into_c}, as_json=True))
    assert [(row["log"], row["offset"]) for row in rows] == [
        ("b", 0),
        ("c", 0),
        ("c", 2),
        ("b", 2),
        ("b", 4),
    ]
    text = render_history({"b": into_b, "legacy@a": []})
    assert text.splitlines()[0].split()[1] == "b"


def test_the_states_of_several_logs_are_shown_each_under_its_log() -> None:
    text = render_states({"b": replay(LOG), "c": replay([])}, T0 + 10)
    assert text.startswith("log of b: state at") and "\n\nlog of c: state at" in text
    data = json.loads(render_states({"b": replay(LOG)}, T0, as_json=True))
    assert data["logs"]["b"]["digest"] == replay(LOG).digest()
