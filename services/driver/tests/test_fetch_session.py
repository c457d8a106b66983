"""The client's side of an incremental fetch session (KIP-227): what each Fetch names
and forgets, and the answers the unit sees (srm_driver.copier.wire.fetch_session)."""

from __future__ import annotations

from srm_driver.copier.wire.fetch import EMPTY, FetchedPartition
from srm_driver.copier.wire.fetch_session import FetchSession


def _answer(topic: str, partition: int, high: int, records: bytes = b"") -> FetchedPartition:
    return FetchedPartition(topic, partition, 0, high, high, 0, (), memoryview(records))


def _started(wanted: dict[tuple[str, int], int]) -> FetchSession:
    session = FetchSession()
    assert session.request(wanted) == (0, 0, [(t, p, o) for (t, p), o in wanted.items()], {})
    session.answered(7, [_answer(t, p, 10) for t, p in wanted])
    return session


def test_the_first_fetch_names_everything_and_later_ones_only_what_changed() -> None:
    session = _started({("a", 0): 5, ("a", 1): 3, ("b", 0): 0})
    assert session.id == 7
    # a-0 moved on, b-0 is no longer read, c-0 is new; a-1 is as the broker holds it.
    assert session.request({("a", 0): 8, ("a", 1): 3, ("c", 0): 0}) == (
        7, 1, [("a", 0, 8), ("c", 0, 0)], {"b": [0]},
    )  # fmt: skip
    session.answered(7, [_answer("c", 0, 0)])
    assert session.request({("a", 0): 8, ("a", 1): 3, ("c", 0): 0}) == (7, 2, [], {})


def test_a_named_partition_the_broker_leaves_out_is_answered_with_what_it_last_said() -> None:
    session = _started({("a", 0): 5, ("a", 1): 3})
    session.request({("a", 0): 5, ("a", 1): 4})  # a-1 planned again at 4
    answers = session.answered(7, [_answer("a", 0, 12, b"BTCH")])
    assert [(a.topic, a.partition, a.high_watermark, bytes(a.records)) for a in answers] == [
        ("a", 0, 12, b"BTCH"),
        ("a", 1, 10, b""),
    ]
    assert answers[1].records is EMPTY
    # An unnamed partition left out had nothing new: no answer made up for it.
    session.request({("a", 0): 5, ("a", 1): 4})
    assert session.answered(7, []) == []


def test_a_forgotten_partition_read_again_is_named_and_answered_afresh() -> None:
    session = _started({("a", 0): 5, ("a", 1): 3})
    assert session.request({("a", 0): 5})[3] == {"a": [1]}
    session.answered(7, [])
    assert session.request({("a", 0): 5, ("a", 1): 3})[2] == [("a", 1, 3)]
    assert session.answered(7, []) == []  # nothing said of it since: the broker's answer counts


def test_a_reset_or_a_broker_that_keeps_no_session_fetches_in_full_again() -> None:
    wanted = {("a", 0): 5, ("a", 1): 3}
    session = _started(wanted)
    session.reset()
    assert session.request(wanted) == (0, 0, [("a", 0, 5), ("a", 1, 3)], {})
    session.answered(0, [_answer("a", 0, 10), _answer("a", 1, 10)])  # no session kept
    assert session.request(wanted)[:2] == (0, 0)
    assert len(session.request(wanted)[2]) == 2


def test_the_epoch_wraps_to_one() -> None:
    session = _started({("a", 0): 5})
    session.epoch = (1 << 31) - 1
    assert session.request({("a", 0): 5})[1] == 1
