"""Include/exclude rules for topics, consumer groups and topic config properties (MM2 lists)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from srm_common.errors import InvalidPatternError

DEFAULT_TOPICS: tuple[str, ...] = (".*",)
DEFAULT_GROUPS: tuple[str, ...] = (".*",)
DEFAULT_TOPICS_EXCLUDE: tuple[str, ...] = (r".*[\-\.]internal", r".*\.replica", r"__.*")
DEFAULT_GROUPS_EXCLUDE: tuple[str, ...] = (r"console-consumer-.*", r"connect-.*", r"__.*")
DEFAULT_CONFIG_PROPERTIES_EXCLUDE: tuple[str, ...] = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
)

# Java's ASCII POSIX classes (\p{Alpha} ...) as the inside of a Python character class.
_PUNCT = re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_POSIX_CLASSES: dict[str, str] = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": "\\x00-\\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": _PUNCT,
    "Graph": "a-zA-Z0-9" + _PUNCT,
    "Print": " a-zA-Z0-9" + _PUNCT,
    "Blank": " \\t",
    "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F",
    "Space": " \\t\\n\\x0b\\f\\r",
}
_BACKREF = re.compile(r"[1-9][0-9]?")
_OCTAL = re.compile(r"[0-7]{3}")
_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")
_LEADING_FLAGS = re.compile(r"\(\?([a-zA-Z]+(?:-[a-zA-Z]+)?|-[a-zA-Z]+)\)")


def split_pattern_list(value: str) -> tuple[str, ...]:
    """MM2 list syntax: ``"orders, payments-.*"`` -> ``("orders", "payments-.*")``.

    Comma-split, each entry stripped, blank entries dropped; ``""`` is the empty list.
    """
    return tuple(entry.strip() for entry in value.split(",") if entry.strip())


def compile_patterns(patterns: Sequence[str], *, key: str | None = None) -> re.Pattern[str] | None:
    """OR-join a list of Java-style regexes into one pattern to be used with ``fullmatch``.

    Entries are stripped and blank ones ignored. The result is ``None`` when no entry is
    left: an empty list matches nothing (MM2: ``topics=`` replicates nothing).

    Java-only syntax is translated: ``\\Q...\\E`` quoting, ASCII POSIX classes such as
    ``\\p{Alpha}``, ``(?<name>...)`` and ``\\k<name>``, ``\\z``/``\\Z``, and a leading
    ``(?i)`` flag group. Other ``\\p{..}`` classes and class intersection (``&&``) are
    rejected. Each entry is checked alone, so :class:`InvalidPatternError` names the one
    bad entry (``error.pattern``) with ``error.key`` set to ``key``.
    """
    if isinstance(patterns, str):
        raise TypeError("compile_patterns takes a list of patterns; use split_pattern_list")
    entries = [entry.strip() for entry in patterns if entry.strip()]
    if not entries:
        return None
    parts: list[str] = []
    offset = 0
    for entry in entries:
        translated = ""
        try:
            translated = translate_java_regex(entry)
            alone = re.compile(translated)
        except re.error as exc:
            # Positions only help when they point into what the operator wrote.
            reason = exc.msg if translated != entry else _describe(exc)
            raise InvalidPatternError(entry, reason, key=key) from exc
        except ValueError as exc:
            raise InvalidPatternError(entry, str(exc), key=key) from exc
        # Entries after the first sit behind earlier groups: renumber their backreferences.
        parts.append(f"(?:{translate_java_regex(entry, group_offset=offset)})")
        offset += alone.groups
    try:
        return re.compile("|".join(parts))
    except re.error as exc:  # only duplicate group names across entries get here
        raise InvalidPatternError(", ".join(entries), _describe(exc), key=key) from exc


def _describe(exc: re.error) -> str:
    return exc.msg if exc.pos is None else f"{exc.msg} at position {exc.pos}"


def translate_java_regex(pattern: str, *, group_offset: int = 0) -> str:
    """Rewrite one Java regex as a Python one; raises ``ValueError`` for what cannot be.

    ``group_offset`` is added to numbered backreferences (``\\1``), for OR-joining.
    """
    body, flags = _split_leading_flags(pattern)
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            piece, i = _translate_escape(body, i, in_class, group_offset)
            out.append(piece)
            continue
        if in_class and body.startswith("&&", i):
            raise ValueError("character class intersection (&&) is Java-only; list the class")
        if char == "[":
            if in_class:
                raise ValueError("nested character classes are Java-only; escape '[' as '\\['")
            in_class = True
            start = i + 2 if body.startswith("[^", i) else i + 1
            if body.startswith("]", start):  # a leading ']' is a literal
                out.append(body[i : start + 1])
                i = start + 1
                continue
        elif char == "]" and in_class:
            in_class = False
        elif not in_class and _NAMED_GROUP.match(body, i):
            out.append("(?P<")
            i += 3
            continue
        out.append(char)
        i += 1
    translated = "".join(out)
    return f"(?{flags}:{translated})" if flags else translated


def _split_leading_flags(pattern: str) -> tuple[str, str]:
    # Python refuses global flags after the start, and OR-joining puts them there.
    match = _LEADING_FLAGS.match(pattern)
    if match is None:
        return pattern, ""
    return pattern[match.end() :], match.group(1)


def _translate_escape(body: str, i: int, in_class: bool, group_offset: int) -> tuple[str, int]:
    letter = body[i + 1]
    if letter == "Q":
        end = body.find("\\E", i + 2)
        stop = len(body) if end < 0 else end
        return re.escape(body[i + 2 : stop]), (len(body) if end < 0 else end + 2)
    if letter in "pP":
        return _translate_property(body, i, in_class)
    if letter == "z" and not in_class:
        return "\\Z", i + 2
    if letter == "Z" and not in_class:
        return "(?=\\n?\\Z)", i + 2
    if letter == "k" and body.startswith("<", i + 2):
        end = body.find(">", i + 3)
        if end < 0:
            raise ValueError("unterminated \\k<name> backreference")
        return f"(?P={body[i + 3 : end]})", end + 1
    backref = _BACKREF.match(body, i + 1)
    octal = _OCTAL.match(body, i + 1) is not None  # Python reads \123 as a character
    if backref is not None and not in_class and not octal and group_offset:
        return f"(?:\\{int(backref.group()) + group_offset})", backref.end()
    return body[i : i + 2], i + 2


def _translate_property(body: str, i: int, in_class: bool) -> tuple[str, int]:
    negated = body[i + 1] == "P"
    if body.startswith("{", i + 2):
        end = body.find("}", i + 3)
        if end < 0:
            raise ValueError("unterminated \\p{...} class")
        name, after = body[i + 3 : end], end + 1
    else:
        name, after = body[i + 2 : i + 3], i + 3
    ranges = _POSIX_CLASSES.get(name.removeprefix("Is"))
    if ranges is None:
        known = ", ".join(f"\\p{{{n}}}" for n in _POSIX_CLASSES)
        raise ValueError(f"\\{body[i + 1]}{{{name}}} is not supported; use one of {known}")
    if not in_class:
        return (f"[^{ranges}]" if negated else f"[{ranges}]"), after
    if negated:
        raise ValueError(f"\\P{{{name}}} inside [...] is not supported; write the class out")
    return ranges, after


def _normalise(patterns: Sequence[str]) -> tuple[str, ...]:
    if isinstance(patterns, str):
        raise TypeError("pass a list of patterns, not one string; see split_pattern_list")
    return tuple(entry.strip() for entry in patterns if entry.strip())


def _is_full_match(pattern: re.Pattern[str] | None, name: str) -> bool:
    return pattern is not None and pattern.fullmatch(name) is not None


@dataclass(frozen=True)
class _IncludeExcludeFilter:
    """A name is selected when an include pattern matches it and no exclude pattern does.

    Holds the patterns as written (stripped, blanks dropped) and caches their compiled
    forms; subclasses name the keys their errors carry and MM2's defaults.
    """

    INCLUDE_KEY: ClassVar[str]
    EXCLUDE_KEY: ClassVar[str]

    include: Sequence[str]
    exclude: Sequence[str]
    _include_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _exclude_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "include", _normalise(self.include))
        object.__setattr__(self, "exclude", _normalise(self.exclude))
        include_re = compile_patterns(self.include, key=self.INCLUDE_KEY)
        exclude_re = compile_patterns(self.exclude, key=self.EXCLUDE_KEY)
        object.__setattr__(self, "_include_re", include_re)
        object.__setattr__(self, "_exclude_re", exclude_re)

    def matches(self, name: str) -> bool:
        """Is ``name`` selected? Exclude always wins over include."""
        if _is_full_match(self._exclude_re, name):
            return False
        return _is_full_match(self._include_re, name)


@dataclass(frozen=True)
class TopicFilter(_IncludeExcludeFilter):
    """MM2 ``topics`` / ``topics.exclude``: a topic is selected if included and not excluded.

    Defaults are MM2's: every topic except ``.*[\\-\\.]internal``, ``.*\\.replica``
    and ``__.*`` (``orders`` yes, ``__consumer_offsets`` no). An invalid pattern raises
    :class:`InvalidPatternError` here, keyed ``topics`` or ``topics.exclude``.
    """

    INCLUDE_KEY: ClassVar[str] = "topics"
    EXCLUDE_KEY: ClassVar[str] = "topics.exclude"

    include: Sequence[str] = DEFAULT_TOPICS
    exclude: Sequence[str] = DEFAULT_TOPICS_EXCLUDE


@dataclass(frozen=True)
class GroupFilter(_IncludeExcludeFilter):
    """MM2 ``groups`` / ``groups.exclude``; the defaults drop console, Connect, ``__`` groups.

    Same rules as :class:`TopicFilter` (``billing`` yes, ``connect-mm2`` no); errors are
    keyed ``groups`` or ``groups.exclude``.
    """

    INCLUDE_KEY: ClassVar[str] = "groups"
    EXCLUDE_KEY: ClassVar[str] = "groups.exclude"

    include: Sequence[str] = DEFAULT_GROUPS
    exclude: Sequence[str] = DEFAULT_GROUPS_EXCLUDE


@dataclass(frozen=True)
class ConfigPropertyFilter:
    """MM2 ``config.properties.exclude``: topic configs never copied to remote topics.

    Errors are keyed ``config.properties.exclude``; an empty list excludes nothing.
    """

    exclude: Sequence[str] = DEFAULT_CONFIG_PROPERTIES_EXCLUDE
    _exclude_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exclude", _normalise(self.exclude))
        key = "config.properties.exclude"
        object.__setattr__(self, "_exclude_re", compile_patterns(self.exclude, key=key))

    def should_replicate(self, config_name: str) -> bool:
        """Copy this config? ``retention.ms`` yes, ``min.insync.replicas`` no (defaults)."""
        return not _is_full_match(self._exclude_re, config_name)
