r"""Include/exclude rules for topics, consumer groups and topic config properties (MM2 lists).

Entries are Java regexes, the dialect MM2 reads them in (``java.util.regex``), matched
against whole names. Each is rewritten in RE2's syntax (:mod:`srm_common.domain.java_regex`:
what is kept, what is refused and why, with worked examples) and matched by RE2 (the
``google-re2`` package): RE2 runs in time linear in the name whatever the pattern, so an
operator's ``(a+)+b`` cannot stall the leader loop or a driver.

A list ``[e1, e2]`` is compiled once (cached by its tuple of entries) into one program
``(?:t1)|(?:t2)`` matched with both ends anchored; a flag stays inside its entry. A bad
entry is refused alone, named in :class:`~srm_common.errors.InvalidPatternError`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import re2

from srm_common.domain.java_regex import translate
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

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # errors are raised, with the entry; RE2 need not print them
_OPTIONS.never_capture = True  # nothing reads groups: matching without them is faster


def split_pattern_list(value: str) -> tuple[str, ...]:
    """MM2 list syntax: ``"orders, payments-.*"`` -> ``("orders", "payments-.*")``.

    Comma-split, each entry stripped, blank entries dropped; ``""`` is the empty list.
    """
    return tuple(entry.strip() for entry in value.split(",") if entry.strip())


class CompiledPatterns:
    """A pattern list compiled into one RE2 program; ``matches`` takes linear time.

    ``matches("orders-eu")`` is true when one entry matches the whole name.
    """

    __slots__ = ("_program", "patterns")

    def __init__(self, patterns: tuple[str, ...], program: re2._Regexp) -> None:
        self.patterns = patterns
        self._program = program

    def matches(self, name: str) -> bool:
        """Does an entry match all of ``name``?"""
        # Bytes skip the wrapper's character-offset bookkeeping (a few times faster); a lone
        # surrogate, which no Kafka name holds, is passed through rather than raised on.
        text = name.encode("utf-8", "surrogatepass")
        return self._program.fullmatch(text) is not None

    def __repr__(self) -> str:
        return f"CompiledPatterns({self.patterns!r})"


class _Refused(Exception):
    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(pattern, reason)
        self.pattern = pattern
        self.reason = reason


def compile_patterns(patterns: Sequence[str], *, key: str | None = None) -> CompiledPatterns | None:
    """Compile a list of Java regexes, each to match whole names; cached per list.

    Entries are stripped and blank ones ignored. The result is ``None`` when no entry is
    left: an empty list matches nothing (MM2: ``topics=`` replicates nothing). Each entry
    is checked alone, so :class:`InvalidPatternError` names the one bad entry
    (``error.pattern``) and what is wrong with it, with ``error.key`` set to ``key``.
    """
    if isinstance(patterns, str):
        raise TypeError("compile_patterns takes a list of patterns; use split_pattern_list")
    entries = tuple(entry.strip() for entry in patterns if entry.strip())
    if not entries:
        return None
    try:
        return _compile(entries)
    except _Refused as exc:
        raise InvalidPatternError(exc.pattern, exc.reason, key=key) from exc


@functools.lru_cache(maxsize=1024)
def _compile(entries: tuple[str, ...]) -> CompiledPatterns:
    parts: list[str] = []
    named: dict[str, str] = {}
    for entry in entries:
        try:
            translated, names = translate(entry)
            re2.compile(translated, _OPTIONS)
        except ValueError as exc:
            raise _Refused(entry, str(exc)) from exc
        except re2.error as exc:
            raise _Refused(entry, _describe(exc)) from exc
        for name in names:
            if name in named:
                raise _Refused(
                    entry,
                    f"the group name {name!r} is also used by {named[name]!r}; MM2 joins"
                    " a list into one Java regex, where each name may appear once",
                )
            named[name] = entry
        parts.append(f"(?:{translated})")
    try:
        program = re2.compile("|".join(parts), _OPTIONS)
    except re2.error as exc:  # only a list too large as a whole gets here
        raise _Refused(", ".join(entries), _describe(exc)) from exc
    return CompiledPatterns(entries, program)


def _describe(exc: re2.error) -> str:
    message = exc.args[0] if exc.args else "invalid pattern"
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    what, _, where = str(message).partition(": ")
    return f"{what} in {where!r}" if where else what


def _normalise(patterns: Sequence[str]) -> tuple[str, ...]:
    if isinstance(patterns, str):
        raise TypeError("pass a list of patterns, not one string; see split_pattern_list")
    return tuple(entry.strip() for entry in patterns if entry.strip())


def _is_full_match(patterns: CompiledPatterns | None, name: str) -> bool:
    return patterns is not None and patterns.matches(name)


@dataclass(frozen=True)
class _IncludeExcludeFilter:
    """A name is selected when an include pattern matches it and no exclude pattern does.

    Holds the patterns as written (stripped, blanks dropped) and their compiled forms
    (shared by every filter of the same lists); subclasses name the keys their errors
    carry and MM2's defaults.
    """

    INCLUDE_KEY: ClassVar[str]
    EXCLUDE_KEY: ClassVar[str]

    include: Sequence[str]
    exclude: Sequence[str]
    _include_re: CompiledPatterns | None = field(init=False, repr=False, compare=False)
    _exclude_re: CompiledPatterns | None = field(init=False, repr=False, compare=False)

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
    _exclude_re: CompiledPatterns | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "exclude", _normalise(self.exclude))
        key = "config.properties.exclude"
        object.__setattr__(self, "_exclude_re", compile_patterns(self.exclude, key=key))

    def should_replicate(self, config_name: str) -> bool:
        """Copy this config? ``retention.ms`` yes, ``min.insync.replicas`` no (defaults)."""
        return not _is_full_match(self._exclude_re, config_name)
