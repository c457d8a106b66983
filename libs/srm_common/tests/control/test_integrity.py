"""LogGuard: which records are folded, which are skipped, when a log is lost or newer."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from srm_common.control.events import (
    Envelope,
    Event,
    FlowEnabled,
    LogStarted,
    TopicsAllowed,
    encode,
)
from srm_common.control.integrity import LogGuard
from srm_common.control.state import replay

TOPIC = "srm-control.events.internal"


def value(event: Event) -> bytes:
    return encode(Envelope(event, 1, "test"))


def feed(guard: LogGuard, *values: bytes, start: int = 0) -> list[Envelope]:
    """Records at offsets start, start+2... (a commit marker after each); what to fold."""
    folded = []
    for i, v in enumerate(values):
        envelope = guard.record(start + 2 * i, v)
        if envelope is not None:
            folded.append(envelope)
    return folded


GENESIS = value(LogStarted("L1", None, ""))
NEWER = json.dumps({"type": "flow.enabled", "version": 9, "at": 1, "data": {}}).encode()


def test_records_that_are_not_events_are_skipped_and_reported_with_their_offset() -> None:
    guard = LogGuard(TOPIC)
    folded = feed(guard, GENESIS, b"junk\n", value(FlowEnabled("a->b")), b"{}")
    assert [e.offset for e in folded] == [0, 4]
    assert guard.problem is None and guard.skipped_count == 2
    assert [s.offset for s in guard.skipped] == [2, 6]
    assert "not JSON" in guard.skipped[0].reason
    assert guard.where(2) == f"{TOPIC}-0@2"


def test_an_event_of_a_newer_srm_stops_the_fold_there() -> None:
    guard = LogGuard(TOPIC)
    folded = feed(guard, GENESIS, NEWER, value(FlowEnabled("a->b")))
    assert [e.offset for e in folded] == [0]
    assert guard.problem is not None and guard.problem.kind == "newer"
    assert guard.problem.offset == 2
    assert f"past {TOPIC}-0@2" in guard.problem.message and "upgrade" in guard.problem.message


@given(
    st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 8), st.binary(max_size=40)), max_size=6),
)
def test_no_record_that_is_not_an_event_changes_the_folded_state(
    patterns: list[str], junk: list[tuple[int, bytes]]
) -> None:
    clean = [GENESIS, *(value(TopicsAllowed("a->b", (p,))) for p in patterns)]
    dirty = list(clean)
    for where, garbage in sorted(junk, reverse=True):
        dirty.insert(min(where + 1, len(dirty)), garbage)
    expected = replay(feed(LogGuard(TOPIC), *clean))
    guard = LogGuard(TOPIC)
    assert replay(feed(guard, *dirty)).to_json() | {"offset": 0} == expected.to_json() | {
        "offset": 0
    }
    assert guard.problem is None or guard.problem.kind == "newer"


def test_a_recreated_topic_is_lost_not_folded_onto_the_old_state() -> None:
    guard = LogGuard(TOPIC)
    guard.topic_seen("A")
    feed(guard, GENESIS, value(FlowEnabled("a->b")))
    guard.topic_seen("A")
    assert guard.problem is None
    guard.topic_seen("B")
    assert guard.problem is not None and guard.problem.kind == "lost"
    message = guard.problem.message
    assert message.startswith("event log lost: the topic")
    assert "topic id A, now B" in message and "srm-control restore --from-db" in message
    assert feed(guard, value(FlowEnabled("x->y")), start=4) == []


def test_the_restore_hint_names_the_target_whose_log_is_lost() -> None:
    guard = LogGuard(TOPIC, cluster="backup")
    guard.topic_seen("A")
    feed(guard, GENESIS)
    guard.topic_seen("B")
    assert guard.problem is not None
    assert "srm-control restore --target backup --from-db URL" in guard.problem.message


def test_offsets_going_back_or_a_second_log_or_a_deleted_topic_are_lost() -> None:
    back = LogGuard(TOPIC)
    feed(back, GENESIS, value(FlowEnabled("a->b")))
    assert back.record(0, GENESIS) is None
    assert back.problem is not None and "went back, to 0 after 2" in back.problem.message

    second = LogGuard(TOPIC)
    feed(second, GENESIS, value(LogStarted("L2", None, "")))
    assert second.problem is not None and "another log (L2)" in second.problem.message

    deleted = LogGuard(TOPIC)
    deleted.topic_seen("A")
    deleted.topic_seen(None)
    assert deleted.problem is not None and "was deleted" in deleted.problem.message


def test_a_reader_that_knew_a_log_takes_only_that_log_or_a_restore_of_it() -> None:
    same = LogGuard(TOPIC, known_log="L1")
    feed(same, GENESIS)
    same.reached_end()
    assert same.confirmed and not same.restored and same.problem is None

    restore = LogGuard(TOPIC, known_log="L1")
    feed(restore, value(LogStarted("L2", "L1", "audit export")))
    assert restore.confirmed and restore.restored

    other = LogGuard(TOPIC, known_log="L1")
    assert feed(other, value(LogStarted("L3", None, ""))) == []
    assert other.problem is not None and "holds log L3, not the log L1" in other.problem.message

    empty = LogGuard(TOPIC, known_log="L1")
    empty.topic_seen("A")
    empty.reached_end()
    assert empty.problem is not None and "is empty" in empty.problem.message

    missing = LogGuard(TOPIC, known_log="L1")
    missing.topic_seen(None)
    assert missing.problem is not None and "does not exist" in missing.problem.message

    # Nothing known: any log, and a topic not created yet is no problem.
    fresh = LogGuard(TOPIC)
    fresh.topic_seen(None)
    assert fresh.problem is None and fresh.confirmed


def test_a_log_older_than_log_ids_is_known_by_having_events() -> None:
    legacy = LogGuard(TOPIC, known_log="")
    feed(legacy, value(FlowEnabled("a->b")))
    legacy.reached_end()
    assert legacy.confirmed and legacy.problem is None

    # Its first new leader gives it an id: not first, not restored, accepted.
    adopted = LogGuard(TOPIC, known_log="")
    folded = feed(adopted, value(FlowEnabled("a->b")), value(LogStarted("L1", None, "")))
    assert len(folded) == 2 and adopted.confirmed and adopted.log_id == "L1"

    # A new log in its place is not it.
    replaced = LogGuard(TOPIC, known_log="")
    feed(replaced, GENESIS)
    assert replaced.problem is not None and replaced.problem.kind == "lost"

    emptied = LogGuard(TOPIC, known_log="")
    emptied.reached_end()
    assert emptied.problem is not None and "is empty" in emptied.problem.message


def test_a_restored_log_starts_a_new_state() -> None:
    old = [
        Envelope(LogStarted("L1", None, ""), 1, offset=0),
        Envelope(FlowEnabled("a->b"), 2, offset=2),
        Envelope(TopicsAllowed("a->b", ("x",)), 3, offset=4),
    ]
    restored = [
        Envelope(LogStarted("L2", "L1", "audit export"), 9, offset=6),
        Envelope(TopicsAllowed("a->b", ("x",)), 9, offset=8),
    ]
    state = replay(old + restored)
    assert state.log_id == "L2"
    assert not state.flow("a->b").enabled and state.flow("a->b").topics == ("x",)
    assert state.offset == 8
