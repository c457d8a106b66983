"""Collecting every configuration problem of a file and raising them as one ConfigError."""

from __future__ import annotations

from collections.abc import Iterable

from srm_common.config.raw import Entry
from srm_common.errors import ConfigError


class ConfigProblemsError(ConfigError):
    """Several problems in one file; ``str()`` is a header plus one complete line each.

    ``problems`` holds the individual errors (each with its own source, key and line),
    sorted by line. Raised only when there are two or more; a single problem is raised
    as itself.
    """

    def __init__(self, problems: Iterable[ConfigError], *, source: str) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  {problem}" for problem in self.problems)
        super().__init__(f"{len(self.problems)} problems in {source}:\n{lines}")
        # Set after rendering so the header is not prefixed with the file name twice.
        self.source = source


class Problems:
    """Accumulates problems found while loading one file."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._items: list[ConfigError] = []

    def __bool__(self) -> bool:
        return bool(self._items)

    def add(
        self,
        message: str,
        *,
        entry: Entry | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        """Record a problem at ``entry`` (or at ``key``/``line``) of this file."""
        if entry is not None:
            key = entry.display if key is None else key
            line = entry.line if line is None else line
        self._items.append(ConfigError(message, source=self.source, key=key, line=line))

    def add_error(self, error: ConfigError) -> None:
        """Record an already-built error (it should name this file)."""
        self._items.append(error)

    def raise_if_any(self) -> None:
        """Raise the one problem, or :class:`ConfigProblemsError` for several; else return."""
        unique: dict[str, ConfigError] = {}
        for error in self._items:
            unique.setdefault(str(error), error)
        ordered = sorted(unique.values(), key=lambda e: -1 if e.line is None else e.line)
        if len(ordered) == 1:
            raise ordered[0]
        if ordered:
            raise ConfigProblemsError(ordered, source=self.source)
