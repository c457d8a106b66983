"""``sasl.jaas.config`` read as Kafka's client reads it: one login module, its options.

The grammar is ``<LoginModuleClass> <flag> (<name>=<value>)* ;`` tokenized like Kafka's
``JaasConfig`` (a ``java.io.StreamTokenizer`` with these rules), so a value that Kafka
accepts reads the same here and a value Kafka refuses is refused here:

* bytes 0-32 are whitespace; ``;`` and ``=`` are tokens of their own;
* ``"`` and ``'`` quote; inside quotes ``\\n \\t \\r \\b \\f \\a \\v``, octal ``\\ooo`` and
  ``\\<any>`` (-> ``<any>``) are escapes, and a quote ends at its closing quote or at the
  end of the line (no error: the rest continues as tokens);
* ``/`` starts a comment: ``//`` and a lone ``/`` run to the end of the line, ``/* */``
  is a block comment; so an unquoted value cannot contain ``/``;
* every other character is part of a word; characters 129-159 are single-character
  tokens without text, which Kafka refuses as a value.

Worked example::

    org.apache.kafka.common.security.scram.ScramLoginModule required
        username="alice" password='s3cr"t';
    -> JaasLogin(module="org...ScramLoginModule", flag="required",
                 options={"username": "alice", "password": 's3cr"t'})

Kafka's client takes exactly one login module from ``sasl.jaas.config``
(``JaasContext``); two are refused the same way. Error messages never quote values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

FLAGS = ("required", "requisite", "sufficient", "optional")

_ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}
_WORD, _QUOTED, _SEMI, _EQUALS, _OTHER = "word", "quoted", ";", "=", "other"


class JaasSyntaxError(ValueError):
    """``sasl.jaas.config`` cannot be read; the message never contains the value."""


@dataclass(frozen=True)
class JaasLogin:
    """One login module entry: class name, control flag (lower case) and options."""

    module: str
    flag: str
    options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


def parse_jaas(text: str) -> JaasLogin:
    """The one login module of ``text`` (a ``sasl.jaas.config`` value).

    Raises :class:`JaasSyntaxError` for what Kafka's client refuses: no module, a missing
    or unknown control flag, an option without a value, no terminating ``;``, or more
    than one module.
    """
    tokens = list(_tokens(text))
    entries: list[JaasLogin] = []
    position = 0
    while position < len(tokens):
        entry, position = _entry(tokens, position)
        entries.append(entry)
    if not entries:
        raise JaasSyntaxError("no login module is given; expected '<LoginModule> required ...;'")
    if len(entries) > 1:
        raise JaasSyntaxError(
            f"it names {len(entries)} login modules; a Kafka client takes exactly one"
        )
    return entries[0]


def _entry(tokens: list[tuple[str, str | None]], position: int) -> tuple[JaasLogin, int]:
    kind, module = tokens[position]
    if module is None or kind not in (_WORD, _QUOTED):
        raise JaasSyntaxError("it does not start with a login module class name")
    position += 1
    if position >= len(tokens):
        raise JaasSyntaxError(f"no control flag after {module}; add one of {', '.join(FLAGS)}")
    flag = tokens[position][1]
    if flag is None or flag.lower() not in FLAGS:
        raise JaasSyntaxError(f"the control flag after {module} is not one of {', '.join(FLAGS)}")
    position += 1
    options: dict[str, str] = {}
    while position < len(tokens) and tokens[position][0] != _SEMI:
        name = tokens[position][1]
        value = tokens[position + 2] if position + 2 < len(tokens) else None
        equals = tokens[position + 1][0] if position + 1 < len(tokens) else None
        if equals != _EQUALS or value is None or value[1] is None:
            raise JaasSyntaxError(
                f'option {name!r} has no value; write {name}="..."'
                if name
                else 'an option has no name or value; write name="value"'
            )
        options[name or ""] = value[1]
        position += 3
    if position >= len(tokens):
        raise JaasSyntaxError("the login module entry does not end with ';'")
    return JaasLogin(module, flag.lower(), MappingProxyType(options)), position + 1


def _tokens(text: str) -> Iterator[tuple[str, str | None]]:
    """``(kind, text)`` pairs; ``text`` is None for ``;``, ``=`` and other characters."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if ord(c) <= 32:
            i += 1
        elif c == "/":
            if text.startswith("/*", i):
                end = text.find("*/", i + 2)
                i = n if end < 0 else end + 2
            else:  # '//' or a lone '/' (a comment character): to the end of the line
                while i < n and text[i] not in "\r\n":
                    i += 1
        elif c in "\"'":
            value, i = _quoted(text, i + 1, c)
            yield _QUOTED, value
        elif c in ";=":
            i += 1
            yield c, None
        elif _is_word_char(c):
            start = i
            while i < n and _is_word_char(text[i]):
                i += 1
            yield _WORD, text[start:i]
        else:
            i += 1
            yield _OTHER, None


def _is_word_char(c: str) -> bool:
    code = ord(c)
    return c not in "\"'/;=" and (32 < code <= 128 or code >= 160)


def _quoted(text: str, i: int, quote: str) -> tuple[str, int]:
    out: list[str] = []
    n = len(text)
    while i < n and text[i] != quote and text[i] not in "\r\n":
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        i += 1
        if i >= n:  # Java appends (char) -1 here; nothing a password would contain
            raise JaasSyntaxError("a quoted value ends with a lone backslash")
        c = text[i]
        if "0" <= c <= "7":
            digits = 1
            limit = 3 if c <= "3" else 2
            while digits < limit and i + digits < n and "0" <= text[i + digits] <= "7":
                digits += 1
            out.append(chr(int(text[i : i + digits], 8)))
            i += digits
        else:
            out.append(_ESCAPES.get(c, c))
            i += 1
    if i < n and text[i] == quote:
        i += 1
    return "".join(out), i
