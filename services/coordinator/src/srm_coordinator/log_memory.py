"""Which event log this coordinator followed, remembered across restarts in a small file.

A coordinator restarted after its event log was deleted must say ``event log lost``
rather than start an empty log: it passes the log id it remembers to the reader as
``known_log`` (:mod:`srm_common.control.integrity`). The memory used to be the SQL
projection the coordinator wrote; the gateway owns the read model now (CQRS), so the
coordinator keeps just this::

    {"v": 1, "topic": "srm-control.events.internal", "log_id": "5f0c..."}

``log_id`` is ``""`` for a log older than log ids (it existed, so an empty topic is
lost). The file is written only when the id changes (the first event read, a restored
log taken up), atomically: a temporary file beside it, fsync, rename, fsync of the
directory, so a crash leaves the old memory or the new one, never half of one. A file
remembering another topic (another ``srm.control.topic.prefix``) is no memory of this
log. An unreadable file is one error line at start naming it: deleting it starts the
coordinator without memory, and a lost log is then not noticed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from srm_common.errors import SrmError

VERSION = 1


class LogMemory:
    """The memory file at ``path`` for the event log ``topic``."""

    def __init__(self, path: Path, topic: str) -> None:
        self.path = path
        self.topic = topic
        parent = path.parent
        if not parent.is_dir() or not os.access(parent, os.W_OK):
            raise SrmError(
                f"cannot write the log memory {path}: {parent} is no writable directory;"
                " give a --state-file in one"
            )
        self._known = self._read()

    def known(self) -> str | None:
        """The log id last followed; ``""``: a log without an id; None: no log yet."""
        return self._known

    def remember(self, log_id: str | None) -> None:
        """This coordinator follows the log ``log_id`` now (None: a log without an id)."""
        known = log_id or ""
        if known == self._known:
            return
        record = {"v": VERSION, "topic": self.topic, "log_id": known}
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        try:
            with temporary.open("w") as file:
                json.dump(record, file)
                file.flush()
                os.fsync(file.fileno())
            temporary.replace(self.path)
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            raise SrmError(f"cannot write the log memory {self.path}: {exc}") from exc
        self._known = known

    def _read(self) -> str | None:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise SrmError(self._unreadable(str(exc))) from exc
        try:
            record = json.loads(text)
        except ValueError:
            raise SrmError(self._unreadable("not JSON")) from None
        if not isinstance(record, dict) or record.get("v") != VERSION:
            raise SrmError(self._unreadable(f"not a version {VERSION} log memory"))
        log_id = record.get("log_id")
        if not isinstance(log_id, str) or not isinstance(record.get("topic"), str):
            raise SrmError(self._unreadable("no log_id and topic strings"))
        return log_id if record["topic"] == self.topic else None

    def _unreadable(self, why: str) -> str:
        return (
            f"cannot read the log memory {self.path} ({why}); it says which event log this"
            " coordinator followed: delete it to start without that memory (a lost log is"
            " then not noticed), or give another --state-file"
        )
