r"""Java regexes (``java.util.regex``, the dialect MM2 reads its lists in) rewritten for RE2.

The entries of MM2's include/exclude lists (:mod:`srm_common.domain.filters`) are Java
regexes matched against whole names. SRM matches them with RE2 (the ``google-re2``
package): RE2 runs in time linear in the name whatever the pattern, so an
operator's ``(a+)+b`` cannot stall the leader loop or a driver. A backtracking engine
(Python's ``re``, Java's) takes 1.75 s for it on 26 ``a``s and twice that per extra one.

What Java has and RE2 cannot run in linear time is refused with a message naming the
construct: backreferences (``\1``, ``\k<name>``), lookaround (``(?=``, ``(?!``, ``(?<=``,
``(?<!``), possessive quantifiers (``a*+``) and atomic groups (``(?>``). So is syntax
Java does not have (Python's ``(?P<name>...)``), so that a list SRM accepts is one MM2
accepts too. Worked examples (``translate_java_regex``)::

    Java entry               RE2 program          why
    orders\.v[0-9]+          orders\.v[0-9]+      most patterns are unchanged
    \Qpay.v1\E               pay\.v1              quoting: each character escaped
    \p{Alpha}+               [[:alpha:]]+         ASCII POSIX classes, as in Java
    \s                       [[:space:]]          Java's \s includes \x0B, RE2's not
    (?<region>eu|us)-.*      (eu|us)-.*           the name is checked, then dropped
    (?iu)pay.*               (?i)pay.*            u and d change nothing under RE2
    (x)\1                    refused              backreference
    (?P<x>a)                 refused              Python syntax
"""

from __future__ import annotations

import re

# Java's ASCII POSIX classes (\p{Alpha} ...) -> RE2's names; both are ASCII and agree.
_POSIX_CLASSES: dict[str, str] = {
    "Lower": "lower",
    "Upper": "upper",
    "ASCII": "ascii",
    "Alpha": "alpha",
    "Digit": "digit",
    "Alnum": "alnum",
    "Punct": "punct",
    "Graph": "graph",
    "Print": "print",
    "Blank": "blank",
    "Cntrl": "cntrl",
    "XDigit": "xdigit",
    "Space": "space",
}
# Java's \h and \v (horizontal and vertical whitespace) as the inside of a class.
_HORIZONTAL = r" \t\x{a0}\x{1680}\x{180e}\x{2000}-\x{200a}\x{202f}\x{205f}\x{3000}"
_VERTICAL = r"\n\x{b}\f\r\x{85}\x{2028}\x{2029}"
_NEEDS_BACKTRACKING = (
    "needs backtracking, which SRM does not run so that matching a name takes bounded"
    " time; rewrite the pattern without it"
)
_LOOKAROUND = {
    "(?=": "lookahead (?=...)",
    "(?!": "negative lookahead (?!...)",
    "(?<=": "lookbehind (?<=...)",
    "(?<!": "negative lookbehind (?<!...)",
    "(?>": "the atomic group (?>...)",
}
_GROUP_NAME = re.compile(r"\(\?<([a-zA-Z][a-zA-Z0-9]*)>")
_FLAGS = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])")
_REPETITION = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_HEX = re.compile(r"[0-9a-fA-F]+")


def translate_java_regex(pattern: str) -> str:
    """Rewrite one Java regex in RE2's syntax; raises ``ValueError`` naming what cannot be."""
    return translate(pattern)[0]


def translate(pattern: str) -> tuple[str, tuple[str, ...]]:
    """The RE2 form of ``pattern`` and the names of its named groups, in order."""
    out: list[str] = []
    names: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            piece, i = _escape(pattern, i, in_class)
        elif in_class:
            if pattern.startswith("&&", i):
                raise ValueError(
                    "character class intersection (&&) is not supported; list the class"
                )
            if char == "[":
                raise ValueError("nested character classes are not supported; escape '[' as '\\['")
            in_class = char != "]"
            piece, i = char, i + 1
        elif char == "[":
            piece, i = _class_start(pattern, i)
            in_class = True
        elif char == "(":
            piece, i = _group_start(pattern, i, names)
        elif char in "*+?{":
            piece, i = _quantifier(pattern, i)
        else:
            piece, i = char, i + 1
        out.append(piece)
    return "".join(out), tuple(names)


