"""One-shot reads of whole event logs (srm-control, the gateway's tests, tooling): each
opens its :class:`~srm_common.adapters.event_log_reader.EventLogReader`, reads to the
end and closes it within the call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from srm_common.adapters.control_topics import TIMEOUT_S
from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.config.control import ControlSettings
from srm_common.control.events import Envelope
from srm_common.errors import ControlLogError


def read_log(
    settings: ControlSettings,
    *,
    timeout: float = TIMEOUT_S,
    known_log: str | None = None,
    missing_ok: bool = False,
) -> list[Envelope]:
    """The whole committed event log (for srm-control and tests); records that are not
    events are skipped (and logged). :class:`ControlLogError` with the reason when the
    log is not the ``known_log`` or holds an event of a newer SRM. ``missing_ok``: a log
    whose topic does not exist is empty, at once."""
    reader = EventLogReader(
        settings, client_id=f"srm-log-reader-{time.time_ns()}", known_log=known_log, one_shot=True
    )
    try:
        events = reader.read_to_end(timeout, missing_ok=missing_ok)
        if reader.problem is not None:
            raise ControlLogError(reader.problem.message)
        return events
    finally:
        reader.close()


def read_logs(
    logs: Sequence[ControlSettings], *, timeout: float = TIMEOUT_S
) -> dict[str, list[Envelope] | ControlLogError]:
    """Every log of ``logs`` read at once (one thread each: a cluster that does not
    answer costs one timeout, not one per log), by log name; a log that could not be
    read is the :class:`ControlLogError` that says why; a log whose topic does not exist
    (nothing ever led it, or the single log of an earlier release never was) is left
    out of the answer."""
    found: dict[str, list[Envelope] | ControlLogError] = {}
    missing: set[str] = set()

    def read(settings: ControlSettings) -> None:
        try:
            reader = EventLogReader(
                settings, client_id=f"srm-log-reader-{time.time_ns()}", one_shot=True
            )
            try:
                events = reader.read_to_end(timeout, missing_ok=True)
                if reader.problem is not None:
                    raise ControlLogError(reader.problem.message)
                if reader.missing:
                    missing.add(settings.name)
                else:
                    found[settings.name] = events
            finally:
                reader.close()
        except ControlLogError as exc:
            found[settings.name] = exc

    threads = [
        threading.Thread(target=read, args=(settings,), name=f"read {settings.name}", daemon=True)
        for settings in logs
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout + 15)
    for settings in logs:
        if settings.name not in found and settings.name not in missing:
            found[settings.name] = ControlLogError(
                f"the log of {settings.name} was not read in time; is {settings.cluster} up?"
            )
    return found
