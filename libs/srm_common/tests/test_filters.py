"""Topic, group and config-property filters and the Java regex translation."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from srm_common.domain.filters import (
    DEFAULT_CONFIG_PROPERTIES_EXCLUDE,
    DEFAULT_GROUPS_EXCLUDE,
    DEFAULT_TOPICS_EXCLUDE,
    ConfigPropertyFilter,
    GroupFilter,
    TopicFilter,
    compile_patterns,
    split_pattern_list,
)
from srm_common.domain.java_regex import translate_java_regex
from srm_common.errors import ConfigError, InvalidPatternError


def _full(patterns: list[str], name: str) -> bool:
    compiled = compile_patterns(patterns)
    return compiled is not None and compiled.matches(name)


# --- defaults (MM2 section 1.2) --------------------------------------------------------------


def test_defaults_equal_mm2_lists_when_unchanged() -> None:
    assert DEFAULT_TOPICS_EXCLUDE == (r".*[\-\.]internal", r".*\.replica", r"__.*"), "topics"
    assert DEFAULT_GROUPS_EXCLUDE == ("console-consumer-.*", "connect-.*", "__.*"), "groups"
    assert len(DEFAULT_CONFIG_PROPERTIES_EXCLUDE) == 6, "six config properties are excluded"


@pytest.mark.parametrize(
    ("topic", "selected"),
    [
        ("orders", True),
        ("us-west.orders", True),
        ("heartbeats", True),
        ("x.internal", False),
        ("x-internal", False),
        ("mm2-offsets.A.internal", False),
        ("orders.replica", False),
        ("__consumer_offsets", False),
        ("internal", True),
    ],
)
def test_default_topic_filter_follows_mm2_when_no_config(topic: str, selected: bool) -> None:
    assert TopicFilter().matches(topic) is selected, f"default filter on {topic!r}: {selected}"


@pytest.mark.parametrize(
    ("group", "selected"),
    [
        ("billing", True),
        ("console-consumer-4711", False),
        ("connect-mm2", False),
        ("__internal", False),
    ],
)
def test_default_group_filter_follows_mm2_when_no_config(group: str, selected: bool) -> None:
    assert GroupFilter().matches(group) is selected, f"default filter on {group!r}: {selected}"


@pytest.mark.parametrize(
    ("name", "copied"),
    [
        ("retention.ms", True),
        ("cleanup.policy", True),
        ("min.insync.replicas", False),
        ("unclean.leader.election.enable", False),
        ("follower.replication.throttled.replicas", False),
        ("leader.replication.throttled.replicas", False),
        ("message.timestamp.difference.max.ms", False),
        ("message.timestamp.type", False),
        ("minXinsync.replicas", True),
    ],
)
def test_default_config_filter_follows_mm2_when_no_config(name: str, copied: bool) -> None:
    assert ConfigPropertyFilter().should_replicate(name) is copied, f"{name!r} copied: {copied}"


# --- matching rules --------------------------------------------------------------------------


def test_patterns_match_whole_names_when_prefix_matches() -> None:
    assert not _full(["orders"], "orders-eu"), "'orders' must not match 'orders-eu'"
    assert not _full(["rders"], "orders"), "'rders' must not match 'orders'"
    assert _full(["orders|payments"], "payments"), "alternation inside one entry"
    assert _full(["a", "ab"], "ab"), "the second entry is tried when the first fails"


def test_compile_returns_none_when_list_empty_or_blank() -> None:
    assert compile_patterns([]) is None, "an empty list matches nothing (None)"
    assert compile_patterns(["", "  "]) is None, "blank entries are ignored"
    assert not TopicFilter(include=[], exclude=[]).matches("orders"), "topics= selects nothing"


def test_entries_are_stripped_when_list_has_spaces() -> None:
    topic_filter = TopicFilter(include=[" orders ", "", "pay.*  "], exclude=[])
    assert topic_filter.include == ("orders", "pay.*"), "filter keeps stripped, non-blank entries"
    assert topic_filter.matches("payments"), "stripped entry matches"


def test_split_pattern_list_when_mm2_comma_list() -> None:
    assert split_pattern_list(" orders, payments-.* ,, ") == ("orders", "payments-.*"), "split"
    assert split_pattern_list("") == (), "empty value is the empty list"


def test_exclude_wins_when_topic_is_included_and_excluded() -> None:
    topic_filter = TopicFilter(include=["orders.*"], exclude=["orders-secret"])
    assert topic_filter.matches("orders-eu"), "included, not excluded"
    assert not topic_filter.matches("orders-secret"), "exclude beats include"


def test_config_filter_copies_everything_when_exclude_empty() -> None:
    assert ConfigPropertyFilter(()).should_replicate("min.insync.replicas"), "nothing excluded"


def test_filters_compare_by_patterns_when_equal_lists() -> None:
    assert TopicFilter(["a"], ["b"]) == TopicFilter(("a",), (" b ",)), "equal after stripping"
    assert hash(GroupFilter(["a"], [])) == hash(GroupFilter(("a",), ())), "hashable, equal"


def test_filter_rejects_single_string_when_list_expected() -> None:
    with pytest.raises(TypeError, match="split_pattern_list"):
        TopicFilter(include="orders", exclude=[])


# --- errors ----------------------------------------------------------------------------------


def test_invalid_pattern_names_the_one_bad_entry_when_list_has_several() -> None:
    with pytest.raises(InvalidPatternError) as caught:
        compile_patterns(["orders", "pay(ments", "x.*"], key="topics")
    error = caught.value
    assert error.pattern == "pay(ments", "the error names only the bad entry"
    assert error.key == "topics", "the error carries the key it was given"
    assert "missing )" in error.reason, "the reason comes from the regex engine"
    assert isinstance(error, ConfigError), "an invalid pattern is a configuration error"


@pytest.mark.parametrize(
    ("make", "key"),
    [
        (lambda: TopicFilter(include=["("], exclude=[]), "topics"),
        (lambda: TopicFilter(include=[], exclude=["["]), "topics.exclude"),
        (lambda: GroupFilter(include=["*"], exclude=[]), "groups"),
        (lambda: GroupFilter(include=[], exclude=["+x"]), "groups.exclude"),
        (lambda: ConfigPropertyFilter(["\\"]), "config.properties.exclude"),
    ],
)
def test_filter_raises_keyed_error_when_pattern_invalid(
    make: Callable[[], object], key: str
) -> None:
    with pytest.raises(InvalidPatternError) as caught:
        make()
    assert caught.value.key == key, f"error must be keyed {key!r}, got {caught.value.key!r}"


def test_duplicate_group_names_are_reported_when_entries_joined() -> None:
    with pytest.raises(InvalidPatternError, match="also used by") as caught:
        compile_patterns(["(?<n>a)", "(?<n>b)"])
    assert caught.value.pattern == "(?<n>b)", "the entry that repeats the name is named"
    with pytest.raises(InvalidPatternError, match="used twice"):
        compile_patterns(["(?<n>a)(?<n>b)"])


# --- Java regex syntax -----------------------------------------------------------------------


def test_quoted_section_is_literal_when_java_q_e() -> None:
    assert _full([r"\Qa.b*\E-.*"], "a.b*-x"), "\\Q..\\E quotes its content"
    assert not _full([r"\Qa.b\E"], "axb"), "a quoted dot is literal"
    assert _full([r"x\Q(y"], "x(y"), "\\Q without \\E quotes to the end"
    assert _full([r"[\Q-]\E]+"], "-]"), "quoting works inside a class"


def test_posix_classes_are_translated_when_java_p_syntax() -> None:
    assert _full([r"\p{Alpha}+"], "Orders"), "\\p{Alpha} is a letter"
    assert not _full([r"\p{Alpha}+"], "orders1"), "digits are not \\p{Alpha}"
    assert _full([r"\P{Digit}+"], "abc"), "\\P{Digit} is not a digit"
    assert _full([r"[\p{Lower}\p{Digit}_-]+"], "orders_2-a"), "classes combine inside [...]"
    assert _full([r"\p{IsAlpha}"], "a"), "the Is prefix is accepted"
    assert _full([r"\p{Punct}"], "]"), "punctuation includes ']'"
    assert _full([r"[\P{Alpha}x]+"], "x1-"), "a negated class inside [...]"
    assert not _full([r"[\P{Alpha}x]"], "a"), "letters other than x are left out"


@pytest.mark.parametrize(
    ("pattern", "hint"),
    [
        (r"\p{L}+", "not supported"),
        (r"\p{InGreek}", "not supported"),
        (r"[a-z&&[^aeiou]]", "intersection"),
        (r"[a[b]]", "nested"),
        (r"\p{Alpha", "unterminated"),
        (r"(?x) a", "comments mode (?x)"),
        (r"(?U)\w", "(?U)"),
        (r"a{,3}", "escape a literal '{'"),
        (r"\uD83D", "surrogate"),
        (r"\b{g}", "grapheme"),
        (r"(?#note)a", "not Java regex syntax"),
        (r"(?<1st>a)", "group name"),
        (r"a\q", "\\q is not supported"),
        ("a\\", "lone"),
    ],
)
def test_java_only_syntax_is_rejected_when_not_translatable(pattern: str, hint: str) -> None:
    with pytest.raises(InvalidPatternError, match=re.escape(hint)) as caught:
        compile_patterns([pattern], key="topics")
    assert caught.value.pattern == pattern, "the error names the entry as written"


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        (r"(x)\1", "the backreference \\1"),
        (r"(?<w>[a-z]+)-\k<w>", "the backreference \\k<w>"),
        (r"orders(?=-eu)", "lookahead (?=...)"),
        (r"orders(?!-eu).*", "negative lookahead (?!...)"),
        (r"(?<=a)b", "lookbehind (?<=...)"),
        (r"(?<!a)b", "negative lookbehind (?<!...)"),
        (r"a*+b", "the possessive quantifier *+"),
        (r"a++", "the possessive quantifier ++"),
        (r"a?+", "the possessive quantifier ?+"),
        (r"a{2,3}+", "the possessive quantifier {2,3}+"),
        (r"(?>a|ab)c", "the atomic group (?>...)"),
    ],
)
def test_backtracking_constructs_are_refused_naming_the_construct(
    pattern: str, construct: str
) -> None:
    with pytest.raises(InvalidPatternError) as caught:
        compile_patterns(["orders", pattern], key="topics.exclude")
    error = caught.value
    assert error.pattern == pattern, "the error names the entry as written"
    assert error.reason.startswith(f"{construct} needs backtracking"), error.reason
    assert "rewrite the pattern without it" in error.reason, "the message says what to do"
    assert error.key == "topics.exclude", "the error carries the list's key"


@pytest.mark.parametrize("pattern", [r"(?P<x>a)", r"(?P<x>a)(?P=x)"])
def test_python_only_syntax_is_refused_when_not_java(pattern: str) -> None:
    with pytest.raises(InvalidPatternError, match=re.escape("Python syntax, not Java's")):
        compile_patterns([pattern])


def test_named_groups_work_when_java_syntax() -> None:
    assert _full([r"(?<w>[a-z]+)-v(?<n>[0-9])"], "ab-v1"), "Java named groups"
    assert translate_java_regex(r"(?<region>eu|us)-.*") == "(eu|us)-.*", "the name is dropped"


def test_escapes_are_translated_when_java_spells_them_differently() -> None:
    assert _full([r"\0101\x42\x{43}\u0044"], "ABCD"), "octal, hex and unicode escapes"
    assert _full([r"\uD83D\uDE00"], "\U0001f600"), "a surrogate pair is one character"
    assert _full([r"a\cAb\e"], "a\x01b\x1b"), "control escapes"
    assert _full([r"\s"], "\x0b"), "Java's \\s includes the vertical tab"
    assert not _full([r"\S"], "\x0b"), "and \\S excludes it"
    assert _full([r"\h\v"], "\u3000\u2028"), "Java's \\h and \\v whitespace classes"
    assert _full([r"\d+"], "42") and not _full([r"\d"], "\u0663"), "\\d is ASCII, as in Java"


def test_leading_flags_are_scoped_when_not_first_entry() -> None:
    assert _full(["orders", "(?i)pay.*"], "PAYMENTS"), "(?i) applies to its entry"
    assert not _full(["(?i)pay.*", "orders"], "ORDERS"), "(?i) does not leak to other entries"
    assert _full(["(?i-s)a.b"], "A-B"), "flag groups with '-' are scoped too"
    assert _full(["a(?i)b"], "aB") and not _full(["a(?i)b"], "AB"), "flags mid-pattern"
    assert _full(["(?:a(?i)b)c"], "aBc") and not _full(["(?:a(?i)b)c"], "aBC"), "group scope"
    assert _full(["(?iu)pay", "(?d)x"], "PAY"), "u and d are accepted"


def test_end_anchors_are_translated_when_java_z() -> None:
    assert _full([r"orders\z"], "orders"), "\\z is end of input"
    assert _full([r"orders\Z"], "orders"), "\\Z is end of input before a final newline"
    assert not _full([r"orders\Z"], "orders\n"), "a whole-name match must take the newline"


def test_translation_leaves_plain_syntax_when_nothing_java_only() -> None:
    assert translate_java_regex(r"orders-[0-9]+\.v\d") == r"orders-[0-9]+\.v\d", "unchanged"
    assert translate_java_regex(r"[]a]") == r"[]a]", "a leading ']' is a literal in a class"
    assert _full([r"[]a]+"], "]a]"), "RE2 reads it the same way"


# --- bounded matching ------------------------------------------------------------------------


@pytest.mark.parametrize("length", [40, 4000])
def test_nested_quantifiers_match_in_linear_time_when_name_is_long(length: int) -> None:
    # A backtracking engine needs about 2**length steps here; RE2 answers at once, so this
    # test finishes (it is the hang that would fail it, not a timing).
    exclude = TopicFilter(include=[".*"], exclude=["(a+)+b", "(a|aa)*c", "(.*)*x"])
    assert exclude.matches("a" * length), "no exclude entry matches a run of a's"
    assert not exclude.matches("a" * length + "b"), "(a+)+b still matches what it should"


def test_a_list_is_compiled_once_when_filters_are_built_again() -> None:
    first = compile_patterns(["orders.*", "payments"])
    assert compile_patterns([" orders.* ", "payments", ""]) is first, "cached by its entries"
    assert TopicFilter(["x"], ["y"])._include_re is TopicFilter(["x"], [])._include_re
