"""Which event logs this coordinator followed, remembered across restarts in a small file.

A coordinator restarted after a log was deleted must say ``event log lost`` rather than
start an empty log: it passes the log id it remembers to the reader as ``known_log``
(:mod:`srm_common.control.integrity`). It serves one log per target cluster, so the file
holds one entry per log, by the log's name (its target's alias)::

    {"v": 2, "logs": {"backup": {"topic": "srm-control.log.internal", "log_id": "5f0c..."},
                      "primary": {"topic": "srm-control.log.internal", "log_id": "9e31..."}}}

``log_id`` is ``""`` for a log older than log ids (it existed, so an empty topic is
lost). The file is written only when an id changes (the first event read, a restored
log taken up), atomically: a temporary file beside it, fsync, rename, fsync of the
directory, so a crash leaves the old memory or the new one, never half of one. An entry
of another topic (another ``srm.control.topic.prefix``) is no memory of that log; a
version 1 file (one entry, the single log of an earlier release) is no memory of any
target's log. An unreadable file is one error line at start naming it: deleting it
starts the coordinator without memory, and a lost log is then not noticed.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import cast

from srm_common.errors import SrmError

VERSION = 2


class LogMemory:
    """The memory file at ``path`` of the logs ``topics`` (log name -> events topic)."""

    def __init__(self, path: Path, topics: Mapping[str, str]) -> None:
        self.path = path
        self.topics = dict(topics)
        parent = path.parent
        if not parent.is_dir() or not os.access(parent, os.W_OK):
            raise SrmError(
                f"cannot write the log memory {path}: {parent} is no writable directory;"
                " give a --state-file in one"
            )
        self._entries = self._read()
        self._lock = threading.Lock()  # the coordinators of several logs share the file

    def known(self, name: str) -> str | None:
        """The id of log ``name`` last followed; ``""``: a log without an id; None: none."""
        entry = self._entries.get(name)
        if entry is None or entry["topic"] != self.topics.get(name):
            return None
        return entry["log_id"]

    def remember(self, name: str, log_id: str | None) -> None:
        """This coordinator follows log ``log_id`` as ``name`` now (None: without an id)."""
        with self._lock:
            self._remember(name, log_id or "")

    def _remember(self, name: str, known: str) -> None:
        if self.known(name) == known:
            return
        entries = {**self._entries, name: {"topic": self.topics[name], "log_id": known}}
        record = {"v": VERSION, "logs": dict(sorted(entries.items()))}
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
        self._entries = entries

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise SrmError(self._unreadable(str(exc))) from exc
        try:
            record = json.loads(text)
        except ValueError:
            raise SrmError(self._unreadable("not JSON")) from None
        if isinstance(record, dict) and record.get("v") == 1:
            return {}  # the single log of an earlier release: no target's log
        if not isinstance(record, dict) or record.get("v") != VERSION:
            raise SrmError(self._unreadable(f"not a version {VERSION} log memory"))
        logs = cast(dict[str, object], record).get("logs")
        if not isinstance(logs, dict):
            raise SrmError(self._unreadable("no logs object"))
        entries: dict[str, dict[str, str]] = {}
        for name, entry in cast(dict[str, object], logs).items():
            fields = cast(dict[str, object], entry) if isinstance(entry, dict) else {}
            topic, log_id = fields.get("topic"), fields.get("log_id")
            if not isinstance(topic, str) or not isinstance(log_id, str):
                raise SrmError(self._unreadable(f"no log_id and topic strings for {name}"))
            entries[name] = {"topic": topic, "log_id": log_id}
        return entries

    def _unreadable(self, why: str) -> str:
        return (
            f"cannot read the log memory {self.path} ({why}); it says which event logs this"
            " coordinator followed: delete it to start without that memory (a lost log is"
            " then not noticed), or give another --state-file"
        )
