"""Waiting on several broker connections at once, from one thread.

:meth:`Pump.turn` waits until one of the connections can be read or written (at most
``timeout`` seconds) and serves each that can; :meth:`Pump.wait` turns until one answer
is in. A copy loop keeps a fetch in flight on its source connection and several Produce
requests on its target connection, and serves both from the same turns.
"""

from __future__ import annotations

import select
import time
from collections.abc import Iterable

from srm_driver.copier.wire.connection import Connection
from srm_driver.copier.wire.errors import WireError

_READ = select.POLLIN | select.POLLPRI
_WRITE = select.POLLOUT
_BROKEN = select.POLLERR | select.POLLHUP | select.POLLNVAL


class Pump:
    def __init__(self, connections: Iterable[Connection] = ()) -> None:
        self._poll = select.poll()
        self._by_fd: dict[int, Connection] = {}
        self._events: dict[int, int] = {}
        for connection in connections:
            self.add(connection)

    def add(self, connection: Connection) -> None:
        fd = connection.fileno()
        self._by_fd[fd] = connection
        self._events[fd] = _READ
        self._poll.register(fd, _READ)

    def remove(self, connection: Connection) -> None:
        for fd, known in list(self._by_fd.items()):
            if known is connection:
                del self._by_fd[fd], self._events[fd]
                self._poll.unregister(fd)

    def turn(self, timeout: float) -> None:
        """Serve every connection that is ready within ``timeout`` seconds (0: only those
        ready now)."""
        for fd, connection in self._by_fd.items():
            events = _READ | _WRITE if connection.wants_write else _READ
            if events != self._events[fd]:
                self._poll.modify(fd, events)
                self._events[fd] = events
        for fd, events in self._poll.poll(max(timeout, 0) * 1000):
            connection = self._by_fd[fd]
            if events & _WRITE:
                connection.write()
            if events & (_READ | _BROKEN):
                connection.read()  # a broken socket raises its WireError here

    def wait(self, connection: Connection, correlation: int, timeout: float) -> memoryview:
        """Turn until request ``correlation`` on ``connection`` is answered."""
        deadline = time.monotonic() + timeout
        while (answer := connection.answer(correlation)) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                api = connection.api_of(correlation)
                what = f"{api.name} request {correlation}" if api else f"request {correlation}"
                raise WireError(f"broker {connection.broker}: no answer to {what} in {timeout} s")
            self.turn(left)
        return answer
