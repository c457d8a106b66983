"""SqlProjection: the control event logs copied into SQL for audit history and replay.

The gateway owns this database (its ``--db-url``) and is its only writer; ``srm-control
audit --db`` and ``restore --from-db`` open it read-only (``migrate=False``). The
gateway's projector feeds decoded events in log order; each becomes one ``srm_events`` row keyed
by its log (a target cluster's alias; ``''`` for the single log of an earlier release)
and its offset there. The last applied position of a log *is* its largest stored offset,
so it is written in the same transaction as the rows and a replay after a crash only
re-offers events that are then skipped (STYLE.md, events). Readers get history filtered by time and
flow, or the stored record values to rebuild any other view.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.util import CommandError
from sqlalchemy import (
    Connection,
    Engine,
    Row,
    create_engine,
    func,
    insert,
    inspect,
    make_url,
    select,
)
from sqlalchemy.exc import (
    ArgumentError,
    IntegrityError,
    NoSuchModuleError,
    OperationalError,
    SQLAlchemyError,
)

from srm_common.adapters.sql.schema import events as _events
from srm_common.errors import ConcurrencyError, SrmError, TransientError

DEFAULT_URL = "sqlite:///srm-projection.db"
MIGRATIONS = Path(__file__).with_name("migrations")
_HINT = "check the URL (the gateway's --db-url; srm-control's --db / --from-db)"
_EXAMPLES = " (for example sqlite:///srm-gateway.db or postgresql+psycopg://srm:PASSWORD@host/srm)"


@dataclass(frozen=True)
class ProjectedEvent:
    """One control event as the read model stores it.

    ``offset`` is the record's position in ``srm.control.events`` (unique, increasing;
    gaps are normal); after a log was restored (``srm-control restore``), the restored
    log's events follow the lost log's, each at the restored log's first row plus its
    offset there, so the table stays one history in order. ``value`` is the exact stored
    record value, so the log can be replayed from SQL; ``summary`` is a human line for
    audit screens.
    """

    offset: int
    at_ms: int
    type: str
    version: int
    by: str | None
    flow: str | None
    summary: str
    value: bytes
    # The log the event is in: a target cluster's alias ("": an earlier release's single log).
    log: str = ""


@dataclass(frozen=True)
class ProjectionStatus:
    """How far the projection got: ``last_offset`` is -1 while ``events`` is 0."""

    events: int
    last_offset: int


def redact_url(url: str) -> str:
    """``url`` fit for messages and logs: any password becomes ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        # Unparseable: hide everything between "user:" and the last "@", to be safe.
        return re.sub(r"(://[^/:@]*:).*@", r"\1***@", url)


