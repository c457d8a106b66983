"""One coordinator process: a coordinator of each target cluster's log it serves.

Every target cluster holds the log of the flows into it (``docs/control-path.md``), so a
process runs one :class:`~srm_coordinator.service.Coordinator` per target (every target
of its configuration, or those it is pinned to with ``--target``), each on its own
thread with its own election, writer and clients::

    srm-coordinator c1 ── log of backup   (election on backup, leads or stands by)
                       ── log of dr       (election on dr)
                       ── log of primary  (its cluster down: retried, the others go on)

A command names a flow, so one log: the HTTP API hands it to that log's coordinator
(:meth:`CoordinatorSite.of_flow`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from srm_common.control.commands import CommandRejected, parse_flow
from srm_common.errors import SrmError

from srm_coordinator.service import Coordinator

log = logging.getLogger(__name__)


class NotServed(CommandRejected):
    """A command for a target whose log this process does not serve."""


class CoordinatorSite:
    """The coordinators of one process by target; :meth:`run` blocks until ``stop``."""

    def __init__(self, coordinator_id: str, coordinators: Mapping[str, Coordinator]) -> None:
        self.id = coordinator_id
        self.logs = dict(sorted(coordinators.items()))
        self.stop = threading.Event()
        self.failure: str | None = None
        self.aliases = next(iter(self.logs.values())).config.aliases if self.logs else ()

    def of_flow(self, flow: str) -> Coordinator:
        """The coordinator of the log that holds ``flow``; :class:`CommandRejected`
        naming the flow's problem, :class:`NotServed` when its target is not served."""
        _source, target = parse_flow(flow, self.aliases)
        coordinator = self.logs.get(target)
        if coordinator is None:
            served = ", ".join(self.logs) or "none"
            raise NotServed(
                f"this coordinator does not serve the log of {target} (it serves {served});"
                f" send the command to one that does"
            )
        return coordinator

    def of_target(self, target: str) -> Coordinator | None:
        return self.logs.get(target)

    def leads(self) -> bool:
        """Leads the log of at least one target."""
        return any(c.leads() for c in self.logs.values())

    def run(self, url: str) -> None:
        """Run every target's coordinator on its own thread until ``stop`` is set."""
        threads = []
        for target, coordinator in self.logs.items():
            thread = threading.Thread(
                target=self._run_one, args=(coordinator, url), name=f"log-{target}", daemon=True
            )
            thread.start()
            threads.append(thread)
        self.stop.wait()
        for coordinator in self.logs.values():
            coordinator.stop.set()
        for thread in threads:
            thread.join(30)

    def _run_one(self, coordinator: Coordinator, url: str) -> None:
        try:
            coordinator.run(url)
        except SrmError as exc:  # refused (a control topic of a wrong shape): one line
            log.error("%s: %s", self.id, exc)
            self.failure = str(exc)
            self.stop.set()
        except Exception as exc:  # a fault of ours in one log: say so, stop the process
            log.exception("%s: the coordinator of %s failed", self.id, coordinator.name)
            self.failure = f"the coordinator of the log of {coordinator.name} failed: {exc}"
            self.stop.set()
