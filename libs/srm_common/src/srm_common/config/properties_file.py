"""Reading (and writing) MM2/SRM ``.properties`` files with Java ``Properties`` semantics.

What is honoured, as ``java.util.Properties.load`` does it:

* ``key=value``, ``key: value`` and ``key value``; whitespace around the separator and
  at the start of a line is skipped; trailing whitespace stays in the value (Kafka trims
  it later for every type but passwords, and so do we);
* ``#`` and ``!`` comment lines (only at the start of a logical line);
* a line ending in an odd number of backslashes continues on the next line, whose
  leading whitespace is dropped; a blank next line ends it;
* escapes ``\\t \\n \\r \\f``, ``\\uXXXX`` (surrogate pairs combined), and ``\\x`` -> ``x``
  for any other character (``\\:``, ``\\=``, ``\\ ``, ``\\\\``, ``\\#``);
* a repeated key keeps its last value (the loader warns);
* a backslash before any other character is dropped, so a regex backslash must be
  doubled (``topics = a\\\\.b`` is the regex ``a\\.b``); ``\\.``, ``\\d``... warn.

Each key keeps the line where its logical line starts. Files are read as UTF-8 (Java
reads ISO-8859-1 by default; ``\\uXXXX`` escapes work either way).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from srm_common.config.keys import CLUSTERS_KEY
from srm_common.config.raw import AliasDecl, ClustersDecl, Entry, RawConfig, Style
from srm_common.domain.filters import split_pattern_list
from srm_common.errors import ConfigError

_NEWLINE = re.compile(r"\r\n|\r|\n")
_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
# A backslash before a regex metacharacter is silently dropped by Java: "a\.b" is "a.b".
_REGEX_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\([.dDwWsSbB\[\](){}*+?|^$-])")


def read_properties(text: str, source: str) -> RawConfig:
    """Entries of a properties text, in file order; syntax problems are collected."""
    entries: list[Entry] = []
    problems: list[ConfigError] = []
    warnings: list[str] = []
    for line, logical in _logical_lines(text):
        key_text, value_text = _split_key_value(logical)
        lost = _REGEX_ESCAPE.search(value_text)
        if lost is not None:
            char = lost.group(1)
            warnings.append(
                f"line {line}, key '{key_text}': '\\{char}' is read as '{char}' (a Java"
                " properties escape);"
                f" write '\\\\{char}' if a regex backslash is meant"
            )
        try:
            key, value = _unescape(key_text), _unescape(value_text)
        except ValueError as exc:
            problems.append(ConfigError(str(exc), source=source, line=line))
            continue
        if not key:
            problems.append(
                ConfigError(
                    f"line has no key before the value {value!r}; write 'key = value'",
                    source=source,
                    line=line,
                )
            )
            continue
        entries.append(Entry(key, value, line, key))
    clusters = [e for e in entries if e.key == CLUSTERS_KEY]
    decl = None
    if clusters:
        last = clusters[-1]
        if len(clusters) > 1:
            lines = ", ".join(str(e.line) for e in clusters)
            warnings.append(
                f"key 'clusters' is set {len(clusters)} times (lines {lines}); the last value wins"
            )
        aliases = tuple(
            AliasDecl(alias, last.line, CLUSTERS_KEY)
            for alias in split_pattern_list(str(last.value))
        )
        decl = ClustersDecl(last.line, CLUSTERS_KEY, aliases)
    return RawConfig(
        source=source,
        style=Style.PROPERTIES,
        entries=tuple(e for e in entries if e.key != CLUSTERS_KEY),
        clusters=decl,
        problems=tuple(problems),
        warnings=tuple(warnings),
    )


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    natural = _NEWLINE.split(text)
    index = 0
    while index < len(natural):
        start = index + 1
        logical = natural[index].lstrip(_BLANKS)
        index += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical):
            logical = logical[:-1]
            if index >= len(natural):
                break
            following = natural[index].lstrip(_BLANKS)
            index += 1
            if not following:
                break
            logical += following
        yield start, logical


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    end = len(line)
    escaped = False
    for index, char in enumerate(line):
        if not escaped and (char in "=:" or char in _BLANKS):
            end = index
            break
        escaped = char == "\\" and not escaped
    rest = line[end:]
    value = rest.lstrip(_BLANKS)
    if value[:1] in ("=", ":"):
        value = value[1:].lstrip(_BLANKS)
    return line[:end], value


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        following = text[index + 1]
        if following == "u":
            digits = text[index + 2 : index + 6]
            if len(digits) < 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(
                    f"malformed \\uXXXX escape '\\u{digits}': write four hex digits,"
                    " or '\\\\' for a literal backslash"
                )
            out.append(chr(int(digits, 16)))
            index += 6
        else:
            out.append(_ESCAPES.get(following, following))
            index += 2
    joined = "".join(out)
    try:  # Java strings are UTF-16: "\ud83d\ude00" is one character
        return joined.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        raise ValueError("a \\uXXXX escape is an unpaired UTF-16 surrogate") from None


def format_properties(pairs: Iterable[tuple[str, str]]) -> str:
    """Render ``key = value`` lines that :func:`read_properties` reads back exactly."""
    return "".join(f"{_escape(k, is_key=True)} = {_escape(v, is_key=False)}\n" for k, v in pairs)


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for index, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[char])
        elif char == " " and (is_key or index == 0):
            out.append("\\ ")
        elif char in "=:#!" and (is_key or index == 0):
            out.append("\\" + char)
        elif ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)
