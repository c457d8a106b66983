"""MM2 settings SRM accepts but does not act on, as the lines to report at start-up.

Why: an MM2 file must load unchanged (no error for a key MM2 knows), but a setting that
silently does nothing is worse than an error: the operator believes the setting changes
something, or that a custom filter runs. So every such setting the file *asks for* is
reported once when a service starts (srm-driver and srm-coordinator log the lines at
WARNING), one line per key family, naming where it is set::

    add.source.alias.to.metrics = true                (top level)
    backup->primary.add.source.alias.to.metrics = false
    primary->backup.use.defaults.from = source

    accepted for MirrorMaker 2 compatibility, not supported: add.source.alias.to.metrics
      (set on primary->backup): every raw metrics sample names its flow, source and ...
    accepted for MirrorMaker 2 compatibility, not supported: use.defaults.from=source
      (set on primary->backup): a config at its default on the source is left at ...

(one line each, wrapped here). When a family is reported, and when it stays quiet:

* only keys the file writes (top level or per flow) count; MM2's defaults never do;
* a switch counts when it turns the missing feature on (``add.source.alias.to.metrics
  = true``); ``false`` asks for what SRM does anyway;
* a choice counts when it asks for what SRM does not do (``use.defaults.from = source``,
  ``emit.offset-syncs.enabled = false``); a plug-in class when it is not MM2's default;
* a tuning value SRM has no use for (``offset.lag.max``, ``consumer.poll.timeout.ms``,
  ``admin.timeout.ms``, ``exactly.once.support``) counts whatever it is: the user
  expects it to change something;
* keys SRM passes through without reading (Connect worker keys such as
  ``config.providers``) count wherever they are, top level, per flow or per cluster,
  except where the driver or coordinator reads them (:data:`READ_AT_TOP_LEVEL`,
  :data:`READ_ANYWHERE`).

``sync.topic.acls.*`` takes effect (the driver's ACL sync, :mod:`srm_driver.acl_sync`)
and is never reported.

A flow counts whether or not it is enabled: srm-control may enable it later.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass

from srm_common.config.keys import CONNECTOR_KEYS, LEGACY_KEYS
from srm_common.config.model import FlowConfig, SrmConfig

PREFIX = "accepted for MirrorMaker 2 compatibility, not supported"

READ_ANYWHERE = frozenset({"offset.storage.partitions", "offset.storage.replication.factor"})
"""Connect worker keys the driver reads at top, flow or (target) cluster level
(:mod:`srm_driver.settings`: its progress topic, ``mm2-offsets.<S>.internal``)."""

READ_AT_TOP_LEVEL = READ_ANYWHERE | {
    "srm.control.cluster",
    "streams.replication.manager.driver.target.cluster",
    "srm.control.topic.prefix",
    "srm.control.replication.factor",
    "srm.driver.session.timeout.ms",
    "srm.driver.heartbeat.interval.ms",
    "srm.driver.lease.ms",
    "srm.driver.write.timeout.ms",
    "srm.copier",  # srm_driver.settings: python accepted, jvm refused (the slot was removed)
    # The metrics aggregator's (srm_metrics_aggregator.settings) and the gateway's.
    "srm.metrics.windows",
    "srm.metrics.grace.ms",
    "srm.metrics.update.ms",
    "srm.metrics.aggregator.id",
    "srm.metrics.topic.partitions",
    "srm.freshness.objective.ms",
    # Every service's HTTP listener and access check (srm_common.adapters.http_auth,
    # http_tls: SRM's listeners keys).
    "srm.http.tokens.file",
    "srm.http.allowed.hosts",
    "srm.http.delegators",
    "listeners",
    *(
        f"listeners.https.ssl.{key}"
        for key in (
            "keystore.location",
            "keystore.password",
            "keystore.type",
            "key.password",
            "truststore.location",
            "truststore.password",
            "truststore.type",
            "client.auth",
        )
    ),
}
"""Keys outside the MM2 catalogue read at top level: the control path's
(:mod:`srm_common.config.control`), the aggregator's and the gateway's; nowhere else.
Every other one is reported."""


Asks = Callable[[Mapping[str, str], Mapping[str, str]], list[str]]
"""From a family's values in one flow (written ones only) and their MM2 defaults, the
written keys that ask for the missing feature."""


@dataclass(frozen=True)
class Family:
    """Keys SRM does not act on; ``why`` says what SRM does instead."""

    keys: tuple[str, ...]
    why: str
    asks: Asks
    shown_value: bool = False  # name the value in the line (use.defaults.from=source)


def _any(written: Mapping[str, str], _defaults: Mapping[str, str]) -> list[str]:
    return list(written)


def _is(value: str) -> Asks:
    def asks(written: Mapping[str, str], _defaults: Mapping[str, str]) -> list[str]:
        return [key for key, v in written.items() if v == value]

    return asks


def _not_default(written: Mapping[str, str], defaults: Mapping[str, str]) -> list[str]:
    return [key for key, value in written.items() if value != defaults[key]]


FAMILIES: tuple[Family, ...] = (
    Family(
        ("offset.lag.max",),
        "offset syncs are written at the start of each copy plan, around every upstream gap"
        " and at every report of the copy slots, whatever the lag",
        _any,
    ),
    Family(
        ("emit.offset-syncs.enabled",),
        "offset syncs are always written",
        _is("false"),
        shown_value=True,
    ),
    Family(
        ("use.defaults.from",),
        "a config at its default on the source is left at the target's default on the"
        " remote topic (use.defaults.from=target)",
        _is("source"),
        shown_value=True,
    ),
    Family(
        ("consumer.poll.timeout.ms",),
        "the copy loop waits srm.idle.wait.ms for source records instead",
        _any,
    ),
    Family(
        ("admin.timeout.ms",),
        "admin requests use SRM's own timeouts (15 s to list a cluster, 30 s otherwise)",
        _any,
    ),
    Family(
        ("topic.filter.class", "group.filter.class", "config.property.filter.class"),
        "only MM2's default filters exist; use topics, topics.exclude, groups,"
        " groups.exclude and config.properties.exclude",
        _not_default,
        shown_value=True,
    ),
    Family(
        ("forwarding.admin.class",),
        "admin requests go straight to the clusters; no ForwardingAdmin is loaded",
        _not_default,
        shown_value=True,
    ),
    Family(
        ("exactly.once.support",),
        "the copy is always exactly once, without Connect's transactions (docs/driver.md)",
        _any,
    ),
    Family(
        ("add.source.alias.to.metrics",),
        "every raw metrics sample names its flow, source and target (docs/metrics.md)",
        _is("true"),
    ),
)

_PASS_THROUGH_WHY = (
    "SRM runs no Connect worker and reads none of these (of the worker keys it reads"
    " offset.storage.partitions and offset.storage.replication.factor)"
)


def unsupported_settings(config: SrmConfig) -> tuple[str, ...]:
    """One line per key family ``config`` sets to something SRM does not do (see the
    module docstring); empty when there is none."""
    flows = list(config.flows.values())
    lines = []
    for family in FAMILIES:
        where: list[str] = []
        shown: dict[str, None] = {}
        for flow in flows:
            written = _written(flow, family.keys)
            asking = family.asks(written, _DEFAULTS)
            if asking:
                where.append(flow.name)
            for key in asking:
                shown[f"{key}={written[key]}" if family.shown_value else key] = None
        if where:
            places = "every flow" if len(where) == len(flows) else ", ".join(where)
            lines.append(f"{PREFIX}: {', '.join(shown)} (set on {places}): {family.why}")
    passed = _pass_through(config)
    if passed:
        keys = ", ".join(f"{key} (set {', '.join(places)})" for key, places in passed.items())
        lines.append(f"{PREFIX}: {keys}: {_PASS_THROUGH_WHY}")
    return tuple(lines)


# As the model keeps values: the catalogue writes booleans and choices in lower case.
_DEFAULTS: Mapping[str, str] = {
    key: CONNECTOR_KEYS[key].default for family in FAMILIES for key in family.keys
}


def _written(flow: FlowConfig, keys: tuple[str, ...]) -> dict[str, str]:
    """The family's keys the file sets for ``flow``, as strings (booleans and choices
    lower case, as the model keeps them)."""
    out = {}
    for key in keys:
        if key not in flow.written:
            continue
        field = CONNECTOR_KEYS[key].field
        out[key] = str(getattr(flow, field)) if field else flow.extra[key]
    return out


def _pass_through(config: SrmConfig) -> dict[str, list[str]]:
    """Unread keys, sorted, with where they are set: ``at top level``, ``on <flow>``,
    ``on cluster <alias>``."""
    found: dict[str, list[str]] = {}

    def note(keys: Iterable[str], place: str, read: Container[str], skip: Container[str]) -> None:
        for key in keys:
            known = key in CONNECTOR_KEYS or key in LEGACY_KEYS or key in read
            if not known and key not in skip:
                found.setdefault(key, []).append(place)

    # config.providers and config.providers.<name>.class are read when the file loads
    # (srm_common.config.providers), at top level as in MM2.
    providers = {k for k in config.extra if k.split(".")[:2] == ["config", "providers"]}
    note(config.extra, "at top level", READ_AT_TOP_LEVEL | providers, ())
    for flow in config.flows.values():
        # A flow's extra holds the top-level keys too, reported once above.
        note(flow.extra, f"on {flow.name}", READ_ANYWHERE, config.extra)
    for cluster in config.clusters.values():
        note(cluster.extra, f"on cluster {cluster.alias}", READ_ANYWHERE, ())
    return dict(sorted(found.items()))
