"""One cluster as a client sees it: its brokers, the leaders of the topics asked about,
and one connection per broker, opened at first use and checked with ApiVersions
(:func:`~srm_driver.copier.wire.apis.unsupported`) before any other request.

With ``login``, each connection logs in with SASL (:mod:`~srm_driver.copier.wire.sasl`)
after its ApiVersions check. Errors name the broker: a broker that cannot be reached or
lacks a request version is a :class:`~srm_driver.copier.wire.errors.WireError`, an error
code in an answer a :class:`~srm_driver.copier.wire.errors.BrokerError`. Leaders are what
the last :meth:`Cluster.refresh` said; a caller that meets ``NOT_LEADER_OR_FOLLOWER``
refreshes.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Sequence

from srm_driver.copier.wire import apis, messages, sasl
from srm_driver.copier.wire.connection import Buffer, Connection
from srm_driver.copier.wire.errors import BrokerError, WireError
from srm_driver.copier.wire.pump import Pump


def addresses(bootstrap: str) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` as [(host, port), ...]; bad input is one clear error."""
    found = []
    for item in filter(None, (part.strip() for part in bootstrap.split(","))):
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bootstrap server {item!r} is not host:port")
        found.append((host.strip("[]"), int(port)))
    if not found:
        raise ValueError(f"no bootstrap server in {bootstrap!r}")
    return found


class Cluster:
    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str,
        ssl_context: ssl.SSLContext | None = None,
        login: sasl.Sasl | None = None,
        timeout: float = 30.0,
        pump: Pump | None = None,
    ) -> None:
        self._bootstrap = addresses(bootstrap)
        self._client_id, self._ssl, self.timeout = client_id, ssl_context, timeout
        self._login = login
        self.pump = pump or Pump()
        self._connections: dict[str, Connection] = {}
        self.metadata = messages.Metadata({}, {})

    def request(self, connection: Connection, api: apis.Api, body: Sequence[Buffer]) -> memoryview:
        """Send one request and wait for its answer's body."""
        return self.pump.wait(connection, connection.send(api, body), self.timeout)

    def _connect(self, host: str, port: int) -> Connection:
        address = f"{host}:{port}"
        if (known := self._connections.get(address)) is not None:
            return known
        connection = Connection.open(
            host, port, client_id=self._client_id, ssl_context=self._ssl, timeout=self.timeout
        )
        self.pump.add(connection)
        try:
            answer = self.request(connection, apis.API_VERSIONS, [])
            error, ranges = messages.api_versions_response(answer)
            if error:
                raise BrokerError(address, apis.API_VERSIONS.name, error)
            wanted = apis.SPOKEN + (apis.SASL if self._login else ())
            if refused := apis.unsupported(ranges, wanted):
                raise WireError(f"broker {address} does not accept {', '.join(refused)}")
            if self._login is not None:
                self._log_in(connection, self._login)
        except Exception:
            self.pump.remove(connection)
            connection.close()
            raise
        self._connections[address] = connection
        return connection

    def _log_in(self, connection: Connection, login: sasl.Sasl) -> None:
        address = connection.broker
        answer = self.request(
            connection, apis.SASL_HANDSHAKE, [sasl.handshake_request(login.mechanism)]
        )
        error, enabled = sasl.handshake_response(answer)
        if error:
            detail = f"the broker enables {', '.join(enabled) or 'none'}"
            raise BrokerError(address, apis.SASL_HANDSHAKE.name, error, login.mechanism, detail)

        def authenticate(token: bytes) -> bytes:
            body = [sasl.authenticate_request(token)]
            answer = self.request(connection, apis.SASL_AUTHENTICATE, body)
            error, message, reply = sasl.authenticate_response(answer)
            if error:
                name = apis.SASL_AUTHENTICATE.name
                raise BrokerError(address, name, error, f"as {login.username}", message)
            return reply

        try:
            sasl.exchange(login, authenticate)
        except sasl.ScramRefused as exc:
            raise WireError(f"broker {address}: {exc}") from exc

    def any_connection(self) -> Connection:
        """A connection already open, else the first bootstrap server that answers."""
        for connection in self._connections.values():
            return connection
        failures = []
        for host, port in self._bootstrap:
            try:
                return self._connect(host, port)
            except WireError as exc:
                failures.append(str(exc))
        raise WireError("no bootstrap server answered: " + "; ".join(failures))

    def refresh(self, topics: Sequence[str]) -> messages.Metadata:
        """Ask for ``topics``' leaders (and the brokers); a topic's error is raised."""
        connection = self.any_connection()
        answer = self.request(connection, apis.METADATA, [messages.metadata_request(topics)])
        self.metadata = messages.metadata_response(answer)
        for topic in topics:
            error, _ = self.metadata.topics.get(topic, (3, {}))
            if error:
                raise BrokerError(connection.broker, "Metadata", error, f"of {topic}")
        return self.metadata

    def leader(self, topic: str, partition: int) -> Connection:
        """The connection to ``topic-partition``'s leader (from the last refresh), opened
        if it is not open yet."""
        return self._connect(*self._leader_address(topic, partition))

    def open_leader(self, topic: str, partition: int) -> Connection | None:
        """The connection to ``topic-partition``'s leader if it is open, else None: this
        never waits for a broker."""
        host, port = self._leader_address(topic, partition)
        return self._connections.get(f"{host}:{port}")

    def leader_known(self, topic: str, partition: int) -> bool:
        """Whether the last refresh named a leader of ``topic-partition`` (a partition
        added to the topic since, or one without a leader then, is not known)."""
        try:
            self._leader_address(topic, partition)
        except BrokerError:
            return False
        return True

    def _leader_address(self, topic: str, partition: int) -> tuple[str, int]:
        _, partitions = self.metadata.topics.get(topic, (3, {}))
        found = partitions.get(partition)
        where = f"{topic}-{partition}"
        if found is None:
            raise BrokerError("(metadata)", "Metadata", 3, f"of {where}")
        if found.error or found.leader < 0 or found.leader not in self.metadata.brokers:
            raise BrokerError("(metadata)", "Metadata", found.error or 5, f"of {where}")
        broker = self.metadata.brokers[found.leader]
        return broker.host, broker.port

    def init_producer_id(self, connection: Connection | None = None) -> tuple[int, int]:
        """An idempotent producer's (id, epoch); a coordinator still loading is waited for
        (within the timeout)."""
        connection = connection or self.any_connection()
        deadline = time.monotonic() + self.timeout
        body = [messages.init_producer_id_request()]
        while True:
            answer = self.request(connection, apis.INIT_PRODUCER_ID, body)
            error, producer_id, epoch = messages.init_producer_id_response(answer)
            if not error:
                return producer_id, epoch
            failure = BrokerError(connection.broker, apis.INIT_PRODUCER_ID.name, error)
            if not failure.retriable or time.monotonic() > deadline:
                raise failure
            time.sleep(0.2)

    @property
    def broken(self) -> bool:
        """One of its connections failed (:meth:`close` and a new Cluster start over)."""
        return any(connection.broken for connection in self._connections.values())

    def close(self) -> None:
        for connection in self._connections.values():
            self.pump.remove(connection)
            connection.close()
        self._connections.clear()
