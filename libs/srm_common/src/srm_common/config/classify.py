"""Sorting flat keys into levels (top, cluster, flow) and kinds, with the unknown-key rule.

A key is a flow key (``S->T.x``), a cluster key (``S.x`` for a declared alias) or a
top-level key. Within a level it is, in this order:

1. a known MM2 connector key or legacy alias (``keys.CONNECTOR_KEYS``, ``LEGACY_KEYS``);
2. a client key: ``consumer.``/``producer.``/``admin.`` (and at top/flow level
   ``source.*``, ``target.*``, ``producer.override.*``), any suffix accepted;
3. a connection key (``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``;
   an ``ssl.*``/``sasl.*`` key close to a real Kafka one is reported as a typo);
4. at top level, ``S.<connection or client key>`` with an undeclared ``S``: an error
   naming the known aliases;
5. close to a known key (difflib ratio >= 0.85, or >= 0.9 for keys in a Connect/worker
   family such as ``task.*`` or ``offset.flush.*``): an error with a suggestion;
6. otherwise kept in ``extra`` and passed through (Connect worker keys, plugin keys).

Misplaced keys are errors too: connector keys at cluster level (MM2 ignores them),
connection keys at flow level (MM2 ignores them), ``S.x`` for an undeclared alias.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from srm_common.config.families import (
    CLIENT_ROLES,
    CONNECTION_KEYS,
    FOREIGN_SUGGESTION_CUTOFF,
    SASL_KEYS,
    SSL_KEYS,
    client_prefix,
    is_connection_key,
    is_foreign_key,
    suggest_key,
)
from srm_common.config.keys import CONNECTOR_KEYS, LEGACY_KEYS, connector_key_names
from srm_common.config.problems import Problems
from srm_common.config.raw import Entry, Style, show_key
from srm_common.config.validate import check_connection_value

_PREFIX_WORDS = (*CLIENT_ROLES, "source", "target")


@dataclass
class Level:
    """Keys of the top level or of one flow, sorted by what they configure."""

    connector: dict[str, Entry] = field(default_factory=dict[str, Entry])
    clients: dict[str, dict[str, Entry]] = field(default_factory=dict[str, dict[str, Entry]])
    extra: dict[str, Entry] = field(default_factory=dict[str, Entry])


@dataclass
class ClusterLevel:
    """Keys ``<alias>.x`` of one cluster."""

    connection: dict[str, Entry] = field(default_factory=dict[str, Entry])
    clients: dict[str, dict[str, Entry]] = field(default_factory=dict[str, dict[str, Entry]])
    extra: dict[str, Entry] = field(default_factory=dict[str, Entry])


@dataclass
class Levels:
    """Every entry of a file, sorted; invalid entries are left out (and reported)."""

    top: Level
    top_connection: dict[str, Entry]
    clusters: dict[str, ClusterLevel]
    flows: dict[tuple[str, str], Level]


class Classifier:
    """Sorts the entries of one file; problems go to ``problems``."""

    def __init__(self, aliases: Sequence[str], style: Style, problems: Problems) -> None:
        self.aliases = tuple(aliases)
        self.style = style
        self.problems = problems
        self.levels = Levels(Level(), {}, {a: ClusterLevel() for a in aliases}, {})

    def show(self, key: str) -> str:
        return show_key(self.style, key, self.aliases)

    def classify(self, entries: Mapping[str, Entry]) -> Levels:
        for key, entry in entries.items():
            head, dot, rest = key.partition(".")
            if "->" in head:
                self._flow_entry(head, rest, entry)
            elif dot and head in self.levels.clusters:
                self._cluster_entry(head, rest, entry)
            else:
                self._level_entry(self.levels.top, key, entry, flow=None)
        return self.levels

    def _flow_entry(self, name: str, sub: str, entry: Entry) -> None:
        source, _, target = name.partition("->")
        if not sub:
            example = self.show(f"{name}.enabled")
            self.problems.add(
                f"a flow key needs a setting after the flow name, e.g. '{example}'", entry=entry
            )
            return
        for alias in (source, target):
            if alias not in self.levels.clusters:
                if self.aliases:  # with no aliases, the missing 'clusters' is the problem
                    self.problems.add(self._unknown_alias(alias, f" in flow '{name}'"), entry=entry)
                return
        if source == target:
            self.problems.add(
                f"a flow from cluster {source!r} to itself is not allowed; source and target"
                f" must be two different aliases of: {', '.join(self.aliases)}",
                entry=entry,
            )
            return
        level = self.levels.flows.setdefault((source, target), Level())
        self._level_entry(level, sub, entry, flow=(source, target))

    def _level_entry(
        self, level: Level, key: str, entry: Entry, *, flow: tuple[str, str] | None
    ) -> None:
        full = key if flow is None else f"{flow[0]}->{flow[1]}.{key}"
        spec = CONNECTOR_KEYS.get(key)
        foreign = is_foreign_key(key)
        prefix = None if foreign else client_prefix(key)
        if spec is not None and spec.flow_only and flow is None:
            example = self.show(f"{self._example_flow()}.{key}")
            self.problems.add(
                f"MM2 ignores '{key}' at top level (it is a Connect key, not an MM2 one);"
                f" set it per flow, e.g. '{example}'",
                entry=entry,
            )
        elif spec is not None or key in LEGACY_KEYS:
            level.connector[key] = entry
        elif prefix is not None:
            level.clients.setdefault(prefix, {})[key[len(prefix) + 1 :]] = entry
        elif is_connection_key(key) and flow is not None:
            source, target = (self.show(f"{alias}.{key}") for alias in flow)
            self.problems.add(
                f"connection settings belong to a cluster and MM2 ignores them per flow;"
                f" set '{source}' or '{target}' instead",
                entry=entry,
            )
        elif is_connection_key(key):
            if self._connection_ok(key, entry):
                self.levels.top_connection[key] = entry
        elif flow is None and not foreign and self._looks_like_cluster_key(key):
            if self.aliases:
                head = key.partition(".")[0]
                self.problems.add(self._unknown_alias(head, ""), entry=entry)
        elif (suggestion := self._suggest(key, top=flow is None, foreign=foreign)) is not None:
            wanted = suggestion if flow is None else f"{flow[0]}->{flow[1]}.{suggestion}"
            self.problems.add(
                f"unknown key '{self.show(full)}'; did you mean '{self.show(wanted)}'?",
                entry=entry,
            )
        else:
            level.extra[key] = entry

    def _cluster_entry(self, alias: str, key: str, entry: Entry) -> None:
        cluster = self.levels.clusters[alias]
        role, dot, rest = key.partition(".")
        if is_connection_key(key):
            if self._connection_ok(key, entry):
                cluster.connection[key] = entry
        elif role in CLIENT_ROLES and dot and rest:
            cluster.clients.setdefault(role, {})[rest] = entry
        elif key in CONNECTOR_KEYS or key in LEGACY_KEYS:
            self.problems.add(
                f"'{key}' is a replication setting and MM2 ignores it at cluster level;"
                f" set it for every flow as '{self.show(key)}' or for one flow as"
                f" '{self.show(f'{self._example_flow(alias)}.{key}')}'",
                entry=entry,
            )
        elif is_foreign_key(key):
            cluster.extra[key] = entry
        elif (suggestion := suggest_key(key, CONNECTION_KEYS, CLIENT_ROLES)) is not None:
            self.problems.add(
                f"unknown key '{self.show(f'{alias}.{key}')}';"
                f" did you mean '{self.show(f'{alias}.{suggestion}')}'?",
                entry=entry,
            )
        else:
            cluster.extra[key] = entry

    def _connection_ok(self, key: str, entry: Entry) -> bool:
        if key not in CONNECTION_KEYS:  # an ssl.*/sasl.* key Kafka does not define
            family = SSL_KEYS if key.startswith("ssl.") else SASL_KEYS
            suggestion = suggest_key(key, family)
            if suggestion is not None:
                wanted = entry.display[: len(entry.display) - len(key)] + suggestion
                self.problems.add(
                    f"unknown key '{entry.display}'; did you mean '{wanted}'?", entry=entry
                )
                return False
        return check_connection_value(key, entry, self.problems)

    def _suggest(self, key: str, *, top: bool, foreign: bool) -> str | None:
        candidates = list(connector_key_names())
        if top:
            candidates += ["clusters", *sorted(CONNECTION_KEYS)]
        if foreign:
            return suggest_key(key, candidates, cutoff=FOREIGN_SUGGESTION_CUTOFF)
        return suggest_key(key, candidates, _PREFIX_WORDS)

    def _looks_like_cluster_key(self, key: str) -> bool:
        _, dot, rest = key.partition(".")
        role = rest.partition(".")[0]
        return bool(dot) and (is_connection_key(rest) or role in CLIENT_ROLES)

    def _unknown_alias(self, alias: str, where: str) -> str:
        known = ", ".join(self.aliases) or "none declared"
        message = f"unknown cluster alias {alias!r}{where}; known aliases: {known}"
        close = difflib.get_close_matches(alias, self.aliases, n=1, cutoff=0.75)
        if close:
            message += f"; did you mean {close[0]!r}?"
        return f"{message} (aliases are declared in '{self._clusters_key()}')"

    def _clusters_key(self) -> str:
        return "clusters:" if self.style is Style.YAML else "clusters"

    def _example_flow(self, source: str | None = None) -> str:
        aliases = self.aliases if len(self.aliases) >= 2 else ("primary", "backup")
        first = source if source is not None else aliases[0]
        second = next(a for a in (*aliases, "backup", "primary") if a != first)
        return f"{first}->{second}"
