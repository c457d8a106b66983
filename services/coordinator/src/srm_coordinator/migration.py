"""Moving from the single log of an earlier release to a log per target cluster.

Releases before per-target logs kept every flow's configuration in one log,
``<prefix>.events.internal`` on ``srm.control.cluster``. When the first leader of a
target T finds T's log empty, it reads that log and, unless it says T moved already,
starts T's log with the configuration of the flows into T (``srm_common.control.carry``):
switches and lists, the file's baseline, halts, resumes, losses. Then it writes
``log.migrated`` (T, the new log's id) into the old log, so nothing moves twice::

    old log L1 (primary)  ... topics.allowed primary->backup: sales.* ... log.migrated backup L2
    backup's log L2       log.started L2 (target backup, migrated from L1 ...)
                          config.applied, flow.enabled primary->backup,
                          topics.allowed primary->backup: orders, sales.*, ...

The step is in the audit twice (both events name the coordinator that made it), the old
log stays for history (``srm-control audit`` and the gateway read it as
``legacy@<alias>``), and a release before this one reads ``log.migrated`` as an event of
a newer SRM: its coordinators stand by rather than lead the old log again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from srm_common.control.carry import configuration_events, into
from srm_common.control.schema import Event, LogStarted
from srm_common.control.state import ControlState
from srm_common.errors import SrmError

log = logging.getLogger(__name__)

RETRY_S = 5.0


@dataclass(frozen=True)
class Migration:
    """The old single log as a target's first leader found it: ``state`` folded to its
    end, ``where`` its topic and cluster in words."""

    state: ControlState
    where: str

    def moved(self, target: str) -> bool:
        """The old log says the flows into ``target`` moved already."""
        return target in self.state.migrated

    def events(self, target: str) -> tuple[str, list[Event]]:
        """The new log's id and its first events: its identity, then the configuration
        of the flows into ``target`` as the old log has it."""
        log_id = uuid.uuid4().hex
        old = self.state.log_id or "(without an id)"
        started = LogStarted(log_id, None, f"migrated from log {old} ({self.where})", target)
        return log_id, [started, *configuration_events(self.state, into(target))]


class LegacyLog(Protocol):
    """The old single log (:mod:`srm_coordinator.bootstrap` builds the Kafka one)."""

    def read(self) -> Migration | None:
        """The old log folded to its end; None when its topic does not exist (nothing to
        move). :class:`~srm_common.errors.ControlLogError` when its cluster does not
        answer: the take-over waits for it rather than start without the old lists."""
        ...

    def mark(self, target: str, log_id: str) -> None:
        """Append ``log.migrated`` (``target``, ``log_id``) to the old log."""
        ...


LegacyFactory = Callable[[], LegacyLog]


class Mover:
    """One target's side of the move: the old log is read when a take-over finds the
    target's log empty (:meth:`read`), and marked once that take-over is committed
    (:meth:`committed`, then :meth:`mark` every round until it is written)."""

    def __init__(
        self, target: str, legacy: LegacyFactory | None, monotonic: Callable[[], float]
    ) -> None:
        self.target = target
        self._legacy = legacy
        self._monotonic = monotonic
        self._pending: str | None = None
        self._retry_at = 0.0

    def read(self, state: ControlState) -> Migration | None:
        """The old log, when ``state`` (the target's log) is empty and there is one;
        :class:`~srm_common.errors.ControlLogError` when it cannot be read now."""
        if state.offset >= 0 or self._legacy is None:
            return None
        return self._legacy().read()

    def committed(self, log_id: str | None) -> None:
        """The take-over that started log ``log_id`` from the old log is in the log."""
        self._pending = log_id

    def mark(self, coordinator: str) -> None:
        """Tell the old log that the flows into the target moved (once; a failure is
        tried again after RETRY_S)."""
        log_id = self._pending
        if log_id is None or self._legacy is None or self._monotonic() < self._retry_at:
            return
        try:
            self._legacy().mark(self.target, log_id)
        except SrmError as exc:
            log.warning(
                "%s: cannot yet tell the old log that %s moved: %s (retrying)",
                coordinator,
                self.target,
                exc,
            )
            self._retry_at = self._monotonic() + RETRY_S
            return
        self._pending = None
        log.info("%s: the old log says %s moved to log %s", coordinator, self.target, log_id)
