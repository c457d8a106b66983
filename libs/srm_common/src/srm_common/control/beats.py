"""A driver's heartbeat: who it is (id and incarnation), where it answers, what it runs,
and the timings the leader needs to wait out its writes. Pure; JSON on the wire.

``instance`` tells incarnations of one driver id apart: a driver restarted under its old
id beats with a new instance and rejoins; a second live process with an id in use
replaces the first, which then stops (it can never run the same tasks beside it).
``lease_ms`` and ``write_timeout_ms`` are this driver's: after the leader took tasks from
it without its word, they may run elsewhere only once both have passed
(:attr:`srm_common.config.control.ControlSettings.wait_out_ms`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Beat:
    """One heartbeat; ``at_ms`` is the driver's wall clock (display only); ``seq`` counts
    the beats of one incarnation and orders them (0: a beat of an older driver, ordered
    by ``at_ms`` as before)."""

    driver: str
    url: str
    host: str
    at_ms: int
    generation: int
    running: frozenset[str] = field(default_factory=frozenset)
    leaving: bool = False
    instance: str = ""
    lease_ms: int = 0
    write_timeout_ms: int = 0
    seq: int = 0
    # Where the beat was read in the heartbeats topic (-1: not read from it); orders
    # beats of different incarnations, whose clocks may differ. Never encoded.
    offset: int = -1

    def older_than(self, other: Beat) -> bool:
        """Sent before ``other`` by the same incarnation: by sequence, never by a clock
        that may step (the wall clock decides only between beats without one)."""
        if self.seq and other.seq:
            return self.seq < other.seq
        return self.at_ms < other.at_ms

    def to_bytes(self) -> bytes:
        return json.dumps(
            {
                "driver": self.driver,
                "instance": self.instance,
                "url": self.url,
                "host": self.host,
                "at": self.at_ms,
                "generation": self.generation,
                "running": sorted(self.running),
                "leaving": self.leaving,
                "lease_ms": self.lease_ms,
                "write_timeout_ms": self.write_timeout_ms,
                "seq": self.seq,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_bytes(cls, value: bytes) -> Beat | None:
        """The beat in ``value``, or None for bytes that are not one (ignored)."""
        try:
            data = json.loads(value)
            return cls(
                driver=str(data["driver"]),
                url=str(data["url"]),
                host=str(data.get("host", "")),
                at_ms=int(data["at"]),
                generation=int(data["generation"]),
                running=frozenset(str(t) for t in data.get("running", ())),
                leaving=bool(data.get("leaving", False)),
                instance=str(data.get("instance", "")),
                lease_ms=int(data.get("lease_ms", 0)),
                write_timeout_ms=int(data.get("write_timeout_ms", 0)),
                seq=int(data.get("seq", 0)),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
