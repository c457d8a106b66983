"""make up's foreground loop: a second signal while it stops does not break the stop off."""

from __future__ import annotations

import os
import signal
from types import SimpleNamespace

from srm_local import stack


class _Lists:
    def __init__(self, config: object) -> None:
        pass

    def poll(self) -> bool:
        return False

    def close(self) -> None:
        pass


def test_a_second_signal_while_stopping_is_ignored_and_the_clusters_still_stop(
    monkeypatch,
) -> None:  # type: ignore[no-untyped-def]
    stopped: list[str] = []

    def interrupted() -> dict[str, set[str]]:
        raise KeyboardInterrupt  # the first Ctrl-C, during a look at the topics

    def stop_services(services: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # make down's SIGTERM, arriving meanwhile
        stopped.append("services")

    monkeypatch.setattr(stack, "WATCH_SECONDS", 0)
    monkeypatch.setattr(stack, "LiveLists", _Lists)
    monkeypatch.setattr(stack, "stop_services", stop_services)
    monkeypatch.setattr(stack, "stop_clusters", lambda clusters: stopped.append("clusters"))
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        cluster = SimpleNamespace(alias="primary", is_running=lambda: True)
        assert stack.watch(SimpleNamespace(), [cluster], interrupted, {}) == 0  # type: ignore[arg-type]
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
    assert stopped == ["services", "clusters"]