def _class_start(pattern: str, i: int) -> tuple[str, int]:
    # '[' or '[^'; a ']' right after is a literal in Java, and in RE2 as written.
    start = i + 2 if pattern.startswith("[^", i) else i + 1
    if pattern.startswith("]", start):
        start += 1
    return pattern[i:start], start


def _group_start(pattern: str, i: int, names: list[str]) -> tuple[str, int]:
    if not pattern.startswith("(?", i):
        return "(", i + 1
    if pattern.startswith("(?:", i):
        return "(?:", i + 3
    for opening, what in _LOOKAROUND.items():
        if pattern.startswith(opening, i):
            raise ValueError(f"{what} {_NEEDS_BACKTRACKING}")
    if pattern.startswith("(?P", i):
        raise ValueError(
            "(?P...) is Python syntax, not Java's (MM2 reads patterns as Java regexes);"
            " name a group (?<name>...)"
        )
    named = _GROUP_NAME.match(pattern, i)
    if named is not None:
        name = named.group(1)
        if name in names:
            raise ValueError(f"the group name {name!r} is used twice")
        names.append(name)
        return "(", named.end()
    if pattern.startswith("(?<", i):
        raise ValueError("a group name is letters and digits, starting with a letter: (?<name>...)")
    flags = _FLAGS.match(pattern, i)
    if flags is None:
        raise ValueError(
            f"{pattern[i : i + 3]!r} is not Java regex syntax; a group is (...), (?:...)"
            " or (?<name>...), a flag group (?i) or (?i:...)"
        )
    return _flag_group(flags), flags.end()


def _flag_group(match: re.Match[str]) -> str:
    on, off, end = match.group(1), match.group(2) or "", match.group(3)
    for letter in on + off:
        if letter == "x":
            raise ValueError("comments mode (?x) is not supported; remove the spaces and comments")
        if letter == "U":
            raise ValueError(
                "(?U) (Unicode character classes) is not supported; \\w, \\d and \\s are"
                " ASCII, as in Java without it"
            )
        if letter not in "imsud":
            raise ValueError(
                f"unknown flag {letter!r} in {match.group()!r}; Java's are i, d, m, s, u, x, U"
            )
    # u (Unicode case folding) and d (only \n ends a line) are already RE2's behaviour.
    on = "".join(letter for letter in on if letter in "ims")
    off = "".join(letter for letter in off if letter in "ims")
    flags = on + (f"-{off}" if off else "")
    if not flags:
        return "(?:" if end == ":" else ""
    return f"(?{flags}{end}"


def _quantifier(pattern: str, i: int) -> tuple[str, int]:
    if pattern[i] == "{":
        repetition = _REPETITION.match(pattern, i)
        if repetition is None:
            raise ValueError(
                "'{' starts a repetition in Java ({2}, {2,5}, {2,}); escape a literal '{' as '\\{'"
            )
        text, end = repetition.group(), repetition.end()
    else:
        text, end = pattern[i], i + 1
    if pattern.startswith("+", end):
        raise ValueError(f"the possessive quantifier {text}+ {_NEEDS_BACKTRACKING}")
    if pattern.startswith("?", end):
        return text + "?", end + 1
    return text, end


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    if i + 1 >= len(pattern):
        raise ValueError("the pattern ends with a lone '\\'; write a literal backslash as '\\\\'")
    letter = pattern[i + 1]
    after = i + 2
    if letter == "Q":
        end = pattern.find("\\E", after)
        stop = len(pattern) if end < 0 else end
        return "".join(map(_literal, pattern[after:stop])), (stop if end < 0 else end + 2)
    if letter in "pP":
        return _property(pattern, i, in_class)
    if letter in "123456789" or (letter == "k" and pattern.startswith("<", after)):
        end = pattern.find(">", after) + 1 if letter == "k" else after
        reference = pattern[i : end or len(pattern)]
        raise ValueError(f"the backreference {reference} {_NEEDS_BACKTRACKING}")
    if letter in "0xuc":
        char, after = _code_point(pattern, i)
        return _literal(char), after
    if letter in "tnrfadDwW":
        return pattern[i:after], after
    if letter == "e":
        return r"\x{1b}", after
    if letter in "sS":
        posix = "[:space:]" if letter == "s" else "[:^space:]"
        return (posix if in_class else f"[{posix}]"), after
    if letter in "hv":
        inside = _HORIZONTAL if letter == "h" else _VERTICAL
        return (inside if in_class else f"[{inside}]"), after
    if letter in "HV" and not in_class:
        return f"[^{_HORIZONTAL if letter == 'H' else _VERTICAL}]", after
    if not in_class and letter in "bB" and pattern.startswith("{", after):
        raise ValueError(f"\\{letter}{{...}} (grapheme boundaries) is not supported")
    if not in_class and letter in "bBAz":
        return pattern[i:after], after
    if letter == "Z" and not in_class:
        # End, or before a final line break: the same as \z where the name is matched whole,
        # unless the pattern goes on to match that line break (see docs/configuration.md).
        return r"\z", after
    if letter.isascii() and letter.isalnum():
        where = " inside [...]" if in_class else ""
        raise ValueError(f"\\{letter}{where} is not supported")
    return _literal(letter), after


