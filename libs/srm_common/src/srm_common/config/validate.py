"""Typed parsing and checking of single values: booleans, numbers, regex lists, aliases.

Every check records a problem naming the entry and says what would be valid; nothing
here raises. The rules follow Kafka's ``ConfigDef`` (values trimmed, booleans
``true``/``false`` in any case, numbers as Java's ``parseInt``/``parseLong`` read them).
"""

from __future__ import annotations

import re

from srm_common.config.families import (
    CLIENT_ROLES,
    CONNECTION_KEYS,
    FLOW_CLIENT_PREFIXES,
    SECURITY_PROTOCOLS,
)
from srm_common.config.keys import CLUSTERS_KEY, CONNECTOR_KEYS, LEGACY_KEYS, KeySpec, Kind
from srm_common.config.problems import Problems
from srm_common.config.raw import Entry, RawValue
from srm_common.domain.filters import compile_patterns, split_pattern_list
from srm_common.errors import InvalidPatternError

Value = bool | int | str | tuple[str, ...]
"""A parsed connector value."""

_INTEGER = re.compile(r"[+-]?[0-9]+")
_LIMITS = {Kind.INT: 2**31 - 1, Kind.LONG: 2**63 - 1}
ALIAS_PATTERN = re.compile(r"[A-Za-z0-9_-]+")
RESERVED_ALIASES = frozenset(
    name.split(".")[0]
    for name in (*CONNECTOR_KEYS, *LEGACY_KEYS, *CONNECTION_KEYS, *FLOW_CLIENT_PREFIXES)
) | {CLUSTERS_KEY}
"""First words of known keys: an alias equal to one would make ``alias.x`` ambiguous."""


def parse_value(spec: KeySpec, entry: Entry, problems: Problems) -> Value | None:
    """``entry``'s value parsed as ``spec`` says, or ``None`` after recording a problem."""
    raw = entry.value
    if spec.kind is Kind.PATTERNS:
        return _parse_patterns(raw, entry, problems)
    if isinstance(raw, tuple):
        problems.add(f"expected a single value, got the list {list(raw)}", entry=entry)
        return None
    text = raw.strip()
    if spec.kind is Kind.BOOLEAN:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        problems.add(f"expected true or false (in any case), got {raw!r}", entry=entry)
        return None
    if spec.kind in (Kind.INT, Kind.LONG):
        return _parse_number(spec, raw, entry, problems)
    if spec.kind is Kind.CHOICE:
        if text.lower() in spec.choices:
            return text.lower()
        problems.add(f"expected one of {', '.join(spec.choices)}, got {raw!r}", entry=entry)
        return None
    if not text and spec.kind is Kind.CLASS:
        problems.add(
            f"expected a class name, got an empty value (default {spec.default})", entry=entry
        )
        return None
    if not text and spec.name == "replication.policy.separator":
        problems.add("the separator must not be empty (MM2's default is '.')", entry=entry)
        return None
    return text


def _parse_number(spec: KeySpec, raw: str, entry: Entry, problems: Problems) -> int | None:
    text = raw.strip()
    unit = " of seconds" if spec.name.endswith(".seconds") else ""
    lowest = spec.minimum if spec.minimum is not None else -_LIMITS[spec.kind] - 1
    wanted = f"a whole number{unit} >= {lowest}"
    if spec.minus_one:
        wanted += ", or -1 for the broker's default"
    hint = f"; to turn the job off set {spec.enabled_key} to false" if spec.enabled_key else ""
    number = int(text) if _INTEGER.fullmatch(text) else None
    if number is not None and abs(number) > _LIMITS[spec.kind] + (number < 0):
        problems.add(f"expected {wanted}, got {raw!r}, which is out of range", entry=entry)
        return None
    if number is None or (number < lowest and not (spec.minus_one and number == -1)):
        problems.add(f"expected {wanted}, got {raw!r}{hint}", entry=entry)
        return None
    return number


def _parse_patterns(raw: RawValue, entry: Entry, problems: Problems) -> tuple[str, ...] | None:
    patterns = (
        tuple(p.strip() for p in raw if p.strip())
        if isinstance(raw, tuple)
        else split_pattern_list(raw)
    )
    try:
        compile_patterns(patterns, key=entry.display)
    except InvalidPatternError as exc:
        problems.add_error(
            InvalidPatternError(
                exc.pattern, exc.reason, source=problems.source, key=entry.display, line=entry.line
            )
        )
        return None
    return patterns


def client_value(key: str, raw: RawValue) -> str:
    """A client config value as a string: lists comma-joined, trimmed like Kafka does.

    Kafka never trims ``PASSWORD`` values, so passwords and JAAS configs stay as written.
    """
    if isinstance(raw, tuple):
        return ",".join(item.strip() for item in raw)
    if key.endswith("password") or key.endswith("jaas.config"):
        return raw
    return raw.strip()


def check_connection_value(key: str, entry: Entry, problems: Problems) -> bool:
    """Check ``bootstrap.servers`` / ``security.protocol`` values; other keys pass."""
    value = client_value(key, entry.value)
    if key == "bootstrap.servers":
        bad = [s for s in split_pattern_list(value) if not _is_host_port(s)]
        if bad:
            shown = ", ".join(map(repr, bad))
            problems.add(
                f"expected host:port entries such as 'kafka-1:9092', got {shown}", entry=entry
            )
            return False
    if key == "security.protocol" and value.upper() not in SECURITY_PROTOCOLS:
        problems.add(f"expected one of {', '.join(SECURITY_PROTOCOLS)}, got {value!r}", entry=entry)
        return False
    return True


def _is_host_port(server: str) -> bool:
    host, colon, port = server.rpartition(":")
    return bool(colon and host.strip("[]") and port.isdigit() and int(port) <= 65535)


def alias_problem(alias: str) -> str | None:
    """Why ``alias`` cannot be a cluster alias, or ``None`` when it can."""
    if not ALIAS_PATTERN.fullmatch(alias):
        return (
            f"invalid cluster alias {alias!r}: use only letters, digits, '_' and '-'"
            " (aliases prefix keys and topic names, so whitespace, '.' and '->' are not allowed)"
        )
    if alias in RESERVED_ALIASES:
        return (
            f"invalid cluster alias {alias!r}: it is also the first word of MM2 keys such as"
            f" '{_example_key(alias)}', so '{alias}.x' would be ambiguous; choose another alias"
        )
    return None


def _example_key(word: str) -> str:
    if word == CLUSTERS_KEY:
        return CLUSTERS_KEY
    names = (*CONNECTOR_KEYS, *LEGACY_KEYS, *sorted(CONNECTION_KEYS))
    names += tuple(f"{role}.fetch.max.bytes" for role in CLIENT_ROLES)
    names += tuple(f"{p}client.id" for p in FLOW_CLIENT_PREFIXES)
    return next((n for n in names if n.split(".")[0] == word), f"{word}.x")
