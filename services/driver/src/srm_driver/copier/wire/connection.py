"""One connection to one broker: requests framed and sent without joining their
buffers, answers read into one buffer each, several requests in flight.

A request goes out as its 4-byte size and header (one small buffer) followed by the
body's buffers as they are, handed to ``sendmsg`` (scatter/gather: the kernel copies
them straight into the socket, no Python join); under TLS, where ``SSLSocket`` has no
``sendmsg``, one ``send`` per buffer. An answer's size is read first, then the whole answer
is received with ``recv_into`` into one bytearray of that size: the kernel writes it
where the parser reads it, and every field and record batch handed on is a memoryview
slice of it.

Kafka answers a connection's requests in the order they came, so the in-flight requests
are a queue of correlation ids and an answer that does not match the queue's head is a
broken connection (:class:`~srm_driver.copier.wire.errors.WireError`), as is a connection
the broker closed. The socket is non-blocking once open: :meth:`Connection.write` sends
what the kernel takes now, :meth:`Connection.read` takes what it has;
:class:`~srm_driver.copier.wire.pump.Pump` waits on several connections at once.

TLS is the ``ssl.SSLContext`` given (``srm_common.adapters.kafka_clients.ssl_context``
builds it from a cluster's keys); SASL is not spoken yet.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import Callable, Sequence
from itertools import islice

from srm_driver.copier.wire.apis import Api
from srm_driver.copier.wire.errors import WireError
from srm_driver.copier.wire.primitives import Writer

Buffer = bytes | bytearray | memoryview
_HEAD = struct.Struct(">ihhi")  # size, api key, api version, correlation id
_SIZE = struct.Struct(">i")
_IOV_MAX = 1024  # buffers one sendmsg takes (Linux's UIO_MAXIOV)
_BLOCKED = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class Connection:
    """A broker connection (see the module docstring); ``broker`` names it in errors."""

    def __init__(self, sock: socket.socket, broker: str, client_id: str) -> None:
        self.broker = broker
        self._sock = sock
        self._tls = isinstance(sock, ssl.SSLSocket)
        self._client_id = bytes(Writer().nullable_string(client_id).buffer)
        self._next_id = 0
        self._outgoing: deque[memoryview] = deque()
        self._waiting: deque[tuple[int, Api]] = deque()
        self._answers: dict[int, memoryview] = {}
        self._size = bytearray(4)
        self._into: memoryview = memoryview(self._size)
        self._got = 0
        self._body: bytearray | None = None
        self._failed: WireError | None = None
        # When bytes still queued must not be written any more (monotonic ns; None: no
        # bound): a writer whose lease ran out closes the connection instead, and the
        # broker drops the request it never received whole.
        self.write_by: Callable[[], int] | None = None

    @classmethod
    def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str,
        ssl_context: ssl.SSLContext | None = None,
        timeout: float = 30.0,
    ) -> Connection:
        """Connect (and shake hands under TLS) within ``timeout`` seconds."""
        broker = f"{host}:{port}"
        try:
            sock = socket.create_connection((host, port), timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if ssl_context is not None:
                sock = ssl_context.wrap_socket(sock, server_hostname=host)
        except OSError as exc:  # ssl.SSLError included
            raise WireError(f"broker {broker}: cannot connect: {exc}") from exc
        sock.setblocking(False)
        return cls(sock, broker, client_id)

    # -- sending ---------------------------------------------------------------------

    def send(self, api: Api, body: Sequence[Buffer]) -> int:
        """Queue a request and send what the socket takes now; returns its correlation id."""
        self._check()
        correlation = self._next_id
        self._next_id = (correlation + 1) & 0x7FFFFFFF
        size = _HEAD.size - 4 + len(self._client_id) + sum(map(len, body))
        self._outgoing.append(
            memoryview(_HEAD.pack(size, api.key, api.version, correlation) + self._client_id)
        )
        self._outgoing.extend(memoryview(part) for part in body if len(part))
        self._waiting.append((correlation, api))
        self.write()
        return correlation

    @property
    def wants_write(self) -> bool:
        return bool(self._outgoing)

    @property
    def in_flight(self) -> int:
        """Requests sent (or queued) and not answered yet."""
        return len(self._waiting)

    def write(self) -> None:
        """Send what the kernel takes now; the rest stays queued. Past :attr:`write_by`,
        nothing more is written: the connection is closed (:class:`WireError`)."""
        outgoing = self._outgoing
        if outgoing and self.write_by is not None and time.monotonic_ns() >= self.write_by():
            raise self._fail("requests not written whole before the writer's lease ran out")
        while outgoing:
            try:
                if self._tls:
                    sent = self._sock.send(outgoing[0])
                else:
                    sent = self._sock.sendmsg(islice(outgoing, _IOV_MAX))
            except _BLOCKED:
                return
            except OSError as exc:
                raise self._fail(f"cannot send: {exc}") from exc
            while sent:
                head = outgoing[0]
                if sent >= len(head):
                    sent -= len(head)
                    outgoing.popleft()
                else:
                    outgoing[0] = head[sent:]
                    sent = 0

    # -- receiving -------------------------------------------------------------------

    def read(self) -> None:
        """Take what the socket has: the next answer's size, then its bytes."""
        self._check()
        while True:
            wanted = len(self._into) - self._got
            try:
                got = self._sock.recv_into(self._into[self._got :], wanted)
            except _BLOCKED:
                return
            except OSError as exc:
                raise self._fail(f"cannot receive: {exc}") from exc
            if got == 0:
                closed = self._fail("the broker closed the connection")
                if self._answers:
                    return  # answers that came before the close are still handed out
                raise closed
            self._got += got
            if self._got == len(self._into):
                self._complete()
            elif not self._tls:
                return  # the kernel had less than wanted: nothing more now

    def _complete(self) -> None:
        if self._body is None:
            (size,) = _SIZE.unpack(self._size)
            if size < 4:
                raise self._fail(f"an answer of {size} bytes")
            self._body = bytearray(size)
            self._into, self._got = memoryview(self._body), 0
            return
        view = self._into
        (correlation,) = _SIZE.unpack_from(view)
        if not self._waiting or self._waiting[0][0] != correlation:
            expected = self._waiting[0][0] if self._waiting else "none"
            raise self._fail(f"an answer to request {correlation}, expected {expected}")
        self._waiting.popleft()
        self._answers[correlation] = view[4:]
        self._body, self._into, self._got = None, memoryview(self._size), 0

    def answer(self, correlation: int) -> memoryview | None:
        """The body of request ``correlation``'s answer once it is in (taken once); an
        answer that came before the connection broke is handed out, then the failure."""
        if (answer := self._answers.pop(correlation, None)) is not None:
            return answer
        self._check()
        return None

    def api_of(self, correlation: int) -> Api | None:
        for waiting, api in self._waiting:
            if waiting == correlation:
                return api
        return None

    # -- failure and close -----------------------------------------------------------

    def _fail(self, why: str) -> WireError:
        pending = ", ".join(f"{api.name} {c}" for c, api in self._waiting) or "none"
        self._failed = WireError(f"broker {self.broker}: {why} (in flight: {pending})")
        self.close()
        return self._failed

    @property
    def broken(self) -> bool:
        """The connection failed or was closed: it serves nothing more."""
        return self._failed is not None

    def _check(self) -> None:
        if self._failed is not None:
            raise self._failed

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        if self._failed is None:
            self._failed = WireError(f"broker {self.broker}: the connection was closed")
        self._sock.close()
