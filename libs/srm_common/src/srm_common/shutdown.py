"""A service told to stop exits within a bound, whatever its clusters do.

A graceful stop talks to Kafka: the coordinator appends its last events, the gateway and
the aggregator close consumers and producers, a driver lets its copy slots finish what
they sent. With the clusters gone (or a Spark worker lost) each of those can wait far
longer than anyone waits for a stop: a metrics aggregator once ignored SIGTERM for 40 s,
a driver waited for slots that would never finish. So the first stop signal also arms
the kernel's alarm clock (``alarm(2)``): at the bound the process ends by SIGALRM, which
needs no Python thread, no lock and no event loop to be free. Its exit status then says
so (killed by signal 14, 142 in a shell).

Ending early is safe for every service: the coordinator and the gateway keep nothing
that the event log does not have, the aggregator's folds resume from their changelog,
and a driver's copy resumes exactly once after a crash (docs/design.md), which is all a
driver stopped at the bound is.
"""

from __future__ import annotations

import logging
import signal

SERVICE_STOP_SECONDS = 8
"""Coordinators, the gateway and the aggregators: exit within this of a stop signal
(under the 10 s the local stack and a container orchestrator expect)."""

DRIVER_STOP_SECONDS = 20
"""Drivers: they let their copy slots finish the running batches first."""

log = logging.getLogger(__name__)
_armed: list[int] = []


def exit_within(seconds: int, service: str) -> None:
    """Arm the alarm (once): the process ends ``seconds`` from the first call at the latest.

    Call it from the stop signal's handler (the main thread); a later call keeps the
    first deadline. The disposition of SIGALRM goes back to the default (end the process)
    in case a library set a handler.
    """
    if _armed:
        return
    _armed.append(seconds)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(seconds)
    log.info("%s: stopping; it exits within %d s at the latest", service, seconds)
