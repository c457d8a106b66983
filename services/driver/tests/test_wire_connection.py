"""One broker connection of the copy slot's protocol layer
(:mod:`srm_driver.copier.wire.connection`, :mod:`~srm_driver.copier.wire.pump`) over a
real socket pair, the far end playing the broker's framing (the requests' meaning is
tested against real brokers in tests/integration/test_batch_pass_through.py): requests
framed with their header, bodies sent from their own buffers (large ones across partial
sends), answers matched to requests in order, and every failure naming the broker."""

from __future__ import annotations

import socket
import struct
import threading

import pytest
from srm_driver.copier.wire.apis import FETCH, PRODUCE
from srm_driver.copier.wire.cluster import Cluster, addresses
from srm_driver.copier.wire.connection import Connection
from srm_driver.copier.wire.errors import WireError
from srm_driver.copier.wire.messages import Broker, Metadata, PartitionLeader
from srm_driver.copier.wire.pump import Pump


@pytest.fixture
def pair():  # type: ignore[no-untyped-def]
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    connection = Connection(ours, "b:9092", "cid")
    yield connection, theirs
    connection.close()
    theirs.close()


def _read_request(sock: socket.socket) -> tuple[int, int, int, bytes]:
    """(api key, version, correlation id, client id and body) of one framed request."""
    (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
    raw = b""
    while len(raw) < size:
        raw += sock.recv(size - len(raw))
    key, version, correlation = struct.unpack_from(">hhi", raw)
    return key, version, correlation, raw[8:]


def _answer(correlation: int, body: bytes) -> bytes:
    return struct.pack(">ii", 4 + len(body), correlation) + body


def test_a_request_is_framed_with_its_header_and_its_parts_in_order(pair) -> None:  # type: ignore[no-untyped-def]
    connection, broker = pair
    assert connection.send(FETCH, [b"ab", bytearray(b""), memoryview(b"cd")]) == 0
    assert connection.send(PRODUCE, [b"x"]) == 1
    assert _read_request(broker) == (1, 11, 0, b"\x00\x03cid" + b"abcd")
    assert _read_request(broker) == (0, 8, 1, b"\x00\x03cidx")
    assert connection.in_flight == 2


def test_answers_in_pieces_are_matched_to_their_requests(pair) -> None:  # type: ignore[no-untyped-def]
    connection, broker = pair
    pump = Pump([connection])
    first, second = connection.send(FETCH, []), connection.send(PRODUCE, [])
    both = _answer(first, b"one") + _answer(second, b"two" * 1000)
    for at in range(0, len(both), 700):
        broker.sendall(both[at : at + 700])
    assert bytes(pump.wait(connection, second, 5)) == b"two" * 1000
    assert bytes(connection.answer(first) or b"") == b"one"  # read on the way
    assert connection.answer(first) is None and connection.in_flight == 0


def test_a_large_request_goes_out_across_partial_sends(pair) -> None:  # type: ignore[no-untyped-def]
    connection, broker = pair
    parts = [bytes([n]) * (1 << 20) for n in range(12)]  # more than the socket buffers hold
    got: list[tuple[int, int, int, bytes]] = []

    def broker_side() -> None:
        got.append(_read_request(broker))
        broker.sendall(_answer(got[0][2], b"ok"))

    thread = threading.Thread(target=broker_side)
    thread.start()
    correlation = connection.send(PRODUCE, parts)
    assert connection.wants_write  # the kernel took only part of it
    assert bytes(Pump([connection]).wait(connection, correlation, 10)) == b"ok"
    thread.join(10)
    assert got[0][3] == b"\x00\x03cid" + b"".join(parts)


def test_an_answer_out_of_order_breaks_the_connection_and_names_the_broker(pair) -> None:  # type: ignore[no-untyped-def]
    connection, broker = pair
    correlation = connection.send(FETCH, [])
    broker.sendall(_answer(correlation + 5, b""))
    with pytest.raises(WireError, match=r"broker b:9092: an answer to request 5, expected 0"):
        Pump([connection]).wait(connection, correlation, 5)
    with pytest.raises(WireError, match="expected 0"):  # and stays broken
        connection.send(FETCH, [])


def test_a_closed_connection_names_the_broker_and_what_was_in_flight(pair) -> None:  # type: ignore[no-untyped-def]
    connection, broker = pair
    correlation = connection.send(PRODUCE, [])
    _read_request(broker)
    broker.close()
    with pytest.raises(WireError, match=r"broker b:9092: the broker closed .*in flight: Produce 0"):
        Pump([connection]).wait(connection, correlation, 5)


def test_an_answer_sent_just_before_the_broker_closes_is_still_handed_out(pair) -> None:  # type: ignore[no-untyped-def]
    # (a broker answers a failed SASL login with its error code, then closes at once)
    connection, broker = pair
    correlation = connection.send(PRODUCE, [])
    _read_request(broker)
    broker.sendall(_answer(correlation, b"refused"))
    broker.close()
    pump = Pump([connection])
    assert bytes(pump.wait(connection, correlation, 5)) == b"refused"
    with pytest.raises(WireError, match="the broker closed the connection"):
        connection.send(FETCH, [])


def test_an_unanswered_request_times_out_with_its_name(pair) -> None:  # type: ignore[no-untyped-def]
    connection, _ = pair
    correlation = connection.send(FETCH, [])
    with pytest.raises(WireError, match=r"broker b:9092: no answer to Fetch request 0 in 0.05 s"):
        Pump([connection]).wait(connection, correlation, 0.05)


def test_a_broker_that_cannot_be_reached_is_named() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(WireError, match=f"broker 127.0.0.1:{port}: cannot connect"):
        Connection.open("127.0.0.1", port, client_id="c", timeout=2)


def test_bootstrap_servers_are_parsed_or_refused_clearly() -> None:
    assert addresses(" h1:9092, [::1]:9093,") == [("h1", 9092), ("::1", 9093)]
    with pytest.raises(ValueError, match="'h1' is not host:port"):
        addresses("h1")
    with pytest.raises(ValueError, match="no bootstrap server"):
        addresses(" , ")


def test_an_open_leader_is_only_looked_up_never_connected(pair) -> None:  # type: ignore[no-untyped-def]
    """What the batch copy's unit asks under its lock: the leader's connection if it is
    open, else None (the port below has nothing listening: a connect would fail)."""
    connection, _ = pair
    cluster = Cluster("b:9092", client_id="cid", timeout=0.5)
    leaders = {0: PartitionLeader(0, 0, 1, 0), 1: PartitionLeader(1, 0, 2, 0)}
    brokers = {1: Broker(1, "b", 9092), 2: Broker(2, "127.0.0.1", 1)}
    cluster.metadata = Metadata(brokers, {"t": (0, leaders)})
    cluster._connections["b:9092"] = connection
    assert cluster.open_leader("t", 0) is connection
    assert cluster.open_leader("t", 1) is None
    with pytest.raises(WireError, match="broker 127.0.0.1:1: cannot connect"):
        cluster.leader("t", 1)


def test_a_leader_is_known_only_when_the_last_refresh_named_one() -> None:
    """What tells the batch copy to look the leaders up again: a partition added to a
    topic since the last refresh, one without a leader then, or an unknown topic."""
    cluster = Cluster("b:9092", client_id="cid", timeout=0.5)
    leaders = {0: PartitionLeader(0, 0, 1, 0), 1: PartitionLeader(1, 5, -1, 0),
               2: PartitionLeader(2, 0, 3, 0)}  # fmt: skip
    cluster.metadata = Metadata({1: Broker(1, "b", 9092)}, {"t": (0, leaders)})
    assert cluster.leader_known("t", 0)
    assert not cluster.leader_known("t", 1)  # LEADER_NOT_AVAILABLE
    assert not cluster.leader_known("t", 2)  # a broker the metadata does not list
    assert not cluster.leader_known("t", 3)  # added since
    assert not cluster.leader_known("u", 0)
