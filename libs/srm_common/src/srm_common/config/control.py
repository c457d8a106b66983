"""Where the control path lives and how fast it reacts: the ``srm.control.*`` and
``srm.driver.*`` keys, read once from a loaded configuration.

The event log, the driver heartbeats and the coordinator election are three topics in
one *control cluster* (any configured alias; the first by default); every cluster a flow
writes into also holds a fence topic, from which drivers renew their leases into it
while the control cluster cannot be reached (:mod:`srm_common.control.fences`). Their names share a
prefix and end in ``.internal``, so MM2's default topic filter never replicates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.errors import ConfigError

if TYPE_CHECKING:
    from srm_common.control.state import FlowState

DEFAULT_PREFIX = "srm-control"


@dataclass(frozen=True)
class ControlSettings:
    """The control path's topics, clients and timings."""

    cluster: str
    client: Mapping[str, str]
    prefix: str
    session_timeout_ms: int
    heartbeat_interval_ms: int
    replication_factor: int
    lease_ms: int = 5000
    write_timeout_ms: int = 10000
    # Client settings of every cluster some flow writes into: each holds the fence
    # topic that leases into it are renewed from (srm_common.control.fences).
    targets: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def wait_out_ms(self) -> int:
        """How long the leader waits, after a driver's tasks were taken from it without
        its word (it left the group silent), before another driver may run them.

        The driver stops handing records to producers ``lease_ms`` after it last
        confirmed its membership (which it cannot do once the removal is in the log); a
        record handed over may wait up to :attr:`max_block_ms` in ``send()`` before the
        producer takes it, and then lands within ``write_timeout_ms`` (the copier
        producer's ``delivery.timeout.ms``) or never. Monotonic clocks of two machines
        drift apart by far less than the 2 % and the second added here.
        """
        total = self.lease_ms + self.max_block_ms + self.write_timeout_ms
        return int(total * 1.02) + 1000

    @property
    def max_block_ms(self) -> int:
        """The copy producer's ``max.block.ms``: how long ``send()`` may wait for
        metadata or buffer space, before the delivery timeout starts counting."""
        return min(1000, self.write_timeout_ms // 4)

    @property
    def events_topic(self) -> str:
        """The event log: every fact about configuration and assignment, kept forever."""
        return f"{self.prefix}.events.internal"

    @property
    def drivers_topic(self) -> str:
        """Driver heartbeats: membership and what each driver runs (short retention)."""
        return f"{self.prefix}.drivers.internal"

    @property
    def fences_topic(self) -> str:
        """On every target cluster: the members that may hold a lease into it."""
        return f"{self.prefix}.fences.internal"

    @property
    def election_topic(self) -> str:
        """One partition; the coordinator that the group assigns it to leads."""
        return f"{self.prefix}.election.internal"

    @property
    def transactional_id(self) -> str:
        """Fixed for every coordinator: a new leader's init fences the old one."""
        return f"{self.prefix}.coordinator"

    @property
    def election_group(self) -> str:
        return f"{self.prefix}.coordinators"


def control_settings(config: SrmConfig) -> ControlSettings:
    """The control settings of ``config``; :class:`ConfigError` naming the key if bad."""
    extra = config.extra
    alias = extra.get("srm.control.cluster", "").strip() or (config.aliases or ("",))[0]
    if alias not in config.clusters:
        known = ", ".join(config.aliases) or "none"
        raise ConfigError(
            f"unknown cluster alias {alias!r}; known aliases: {known}",
            source=config.source,
            key="srm.control.cluster",
        )
    prefix = extra.get("srm.control.topic.prefix", DEFAULT_PREFIX).strip()
    if not prefix or any(c not in _TOPIC_CHARS for c in prefix):
        raise ConfigError(
            f"{prefix!r} cannot start a topic name; use letters, digits, '.', '_' or '-'",
            source=config.source,
            key="srm.control.topic.prefix",
        )
    session = _number(config, "srm.driver.session.timeout.ms", 10000, minimum=1000)
    heartbeat = _number(config, "srm.driver.heartbeat.interval.ms", 1000, minimum=100)
    if heartbeat * 3 > session:
        raise ConfigError(
            f"srm.driver.heartbeat.interval.ms = {heartbeat} leaves too few beats in"
            f" srm.driver.session.timeout.ms = {session}; make the interval at most a third"
            " of the timeout",
            source=config.source,
            key="srm.driver.heartbeat.interval.ms",
        )
    factor = _number(config, "srm.control.replication.factor", -1, minimum=1)
    lease = _number(config, "srm.driver.lease.ms", session // 2, minimum=heartbeat * 2)
    write_timeout = _number(config, "srm.driver.write.timeout.ms", 10000, minimum=1000)
    return ControlSettings(
        cluster=alias,
        client=config.cluster(alias).client_config("admin"),
        prefix=prefix,
        session_timeout_ms=session,
        heartbeat_interval_ms=heartbeat,
        replication_factor=factor,
        lease_ms=lease,
        write_timeout_ms=write_timeout,
        targets={
            alias: config.cluster(alias).client_config("admin")
            for alias in sorted({flow.target for flow in config.flows.values()})
        },
    )


_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _number(config: SrmConfig, key: str, default: int, *, minimum: int) -> int:
    raw = config.extra.get(key)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = None
    if value is None or (value < minimum and not (value == -1 and default == -1)):
        raise ConfigError(
            f"{raw!r} is not a whole number >= {minimum}; e.g. {key} = {max(default, minimum)}",
            source=config.source,
            key=key,
        )
    return value


def effective_flow(flow: FlowConfig, state: FlowState) -> FlowConfig:
    """``flow`` as the event log says it is now: enabled, allow and deny lists from the
    folded state (the config file seeded them; srm-control edits them)."""
    return replace(
        flow,
        enabled=state.enabled,
        topics=tuple(state.topics),
        topics_exclude=tuple(state.topics_exclude),
        groups=tuple(state.groups),
        groups_exclude=tuple(state.groups_exclude),
    )
