"""The records a :class:`srm_common.control.state.ControlState` holds besides flows and
tasks (those are :mod:`srm_common.control.flow_records`): the group's members, halts and
resumes, the commands applied, the leader. Their fields are what audit exports and the
SQL projection write (``srm-control restore`` reads them back), so they change only with
an upcast of those."""

from __future__ import annotations

from dataclasses import dataclass

from srm_common.domain.resume import ResumePoint


@dataclass(frozen=True, slots=True)
class DriverInfo:
    """A member of the group: driver id, incarnation (``instance``, ``""`` for members
    that joined before incarnations existed) and where its REST API answers."""

    driver: str
    url: str
    host: str
    joined_at_ms: int
    instance: str = ""


@dataclass(frozen=True, slots=True)
class HaltInfo:
    """A partition a driver halted, until an operator resumes it."""

    flow: str
    topic: str
    partition: int
    kind: str
    reason: str
    driver: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class ResumeInfo:
    """An operator's resume of a halted partition, for the driver that holds it."""

    flow: str
    topic: str
    partition: int
    mode: str
    offset: int | None
    request_id: str
    by: str
    at_ms: int

    @property
    def point(self) -> ResumePoint:
        """Where it resumes, as one value (the fields stay flat: audit exports and the
        SQL projection hold them so, and ``srm-control restore`` reads both)."""
        return ResumePoint.parse(self.mode, self.offset)


@dataclass(frozen=True, slots=True)
class AppliedCommand:
    """A command the log holds events of (``Envelope.command_id``): when, by whom, and
    how many events it decided. A retry under the same id is answered from this."""

    at_ms: int
    by: str
    events: int


@dataclass(frozen=True, slots=True)
class Leader:
    """The coordinator that leads the log, since when, in which fencing epoch."""

    coordinator: str
    url: str
    epoch: int
    since_ms: int
