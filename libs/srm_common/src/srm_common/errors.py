"""The one exception tree of SRM; adapters translate client-library errors into it.

    SrmError
     +-- ConfigError              bad configuration: file, key, line, what would be valid
     |    +-- InvalidPatternError a topic/group regex that does not compile
     +-- InvalidCommandError      a command that the current state refuses
     +-- NotFoundError            an alias, flow, topic or group that does not exist
     +-- ConcurrencyError         expected aggregate version did not match; re-read
     +-- TransientError           worth retrying, bounded, with backoff
     +-- PoisonRecordError        a record that can never be applied (goes to a DLQ)
     +-- RecordFormatError        bytes that are not an MM2 record; a value MM2 cannot encode
     +-- ControlLogError          a log's cluster cannot be reached or refused an operation
          +-- ControlTopicRefused a control topic of a shape that cannot work (never retried)
          +-- Fenced              another coordinator leads: this one may no longer write

Every message is written for an operator: what is wrong, where, and how to fix it.
"""

from __future__ import annotations


class SrmError(Exception):
    """Base of every error SRM raises on purpose."""


class ConfigError(SrmError):
    """Configuration that cannot be used.

    ``source`` names the file (or "command line", "environment"), ``key`` the offending
    key and ``line`` its 1-based line where the format has lines. ``str(error)`` is the
    complete one-line message an operator sees.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        self.message = message
        self.source = source
        self.key = key
        self.line = line
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.source:
            where.append(self.source if self.line is None else f"{self.source}:{self.line}")
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.key:
            where.append(f"key '{self.key}'")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class InvalidPatternError(ConfigError):
    """A regular expression in an allow or deny list that does not compile."""

    def __init__(
        self,
        pattern: str,
        reason: str,
        *,
        source: str | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        self.pattern = pattern
        self.reason = reason
        super().__init__(
            f"invalid regular expression {pattern!r}: {reason}. Patterns must match whole"
            " names (for example 'orders', 'orders-.*' or '.*'); escape a literal dot as '\\.'",
            source=source,
            key=key,
            line=line,
        )


class InvalidCommandError(SrmError):
    """A command that is well formed but refused by the current state."""


class NotFoundError(SrmError):
    """Something named by the caller does not exist."""


class ConcurrencyError(SrmError):
    """The expected aggregate version did not match the stored one; re-read and retry."""


class TransientError(SrmError):
    """A failure that may pass: retry with bounded backoff."""


class PoisonRecordError(SrmError):
    """A record that can never be applied; it goes to the dead-letter topic."""


class RecordFormatError(SrmError):
    """Bytes that do not decode as an MM2 record, or a value MM2's byte format cannot hold.

    The message names the record kind, the part (key or value), the field and the byte
    position, for example ``heartbeat value: field 'timestamp' (INT64) at byte 2 needs
    8 bytes, 3 remain``.
    """


class ControlLogError(SrmError):
    """The cluster of an event log cannot be reached or refused an operation."""


class ControlTopicRefused(ControlLogError):
    """A control topic exists in a shape the control path cannot work with; the message
    says how to fix it (never retried: waiting does not change a topic's shape)."""


class Fenced(ControlLogError):
    """Another coordinator has become leader since this one started writing."""
