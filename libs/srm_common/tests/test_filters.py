"""Topic, group and config-property filters and the Java regex translation."""

from __future__ import annotations

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
    translate_java_regex,
)
from srm_common.errors import ConfigError, InvalidPatternError


def _full(patterns: list[str], name: str) -> bool:
    compiled = compile_patterns(patterns)
    return compiled is not None and compiled.fullmatch(name) is not None


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
    with pytest.raises(InvalidPatternError, match="redefinition"):
        compile_patterns(["(?<n>a)", "(?<n>b)"])


# --- Java regex syntax -----------------------------------------------------------------------


def test_quoted_section_is_literal_when_java_q_e() -> None:
    assert _full([r"\Qa.b*\E-.*"], "a.b*-x"), "\\Q..\\E quotes its content"
    assert not _full([r"\Qa.b\E"], "axb"), "a quoted dot is literal"
    assert _full([r"x\Q(y"], "x(y"), "\\Q without \\E quotes to the end"


def test_posix_classes_are_translated_when_java_p_syntax() -> None:
    assert _full([r"\p{Alpha}+"], "Orders"), "\\p{Alpha} is a letter"
    assert not _full([r"\p{Alpha}+"], "orders1"), "digits are not \\p{Alpha}"
    assert _full([r"\P{Digit}+"], "abc"), "\\P{Digit} is not a digit"
    assert _full([r"[\p{Lower}\p{Digit}_-]+"], "orders_2-a"), "classes combine inside [...]"
    assert _full([r"\p{IsAlpha}"], "a"), "the Is prefix is accepted"
    assert _full([r"\p{Punct}"], "]"), "punctuation includes ']'"


@pytest.mark.parametrize(
    ("pattern", "hint"),
    [
        (r"\p{L}+", "not supported"),
        (r"\p{InGreek}", "not supported"),
        (r"[\P{Alpha}x]", "inside"),
        (r"[a-z&&[^aeiou]]", "intersection"),
        (r"[a[b]]", "nested"),
        (r"\p{Alpha", "unterminated"),
    ],
)
def test_java_only_syntax_is_rejected_when_not_translatable(pattern: str, hint: str) -> None:
    with pytest.raises(InvalidPatternError, match=hint) as caught:
        compile_patterns([pattern], key="topics")
    assert caught.value.pattern == pattern, "the error names the entry as written"


def test_named_groups_and_backreferences_work_when_java_syntax() -> None:
    assert _full([r"(?<w>[a-z]+)-\k<w>"], "ab-ab"), "Java named group and \\k<name>"
    assert not _full([r"(?<w>[a-z]+)-\k<w>"], "ab-cd"), "backreference must repeat"
    assert _full([r"(?<=a)b|ab"], "ab"), "lookbehind is left alone"


def test_numbered_backreferences_are_renumbered_when_entries_joined() -> None:
    patterns = [r"(x)\1", r"([a-z])\1-(y)\2"]
    assert _full(patterns, "aa-yy"), "\\1 in the second entry refers to its own group"
    assert not _full(patterns, "ax-yy"), "the renumbered backreference still constrains"
    assert _full(patterns, "xx"), "the first entry keeps its numbering"
    assert _full([r"(x)", r"(b)\1\123"], "bbS"), "a three-digit octal escape is not renumbered"


def test_leading_flags_are_scoped_when_not_first_entry() -> None:
    assert _full(["orders", "(?i)pay.*"], "PAYMENTS"), "(?i) applies to its entry"
    assert not _full(["(?i)pay.*", "orders"], "ORDERS"), "(?i) does not leak to other entries"
    assert _full(["(?i-s)a.b"], "A-B"), "flag groups with '-' are scoped too"


def test_end_anchors_are_translated_when_java_z() -> None:
    assert _full([r"orders\z"], "orders"), "\\z is end of input"
    assert _full([r"orders\Z"], "orders"), "\\Z is end of input before a final newline"


def test_possessive_and_atomic_work_when_python_supports_them() -> None:
    assert _full([r"a*+b"], "aab"), "possessive quantifier"
    assert not _full([r"(?>a|ab)c"], "abc"), "atomic group does not backtrack"


def test_translation_leaves_python_syntax_when_nothing_java_only() -> None:
    assert translate_java_regex(r"orders-[0-9]+\.v\d") == r"orders-[0-9]+\.v\d", "unchanged"
    assert translate_java_regex(r"[]a]") == r"[]a]", "a leading ']' is a literal in a class"
