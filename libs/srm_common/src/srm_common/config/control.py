"""Where the control path lives and how fast it reacts: the ``srm.control.*`` and
``srm.driver.*`` keys, read once from a loaded configuration.

Every cluster some flow writes into (every cluster, when each ordered pair is a flow)
holds the control path *of the flows into it*, as SRM's Connect groups do: an event
log, the heartbeats of the drivers that serve it and its coordinators' election, three
one-partition topics sharing a prefix (:class:`ControlSettings`, one per target in
:class:`ControlPlane`). A lost cluster stops only the flows that read from or write to
it; the others keep copying *and* changing. Names end in ``.internal``, so MM2's default
topic filter never replicates them.

Releases before per-target logs kept one log for every flow on one *control cluster*
(``srm.control.cluster``, the first alias by default) under other names; that log is
read once per target to move its configuration into the target's log
(:attr:`ControlPlane.legacy`), then only for history.

SRM's *Driver Target Cluster* key (``streams.replication.manager.driver.target.cluster``)
pins a driver (and a coordinator) to the targets it names (:func:`pinned_targets`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from srm_common.config.model import FlowConfig, SrmConfig
from srm_common.errors import ConfigError

if TYPE_CHECKING:
    from srm_common.control.flow_records import FlowState

DEFAULT_PREFIX = "srm-control"
TARGET_KEY = "streams.replication.manager.driver.target.cluster"
LEGACY_PREFIX = "legacy@"


@dataclass(frozen=True)
class ControlSettings:
    """The control path of one log: its cluster, topics, clients and timings.

    ``cluster`` is the target cluster whose flows the log holds; ``legacy`` marks the
    single log of earlier releases (other topic names, on ``srm.control.cluster``)."""

    cluster: str
    client: Mapping[str, str]
    prefix: str
    session_timeout_ms: int
    heartbeat_interval_ms: int
    replication_factor: int
    lease_ms: int = 5000
    write_timeout_ms: int = 10000
    legacy: bool = False

    @property
    def name(self) -> str:
        """How the log is called everywhere: its target's alias, or ``legacy@<alias>``."""
        return f"{LEGACY_PREFIX}{self.cluster}" if self.legacy else self.cluster

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
        """The event log: every fact about the flows into this cluster, kept forever."""
        return f"{self.prefix}.{'events' if self.legacy else 'log'}.internal"

    @property
    def drivers_topic(self) -> str:
        """Heartbeats of the drivers serving this cluster (short retention)."""
        return f"{self.prefix}.{'drivers' if self.legacy else 'beats'}.internal"

    @property
    def election_topic(self) -> str:
        """One partition; the coordinator that the group assigns it to leads the log."""
        return f"{self.prefix}.{'election' if self.legacy else 'leader'}.internal"

    @property
    def transactional_id(self) -> str:
        """Fixed for every coordinator of this log: a new leader's init fences the old."""
        return f"{self.prefix}.{'coordinator' if self.legacy else 'log-leader'}"

    @property
    def election_group(self) -> str:
        return f"{self.prefix}.{'coordinators' if self.legacy else 'leaders'}"


@dataclass(frozen=True)
class ControlPlane:
    """Every log of a configuration: one per target cluster (``logs``, by alias), and
    where the single log of earlier releases would be (``legacy``)."""

    logs: Mapping[str, ControlSettings]
    legacy: ControlSettings
    # Flow name -> the target whose log holds it.
    flow_targets: Mapping[str, str] = field(default_factory=dict[str, str])

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(sorted(self.logs))

    @property
    def lease_ms(self) -> int:
        """The timings every log shares (``srm.driver.*``)."""
        return self.legacy.lease_ms

    @property
    def write_timeout_ms(self) -> int:
        return self.legacy.write_timeout_ms

    def log(self, target: str) -> ControlSettings:
        return self.logs[target]

    def log_of(self, flow: str) -> ControlSettings | None:
        """The log that holds ``flow`` (None: no such configured flow)."""
        target = self.flow_targets.get(flow)
        return self.logs.get(target) if target is not None else None

    def serving(self, targets: Sequence[str] | None) -> ControlPlane:
        """The plane of only these targets (None: all)."""
        if targets is None:
            return self
        chosen = {t: self.logs[t] for t in targets if t in self.logs}
        flows = {f: t for f, t in self.flow_targets.items() if t in chosen}
        return replace(self, logs=chosen, flow_targets=flows)

    def with_client(self, overrides: Mapping[str, str]) -> ControlPlane:
        """Every log's client with ``overrides`` (srm-control's ``--props``)."""
        return replace(
            self,
            logs={t: replace(s, client={**s.client, **overrides}) for t, s in self.logs.items()},
            legacy=replace(self.legacy, client={**self.legacy.client, **overrides}),
        )


def control_plane(config: SrmConfig) -> ControlPlane:
    """The logs of ``config``; :class:`ConfigError` naming the key if a value is bad."""
    base = control_settings(config)
    targets = sorted({flow.target for flow in config.flows.values()})
    logs = {
        alias: replace(base, cluster=alias, client=config.cluster(alias).client_config("admin"))
        for alias in targets
    }
    flows = {flow.name: flow.target for flow in config.flows.values()}
    return ControlPlane(logs=logs, legacy=replace(base, legacy=True), flow_targets=flows)


def control_settings(config: SrmConfig) -> ControlSettings:
    """The timings and prefix of ``config``'s control path, on ``srm.control.cluster``
    (the place of the single log of earlier releases); :class:`ConfigError` naming the
    key if bad. The logs themselves are :func:`control_plane`'s."""
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
    )


def pinned_targets(config: SrmConfig, flag: str | None = None) -> tuple[str, ...] | None:
    """The targets a driver or coordinator serves: ``flag`` (``--target A,B``), else
    SRM's Driver Target Cluster key, else None (every target). :class:`ConfigError`
    naming what is wrong: an unknown alias, or a cluster no flow writes into."""
    key = "--target" if flag is not None else TARGET_KEY
    raw = flag if flag is not None else config.extra.get(TARGET_KEY)
    if raw is None or not raw.strip():
        if flag is not None:
            raise ConfigError("--target needs one or more cluster aliases, comma separated")
        return None
    chosen = tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    targets = {flow.target for flow in config.flows.values()}
    for alias in chosen:
        if alias not in config.clusters:
            known = ", ".join(config.aliases) or "none"
            raise ConfigError(
                f"{key}: unknown cluster alias {alias!r}; known aliases: {known}",
                source=None if flag is not None else config.source,
                key=None if flag is not None else TARGET_KEY,
            )
        if alias not in targets:
            raise ConfigError(
                f"{key}: no flow writes into {alias!r}; targets: {', '.join(sorted(targets))}",
                source=None if flag is not None else config.source,
                key=None if flag is not None else TARGET_KEY,
            )
    return chosen


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