def _code_point(pattern: str, i: int) -> tuple[str, int]:
    """Java's \\0octal, \\xhh, \\x{h...}, \\uhhhh (pairs of surrogates joined) and \\cX."""
    letter, at = pattern[i + 1], i + 2
    if letter == "c":
        if at >= len(pattern):
            raise ValueError("\\c needs a letter after it (\\cA is the control character 1)")
        return chr(ord(pattern[at]) ^ 64), at + 1
    if letter == "0":
        digits = re.match(r"[0-3][0-7]{2}|[0-7]{1,2}", pattern[at : at + 3])
        if digits is None:
            raise ValueError("\\0 needs octal digits after it (\\0101 is 'A')")
        return chr(int(digits.group(), 8)), at + digits.end()
    if letter == "x" and pattern.startswith("{", at):
        end = pattern.find("}", at)
        digits = pattern[at + 1 : end] if end > 0 else ""
        after = end + 1
    else:
        width = 2 if letter == "x" else 4
        digits, after = pattern[at : at + width], at + width
        if len(digits) < width:
            digits = ""
    if not _HEX.fullmatch(digits) or int(digits, 16) > 0x10FFFF:
        raise ValueError(f"\\{letter} needs hex digits: \\x41, \\x{{1F600}} or \\u0041")
    code = int(digits, 16)
    if 0xD800 <= code <= 0xDBFF and re.match(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}", pattern[after:]):
        low = int(pattern[after + 2 : after + 6], 16)
        return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), after + 6
    if 0xD800 <= code <= 0xDFFF:
        raise ValueError(f"\\{letter}{digits} is half of a surrogate pair; no name holds it alone")
    return chr(code), after


def _literal(char: str) -> str:
    """``char`` as an RE2 literal, in or out of a class."""
    if char.isascii() and char.isalnum():
        return char
    if char.isascii() and char.isprintable():
        return "\\" + char if char != " " else " "
    if char.isprintable():
        return char
    return f"\\x{{{ord(char):x}}}"


def _property(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    negated = pattern[i + 1] == "P"
    if pattern.startswith("{", i + 2):
        end = pattern.find("}", i + 3)
        if end < 0:
            raise ValueError("unterminated \\p{...} class")
        name, after = pattern[i + 3 : end], end + 1
    else:
        name, after = pattern[i + 2 : i + 3], i + 3
    posix = _POSIX_CLASSES.get(name.removeprefix("Is"))
    if posix is None:
        known = ", ".join(f"\\p{{{n}}}" for n in _POSIX_CLASSES)
        raise ValueError(f"\\{pattern[i + 1]}{{{name}}} is not supported; use one of {known}")
    inside = f"[:{'^' if negated else ''}{posix}:]"
    return (inside if in_class else f"[{inside}]"), after
