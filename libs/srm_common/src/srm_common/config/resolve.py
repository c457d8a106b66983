"""From raw entries to the model: aliases, MM2 defaults and precedence, whole-file checks.

Precedence per flow ``S->T`` (``mm2-semantics.md`` §1.3): MM2 defaults, then top-level
keys, then ``S->T.x``. Cluster keys ``S.x``/``T.x`` only feed client configs (see
:mod:`srm_common.config.clients`). A key set twice keeps its last value (Java
``Properties``), with a warning. Legacy ``*.blacklist`` keys count only when the
``*.exclude`` key is set at no level of that flow (MM2 reads both after merging levels).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from srm_common.config.classify import Classifier, Level, Levels
from srm_common.config.families import BOOTSTRAP_SERVERS
from srm_common.config.flows import (
    YAML_DEFAULT_TOPICS,
    Parsed,
    build_flow,
    client_strings,
    known_extra,
    strings,
)
from srm_common.config.keys import CONNECTOR_KEYS, LEGACY_KEYS
from srm_common.config.model import ClusterConfig, FlowConfig, SrmConfig
from srm_common.config.problems import Problems
from srm_common.config.raw import Entry, RawConfig, Style, show_assignment, show_key
from srm_common.config.security_check import check_security
from srm_common.config.validate import alias_problem, parse_value
from srm_common.domain.filters import split_pattern_list
from srm_common.errors import ConfigError
from srm_common.policies import load_replication_policy


def build_config(raw: RawConfig) -> SrmConfig:
    """Validate ``raw`` and build the model; raises one :class:`ConfigError` for all problems."""
    problems = Problems(raw.source)
    for error in raw.problems:
        problems.add_error(error)
    warnings = list(raw.warnings)
    entries = _last_wins(raw.entries, warnings)
    aliases = _aliases(raw, problems)
    levels = Classifier(aliases, raw.style, problems).classify(entries)
    top = _parse_level(levels.top, problems, warnings)
    flow_values = {
        pair: _parse_level(level, problems, warnings) for pair, level in levels.flows.items()
    }
    clusters = {alias: _cluster(alias, raw, entries, levels, problems) for alias in aliases}
    flows: dict[tuple[str, str], FlowConfig] = {}
    default_topics = YAML_DEFAULT_TOPICS if raw.style is Style.YAML else None
    for source in aliases:
        for target in aliases:
            if source != target:
                values = {**top, **flow_values.get((source, target), {})}
                flow = build_flow(
                    source,
                    target,
                    values,
                    levels,
                    clusters,
                    warnings,
                    default_topics=default_topics,
                )
                _check_flow(flow, values, raw, problems)
                flows[(source, target)] = flow
    check_security(clusters, flows, entries, raw.style, problems)
    problems.raise_if_any()
    extra = {**strings(levels.top.extra), **known_extra(top)}
    return SrmConfig(
        source=raw.source,
        clusters=MappingProxyType(clusters),
        flows=MappingProxyType(flows),
        extra=MappingProxyType(extra),
        warnings=tuple(dict.fromkeys(warnings)),
    )


def _last_wins(entries: Iterable[Entry], warnings: list[str]) -> dict[str, Entry]:
    seen: dict[str, list[Entry]] = {}
    for entry in entries:
        seen.setdefault(entry.key, []).append(entry)
    for repeats in seen.values():
        if len(repeats) > 1:
            lines = ", ".join(str(e.line) for e in repeats)
            warnings.append(
                f"key '{repeats[-1].display}' is set {len(repeats)} times (lines"
                f" {lines}); the last value wins"
            )
    return {key: repeats[-1] for key, repeats in seen.items()}


def _aliases(raw: RawConfig, problems: Problems) -> tuple[str, ...]:
    decl = raw.clusters
    example = "'clusters = primary, backup'"
    if raw.style is Style.YAML:
        example = "a 'clusters:' mapping with one entry per alias (e.g. 'primary:')"
    if raw.problems and not (decl and decl.aliases):
        return ()  # the reader's problem (a malformed document or section) says why
    if decl is None:
        problems.add(f"'clusters' is missing; declare the cluster aliases with {example}")
        return ()
    if not decl.aliases:
        problems.add(
            f"no cluster aliases declared; add {example}", key=decl.display, line=decl.line
        )
        return ()
    aliases: dict[str, None] = {}
    for alias in decl.aliases:
        problem = alias_problem(alias.alias)
        if problem is None and alias.alias in aliases:
            problem = f"cluster alias {alias.alias!r} is declared twice"
        if problem is not None:
            problems.add(problem, key=alias.display, line=alias.line)
        aliases[alias.alias] = None
    return tuple(aliases)


def _valid_alias(alias: str) -> bool:
    return alias_problem(alias) is None


def _parse_level(level: Level, problems: Problems, warnings: list[str]) -> Parsed:
    parsed: Parsed = {}
    for key, entry in level.connector.items():
        spec = CONNECTOR_KEYS[LEGACY_KEYS.get(key, key)]
        value = parse_value(spec, entry, problems)
        if value is not None:
            parsed[key] = (value, entry)
        if key in LEGACY_KEYS:
            warnings.append(
                f"key '{entry.display}' is deprecated (removed in Kafka 4.0);"
                f" use '{LEGACY_KEYS[key]}'"
            )
    return parsed


def _cluster(
    alias: str, raw: RawConfig, entries: Mapping[str, Entry], levels: Levels, problems: Problems
) -> ClusterConfig:
    level = levels.clusters[alias]
    connection = {**client_strings(levels.top_connection), **client_strings(level.connection)}
    servers = split_pattern_list(connection.get(BOOTSTRAP_SERVERS, ""))
    key = f"{alias}.{BOOTSTRAP_SERVERS}"
    # An invalid alias or bootstrap value was reported already, as such.
    rejected = (key in entries and BOOTSTRAP_SERVERS not in level.connection) or (
        BOOTSTRAP_SERVERS in entries and BOOTSTRAP_SERVERS not in levels.top_connection
    )
    if servers:
        connection[BOOTSTRAP_SERVERS] = ",".join(servers)
    elif _valid_alias(alias) and not rejected:
        decl = next(a for a in raw.clusters.aliases if a.alias == alias) if raw.clusters else None
        written = entries.get(key)  # present but empty
        aliases = levels.clusters.keys()
        hint = show_assignment(raw.style, key, "host:9092", aliases)
        problems.add(
            f"cluster {alias!r} has no bootstrap servers; add {hint}",
            key=show_key(raw.style, key, aliases),
            line=written.line if written else decl.line if decl else None,
        )
    return ClusterConfig(
        alias=alias,
        bootstrap_servers=servers,
        client=MappingProxyType(connection),
        consumer=MappingProxyType(client_strings(level.clients.get("consumer", {}))),
        producer=MappingProxyType(client_strings(level.clients.get("producer", {}))),
        admin=MappingProxyType(client_strings(level.clients.get("admin", {}))),
        extra=MappingProxyType(client_strings(level.extra)),
    )


def _check_flow(flow: FlowConfig, values: Parsed, raw: RawConfig, problems: Problems) -> None:
    separator = flow.replication_policy_separator
    sep_entry = values.get("replication.policy.separator", (None, None))[1]
    for alias in (flow.source, flow.target):
        if separator and separator in alias and _valid_alias(alias) and raw.clusters:
            decl = next(a for a in raw.clusters.aliases if a.alias == alias)
            where = f" (set at line {sep_entry.line})" if sep_entry and sep_entry.line else ""
            problems.add(
                f"cluster alias {alias!r} contains the replication separator {separator!r}"
                f"{where}, so remote topic names such as '{alias}{separator}orders' could not"
                " be traced to their source; rename the alias or choose another"
                " replication.policy.separator",
                key=decl.display,
                line=decl.line,
            )
    class_entry = values.get("replication.policy.class", (None, None))[1]
    try:
        load_replication_policy(
            flow.replication_policy_class,
            separator=separator,
            internal_topic_separator_enabled=flow.internal_topic_separator_enabled,
            source_alias=flow.source,
        )
    except ConfigError as exc:
        problems.add(exc.message, entry=class_entry, key=None if class_entry else exc.key)
