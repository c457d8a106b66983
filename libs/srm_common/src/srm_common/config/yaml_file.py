"""Reading ``srm.yaml``: the MM2 key space as three sections, with line numbers.

Schema (every key is an MM2/SRM properties key, so nothing new to learn)::

    clusters:                       # required: alias -> that cluster's keys
      primary:                      #   (properties: clusters = primary, backup)
        bootstrap.servers: 127.0.0.1:9092        # or a list: [host1:9092, host2:9092]
        security.protocol: PLAINTEXT             # any <alias>.x key, x written alone
        consumer:                                # nested mappings join with '.':
          fetch.max.bytes: 52428800              #   primary.consumer.fetch.max.bytes
      backup:
        bootstrap.servers: 127.0.0.1:9192
    replication:                    # top-level keys: defaults for every flow
      replication.factor: 3
      topics.exclude: [".*-internal", "__.*"]   # list, or MM2's comma string
    flows:                          # "source->target" -> flow-level keys
      primary->backup:
        enabled: true
        topics: [orders, "payments-.*"]

Values are taken as written (the scalar's text): ``yes`` is not a boolean, ``1_000``
is not a number, exactly as in a properties file; ``~`` or nothing is the empty string.
A YAML list stays a list (an item may contain a comma). Merge keys (``<<``) are not
supported. A key repeated in a mapping keeps its last value (the loader warns).
"""

from __future__ import annotations

import re

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from srm_common.config.families import suggest_key
from srm_common.config.keys import CLUSTERS_KEY
from srm_common.config.raw import AliasDecl, ClustersDecl, Entry, RawConfig, Style
from srm_common.errors import ConfigError

SECTIONS = ("clusters", "replication", "flows")
_NULL_TAG = "tag:yaml.org,2002:null"
_ARROW = re.compile(r"\s*->\s*")


def read_yaml(text: str, source: str) -> RawConfig:
    """Entries of a YAML text in the flat MM2 key space; problems are collected."""
    reader = _Reader(source)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        detail = exc.problem or "invalid YAML"
        if exc.context:
            detail += f" ({exc.context}"
            if exc.context_mark is not None and exc.context_mark is not mark:
                detail += f" at line {exc.context_mark.line + 1}"
            detail += ")"
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(f"YAML syntax error: {detail}", source=source, line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"YAML syntax error: {exc}", source=source) from None
    if root is not None:
        reader.read_root(root)
    return RawConfig(
        source=source,
        style=Style.YAML,
        entries=tuple(reader.entries),
        clusters=reader.clusters,
        problems=tuple(reader.problems),
    )


def _line(node: Node) -> int:
    return node.start_mark.line + 1


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.entries: list[Entry] = []
        self.problems: list[ConfigError] = []
        self.clusters: ClustersDecl | None = None
        self.seen: dict[str, int] = {}

    def problem(self, message: str, node: Node, key: str | None = None) -> None:
        self.problems.append(ConfigError(message, source=self.source, key=key, line=_line(node)))

    def read_root(self, root: Node) -> None:
        if not isinstance(root, MappingNode):
            self.problem(
                "the document must be a mapping with 'clusters:', 'replication:'"
                " and 'flows:' sections",
                root,
            )
            return
        for key_node, value in root.value:
            name = self.key_text(key_node)
            if name is None:
                continue
            if name in self.seen:
                self.problem(
                    f"section '{name}' appears twice (first at line"
                    f" {self.seen[name]}); merge them into one",
                    key_node,
                    name,
                )
                continue
            self.seen[name] = _line(key_node)
            if name == "clusters":
                self.read_clusters(key_node, value)
            elif name == "replication":
                self.flatten(value, "", "replication.", key_node)
            elif name == "flows":
                self.read_flows(value)
            else:
                hint = suggest_key(name, SECTIONS)
                valid = f"did you mean '{hint}'?" if hint else f"use {', '.join(SECTIONS)}"
                self.problem(f"unknown section '{name}'; {valid}", key_node, name)

    def read_clusters(self, key_node: Node, node: Node) -> None:
        aliases: list[AliasDecl] = []
        if isinstance(node, MappingNode):
            for alias_node, value in node.value:
                alias = self.key_text(alias_node)
                if alias is not None:
                    aliases.append(AliasDecl(alias, _line(alias_node), f"clusters.{alias}"))
                    self.flatten(value, f"{alias}.", f"clusters.{alias}.", alias_node)
        elif not self.is_null(node):
            self.problem(
                "'clusters' must map each alias to its settings, e.g."
                " 'primary: {bootstrap.servers: host:9092}'",
                node,
                CLUSTERS_KEY,
            )
        self.clusters = ClustersDecl(_line(key_node), CLUSTERS_KEY, tuple(aliases))

    def read_flows(self, node: Node) -> None:
        if self.is_null(node):
            return
        if not isinstance(node, MappingNode):
            self.problem("'flows' must map 'source->target' to settings", node, "flows")
            return
        for flow_node, value in node.value:
            name = self.key_text(flow_node)
            if name is None:
                continue
            name = _ARROW.sub("->", name.strip())
            if name.count("->") != 1:
                self.problem(
                    f"a flow is named 'source->target', got {name!r}", flow_node, f"flows.{name}"
                )
            elif not self.is_null(value) and not isinstance(value, MappingNode):
                self.problem(
                    "a flow must map settings to values, e.g. 'enabled: true'",
                    value,
                    f"flows.{name}",
                )
            else:
                self.flatten(value, f"{name}.", f"flows.{name}.", flow_node)

    def flatten(self, node: Node, key: str, display: str, key_node: Node) -> None:
        """Add entries for the mapping ``node`` (a section, cluster or flow body)."""
        if self.is_null(node):
            return
        if not isinstance(node, MappingNode):
            self.problem("expected a mapping of keys to values", node, display.rstrip(".") or None)
            return
        for child_key, child in node.value:
            name = self.key_text(child_key)
            if name is not None:
                self.add_value(child, f"{key}{name}", f"{display}{name}", child_key)

    def add_value(self, node: Node, flat: str, shown: str, key_node: Node) -> None:
        if isinstance(node, MappingNode):  # nested keys join with '.'
            self.flatten(node, f"{flat}.", f"{shown}.", key_node)
        elif flat == CLUSTERS_KEY:
            self.problem("declare clusters in the top-level 'clusters:' section", key_node, shown)
        elif isinstance(node, SequenceNode):
            items = [item for item in node.value if isinstance(item, ScalarNode)]
            if len(items) != len(node.value):
                self.problem("expected a list of plain values", node, shown)
            else:
                value = tuple("" if self.is_null(i) else str(i.value) for i in items)
                self.entries.append(Entry(flat, value, _line(key_node), shown))
        elif isinstance(node, ScalarNode):
            value = "" if self.is_null(node) else str(node.value)
            self.entries.append(Entry(flat, value, _line(key_node), shown))

    def key_text(self, node: Node) -> str | None:
        if not isinstance(node, ScalarNode) or self.is_null(node):
            self.problem("keys must be plain text", node)
            return None
        if node.tag == "tag:yaml.org,2002:merge":
            self.problem("merge keys ('<<') are not supported; write the keys out", node)
            return None
        return str(node.value)

    @staticmethod
    def is_null(node: Node) -> bool:
        return isinstance(node, ScalarNode) and node.tag == _NULL_TAG
