"""Raw entries read from a file: one flat MM2 key space for both formats, with lines.

Both readers produce a :class:`RawConfig`; everything after reading (classification,
defaults, precedence, validation) is shared, so a YAML file and a properties file that
say the same thing load to equal models. Keys are MM2's flat keys (``primary.x``,
``primary->backup.x``, ``x``); ``display`` is the key as the operator wrote it
(``flows.primary->backup.x`` in YAML) and is what error messages show.
"""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass

from srm_common.errors import ConfigError

RawValue = str | tuple[str, ...]
"""A value as written: a string, or a tuple for YAML lists (never comma-split again)."""


class Style(enum.Enum):
    """The file format, which decides how keys are shown back to the operator."""

    PROPERTIES = "properties"
    YAML = "yaml"


@dataclass(frozen=True)
class Entry:
    """One ``key = value`` with the 1-based line of its key (``None`` when unknown)."""

    key: str
    value: RawValue
    line: int | None
    display: str


@dataclass(frozen=True)
class AliasDecl:
    """One cluster alias as declared, with where it was declared."""

    alias: str
    line: int | None
    display: str


@dataclass(frozen=True)
class ClustersDecl:
    """The ``clusters`` declaration; ``aliases`` keeps declaration order and repeats."""

    line: int | None
    display: str
    aliases: tuple[AliasDecl, ...]


@dataclass(frozen=True)
class RawConfig:
    """What a reader found: entries in file order (repeats kept), problems, warnings."""

    source: str
    style: Style
    entries: tuple[Entry, ...]
    clusters: ClustersDecl | None
    problems: tuple[ConfigError, ...] = ()
    warnings: tuple[str, ...] = ()


def show_key(style: Style, key: str, aliases: Collection[str]) -> str:
    """``key`` (flat MM2 form) as the operator would write it in this format.

    >>> show_key(Style.YAML, "primary->backup.topics", {"primary", "backup"})
    'flows.primary->backup.topics'
    """
    if style is Style.PROPERTIES:
        return key
    section, path = _yaml_path(key, aliases)
    return f"{section}.{'.'.join(path)}"


def show_assignment(style: Style, key: str, value: str, aliases: Collection[str]) -> str:
    """A line the operator can add: ``'primary.bootstrap.servers = host:9092'``, or for
    YAML ``'bootstrap.servers: host:9092' under 'clusters: primary:'``."""
    if style is Style.PROPERTIES:
        return f"'{key} = {value}'"
    section, path = _yaml_path(key, aliases)
    parents = " ".join(f"{p}:" for p in (section, *path[:-1]))
    return f"'{path[-1]}: {value}' under '{parents}'"


def _yaml_path(key: str, aliases: Collection[str]) -> tuple[str, list[str]]:
    head, dot, rest = key.partition(".")
    if dot and "->" in head:
        return "flows", [head, rest]
    if dot and head in aliases:
        return "clusters", [head, rest]
    return "replication", [key]