class SqlProjection:
    """The ``srm_events`` read model on the database at ``url`` (SQLAlchemy URL).

    Constructing it connects and migrates the schema to the newest revision (the writer,
    the gateway) or, with ``migrate=False`` (readers), checks that the read model is
    there, so a bad URL or unreachable database fails here with one ``SrmError`` line
    naming the URL (password hidden). Later database failures raise ``TransientError``
    (worth retrying) or ``SrmError``. Use as a context manager or call ``close()``.
    """

    def __init__(self, url: str = DEFAULT_URL, *, migrate: bool = True) -> None:
        self.url = redact_url(url)
        self._password = _password_of(url)
        try:
            self._engine: Engine = create_engine(url)
        except NoSuchModuleError as exc:
            name = make_url(url).drivername
            raise self._open_error(f"unknown database or driver {name!r}{_EXAMPLES}") from exc
        except ArgumentError as exc:
            raise self._open_error(f"not a database URL{_EXAMPLES}") from exc
        except ImportError as exc:
            raise self._open_error(f"database driver not installed ({exc})") from exc
        except (ValueError, TypeError) as exc:
            raise self._open_error(f"malformed URL ({exc})") from exc
        try:
            if migrate:
                self._migrate()
            else:
                self._check_tables()
        except CommandError as exc:
            # Typically a newer SRM migrated this database past the revisions we ship.
            self._engine.dispose()
            reason = f"schema this SRM version does not know ({self._reason(exc)})"
            raise self._open_error(reason) from exc
        except SQLAlchemyError as exc:
            self._engine.dispose()
            raise self._open_error(self._reason(exc)) from exc

    def __repr__(self) -> str:
        return f"SqlProjection({self.url!r})"

    def __enter__(self) -> SqlProjection:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release pooled connections; the object is unusable afterwards."""
        self._engine.dispose()

    @property
    def engine(self) -> Engine:
        """The engine, for the other tables of the read model (same database)."""
        return self._engine

    def apply(
        self,
        events: Iterable[ProjectedEvent],
        also: Callable[[Connection], None] | None = None,
    ) -> int:
        """Store the events after their log's ``last_offset()`` in one transaction; return
        how many.

        Events at or below the last stored offset of their log (already projected, or
        redelivered within the batch) are skipped, so re-applying a batch inserts
        nothing. Order of the input does not matter. ``also`` runs in the same transaction
        (the gateway replaces its current-state tables there).
        """
        batch = sorted(events, key=lambda event: (event.log, event.offset))
        with self._translated("apply events"), self._engine.begin() as connection:
            newest: dict[str, int] = {}
            rows: list[dict[str, object]] = []
            for event in batch:
                if event.log not in newest:
                    newest[event.log] = _max_offset(connection, event.log)
                if event.offset > newest[event.log]:
                    rows.append(_row_of(event))
                    newest[event.log] = event.offset
            if rows:
                connection.execute(insert(_events), rows)
            if also is not None:
                also(connection)
        return len(rows)

    def last_offset(self, log: str = "") -> int:
        """The highest projected offset of ``log``, or -1 when none is projected yet."""
        return self.status(log).last_offset

    def status(self, log: str | None = None) -> ProjectionStatus:
        """Row count and last offset (of ``log``; of any log when None), for health and
        lag reporting."""
        query = select(func.count(), func.max(_events.c.log_offset))
        if log is not None:
            query = query.where(_events.c.log == log)
        with self._translated("read status"), self._engine.connect() as connection:
            count, newest = connection.execute(query).one()
        return ProjectionStatus(events=count, last_offset=-1 if newest is None else newest)

    def history(
        self,
        *,
        since_ms: int | None = None,
        until_ms: int | None = None,
        flow: str | None = None,
        limit: int | None = None,
    ) -> list[ProjectedEvent]:
        """Events with ``since_ms <= at_ms <= until_ms`` (each bound optional), by offset.

        ``flow`` keeps one flow's events; ``limit`` keeps the first (oldest) that many, so
        a caller pages forward by passing the last ``at_ms`` or offset it saw.
        """
        if limit is not None and limit < 0:
            raise SrmError(f"history limit must be 0 or more, got {limit}")
        query = select(_events).order_by(_events.c.log, _events.c.log_offset)
        if since_ms is not None:
            query = query.where(_events.c.at_ms >= since_ms)
        if until_ms is not None:
            query = query.where(_events.c.at_ms <= until_ms)
        if flow is not None:
            query = query.where(_events.c.flow == flow)
        if limit is not None:
            query = query.limit(limit)
        with self._translated("read history"), self._engine.connect() as connection:
            return [_event_of(row) for row in connection.execute(query)]

    def values_until(
        self, *, until_ms: int | None = None, log: str = ""
    ) -> list[tuple[int, bytes]]:
        """``(offset, value)`` of every event of ``log`` with ``at_ms <= until_ms``, by
        offset, to replay.

        Values are the bytes exactly as stored in the log; decoding is the caller's.
        """
        return self.values_by_log(until_ms=until_ms).get(log, [])

    def values_by_log(self, *, until_ms: int | None = None) -> dict[str, list[tuple[int, bytes]]]:
        """``(offset, value)`` of every event with ``at_ms <= until_ms``, by log, each by
        offset: every log there is, to replay."""
        query = select(_events.c.log, _events.c.log_offset, _events.c.value).order_by(
            _events.c.log, _events.c.log_offset
        )
        if until_ms is not None:
            query = query.where(_events.c.at_ms <= until_ms)
        found: dict[str, list[tuple[int, bytes]]] = {}
        with self._translated("read values"), self._engine.connect() as connection:
            for log, offset, value in connection.execute(query):
                found.setdefault(log, []).append((offset, bytes(value)))
        return found

    def values_of_type(self, type_: str, log: str = "") -> list[tuple[int, bytes]]:
        """``(offset, value)`` of every event of ``log`` of wire type ``type_``, by offset."""
        query = (
            select(_events.c.log_offset, _events.c.value)
            .where(_events.c.type == type_, _events.c.log == log)
            .order_by(_events.c.log_offset)
        )
        with self._translated("read values"), self._engine.connect() as connection:
            return [(offset, bytes(value)) for offset, value in connection.execute(query)]

    def _migrate(self) -> None:
        config = Config()
        # Config values go through configparser interpolation: a literal "%" must be doubled.
        config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
        config.set_main_option("path_separator", "os")
        with self._engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")

    def _check_tables(self) -> None:
        with self._engine.connect() as connection:
            if not inspect(connection).has_table(_events.name):
                raise SrmError(
                    f"cannot open projection database {self.url}: it holds no {_events.name}"
                    " table; give the database the gateway projects into (its --db-url)"
                )

    def translated(self, action: str) -> contextlib.AbstractContextManager[None]:
        """Database errors inside become this module's errors (see the class)."""
        return self._translated(action)

    @contextmanager
    def _translated(self, action: str) -> Iterator[None]:
        try:
            yield
        except IntegrityError as exc:
            raise ConcurrencyError(
                f"projection database {self.url}: cannot {action}: another writer stored the"
                " same offsets; re-read last_offset() and retry"
            ) from exc
        except OperationalError as exc:
            raise TransientError(
                f"projection database {self.url}: cannot {action}: {self._reason(exc)}"
            ) from exc
        except SQLAlchemyError as exc:
            raise SrmError(
                f"projection database {self.url}: cannot {action}: {self._reason(exc)}"
            ) from exc

    def _open_error(self, reason: str) -> SrmError:
        return SrmError(f"cannot open projection database {self.url}: {reason}; {_HINT}")

    def _reason(self, exc: BaseException) -> str:
        """The driver's own first line (not SQLAlchemy's SQL dump), password scrubbed."""
        cause = getattr(exc, "orig", None) or exc
        lines = str(cause).strip().splitlines()
        reason = lines[0] if lines else type(cause).__name__
        return reason.replace(self._password, "***") if self._password else reason


def _password_of(url: str) -> str | None:
    try:
        return make_url(url).password
    except (ArgumentError, ValueError):
        return None


def _max_offset(connection: Connection, log: str) -> int:
    query = select(func.max(_events.c.log_offset)).where(_events.c.log == log)
    newest = connection.execute(query).scalar()
    return -1 if newest is None else int(newest)


def _row_of(event: ProjectedEvent) -> dict[str, object]:
    return {
        "log": event.log,
        "log_offset": event.offset,
        "at_ms": event.at_ms,
        "type": event.type,
        "version": event.version,
        "actor": event.by,
        "flow": event.flow,
        "summary": event.summary,
        "value": event.value,
    }


def _event_of(row: Row[Any]) -> ProjectedEvent:
    return ProjectedEvent(
        offset=row.log_offset,
        at_ms=row.at_ms,
        type=row.type,
        version=row.version,
        by=row.actor,
        flow=row.flow,
        summary=row.summary,
        value=bytes(row.value),
        log=row.log,
    )
