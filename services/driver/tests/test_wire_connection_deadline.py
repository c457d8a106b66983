"""A connection whose writer's lease ran out writes nothing more: the bytes of a request
the socket had not taken are never sent, the connection is closed, and the broker drops
the request it never received whole."""

from __future__ import annotations

import socket
import time

import pytest
from srm_driver.copier.wire.apis import PRODUCE
from srm_driver.copier.wire.connection import Connection
from srm_driver.copier.wire.errors import WireError


def test_bytes_left_queued_past_the_writers_deadline_are_never_written() -> None:
    ours, broker = socket.socketpair()
    ours.setblocking(False)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    connection = Connection(ours, "broker-1", "srm")
    deadline = [time.monotonic_ns() + 60 * 1_000_000_000]
    connection.write_by = lambda: deadline[0]
    connection.send(PRODUCE, [b"x" * (8 << 20)])  # far more than the socket takes at once
    assert connection.wants_write, "the rest is queued for later turns"
    taken = len(broker.recv(1 << 20))
    deadline[0] = time.monotonic_ns() - 1  # the lease ran out meanwhile
    with pytest.raises(WireError, match="before the writer's lease ran out"):
        connection.write()
    assert connection.broken
    broker.setblocking(False)
    rest = b""
    try:
        while chunk := broker.recv(1 << 20):
            rest += chunk
    except BlockingIOError:
        pass
    assert taken + len(rest) < 8 << 20, "the request never reached the broker whole"
    broker.close()


def test_without_a_deadline_the_queued_bytes_are_written_as_the_socket_takes_them() -> None:
    ours, broker = socket.socketpair()
    ours.setblocking(False)
    connection = Connection(ours, "broker-1", "srm")
    connection.send(PRODUCE, [b"y" * (1 << 20)])
    got = 0
    while got < (1 << 20):
        got += len(broker.recv(1 << 20))
        connection.write()
    assert got >= 1 << 20
    broker.close()
    ours.close()
