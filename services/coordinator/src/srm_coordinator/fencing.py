"""The leader's fences: after each membership change it committed, the members are
written to every cluster a flow writes into, one thread per cluster, so a slow or
unreachable cluster delays only the tasks that write into it
(:mod:`srm_common.control.fences` says why this makes leases safe to renew there).

A task a departed driver may still run moves only once a fence of the departure's log
position is acknowledged by its target cluster (:meth:`Fencer.acked`) and the wait-out
has passed from that moment.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from srm_common.control.fences import Fence

log = logging.getLogger(__name__)

WRITE_TIMEOUT_S = 5.0
RETRY_S = 1.0
REWRITE_S = 600.0


class FenceWriterPort(Protocol):
    """:class:`~srm_common.adapters.fence_topic.FenceWriter`."""

    def write(self, fence: Fence, timeout: float) -> None: ...
    def close(self) -> None: ...


class Fencer:
    """Writes the wanted fence to each cluster; see the module docstring."""

    def __init__(
        self,
        clusters: Iterable[str],
        writer: Callable[[str], FenceWriterPort],
        *,
        monotonic: Callable[[], float] = time.monotonic,
        rewrite_s: float = REWRITE_S,
    ) -> None:
        self._monotonic = monotonic
        self._rewrite_s = rewrite_s
        self._wanted: Fence | None = None
        self._acked: dict[str, tuple[int, float]] = {}
        self._errors: dict[str, str] = {}
        self._wake = threading.Condition()
        self._stop = False
        self._threads = [
            threading.Thread(
                target=self._run, args=(cluster, writer), name=f"fence-{cluster}", daemon=True
            )
            for cluster in sorted(set(clusters))
        ]
        for thread in self._threads:
            thread.start()

    def want(self, fence: Fence) -> None:
        """Write ``fence`` everywhere (once; then again every ``rewrite_s``)."""
        with self._wake:
            self._wanted = fence
            self._wake.notify_all()

    def acked(self, cluster: str) -> tuple[int, float] | None:
        """(position, monotonic time) of the latest fence ``cluster`` acknowledged."""
        return self._acked.get(cluster)

    def status(self) -> dict[str, dict[str, object]]:
        """Per cluster: the position of the fence in force and the last write error."""
        now = self._monotonic()
        clusters = [thread.name.removeprefix("fence-") for thread in self._threads]
        return {
            cluster: {
                "position": self._acked[cluster][0] if cluster in self._acked else None,
                "acked_s_ago": (
                    round(now - self._acked[cluster][1], 1) if cluster in self._acked else None
                ),
                "error": self._errors.get(cluster),
            }
            for cluster in clusters
        }

    def close(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify_all()
        for thread in self._threads:
            thread.join(WRITE_TIMEOUT_S + 1)

    def _run(self, cluster: str, factory: Callable[[str], FenceWriterPort]) -> None:
        writer: FenceWriterPort | None = None
        written: Fence | None = None
        written_at = 0.0
        while True:
            with self._wake:
                while not self._stop and (
                    self._wanted is None
                    or (
                        self._wanted == written and self._monotonic() - written_at < self._rewrite_s
                    )
                ):
                    self._wake.wait(1.0)
                if self._stop:
                    break
                fence = self._wanted
            assert fence is not None
            try:
                writer = writer or factory(cluster)
                writer.write(fence, WRITE_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - any failure: not written; try again
                if self._errors.get(cluster) != str(exc):
                    log.warning("fence for %s not written yet: %s (retrying)", cluster, exc)
                self._errors[cluster] = str(exc)
                with self._wake:
                    self._wake.wait(RETRY_S)
                continue
            written, written_at = fence, self._monotonic()
            self._errors.pop(cluster, None)
            previous = self._acked.get(cluster)
            if previous is None or previous[0] < fence.position:
                self._acked[cluster] = (fence.position, written_at)
        if writer is not None:
            writer.close()
