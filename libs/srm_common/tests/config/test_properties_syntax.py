"""Java .properties syntax as MM2 reads it: separators, comments, continuations, escapes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from srm_common.config.properties_file import format_properties, read_properties


def entries(text: str) -> dict[str, tuple[str, int | None]]:
    raw = read_properties(text, "test.properties")
    assert not raw.problems, raw.problems
    return {e.key: (str(e.value), e.line) for e in raw.entries}


def test_all_three_separators_work_when_keys_use_equals_colon_or_space() -> None:
    found = entries("a=1\nb: 2\nc 3\n  d  =  4\ne\t:\t5\nf\n")
    assert {k: v for k, (v, _) in found.items()} == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "5",
        "f": "",
    }


def test_only_the_first_separator_counts_when_a_value_contains_more() -> None:
    assert entries("a = b = c\nurl: http://x:1\n") == {"a": ("b = c", 1), "url": ("http://x:1", 2)}


def test_comment_lines_are_skipped_when_they_start_with_hash_or_bang() -> None:
    found = entries("# comment\n   ! also a comment\na = 1 # not a comment\n")
    assert found == {"a": ("1 # not a comment", 3)}


def test_continued_value_is_joined_when_a_line_ends_with_a_backslash() -> None:
    text = "topics = orders, \\\n          payments, \\\n   audit\nnext = 1\n"
    assert entries(text) == {"topics": ("orders, payments, audit", 1), "next": ("1", 4)}


def test_line_does_not_continue_when_the_backslash_is_escaped() -> None:
    assert entries("a = ends with \\\\\nb = 2\n") == {"a": ("ends with \\", 1), "b": ("2", 2)}


def test_comment_does_not_continue_when_it_ends_with_a_backslash() -> None:
    assert entries("# comment \\\na = 1\n") == {"a": ("1", 2)}


def test_blank_line_ends_a_continuation_when_one_follows_the_backslash() -> None:
    assert entries("a = x\\\n\nb = 2\n") == {"a": ("x", 1), "b": ("2", 3)}


def test_continuation_may_start_with_hash_when_it_continues_a_value() -> None:
    assert entries("a = x\\\n  #y\n") == {"a": ("x#y", 1)}


def test_escapes_are_decoded_when_keys_and_values_use_them() -> None:
    found = entries(
        "key\\:with\\=seps\\ and\\ spaces = v\n"
        "tabs = a\\tb\\nc\n"
        "unicode = caf\\u00e9 \\u20AC\n"
        "emoji = \\ud83d\\ude00\n"
        "other = \\q\\#\n"
    )
    assert found["key:with=seps and spaces"] == ("v", 1)
    assert found["tabs"][0] == "a\tb\nc"
    assert found["unicode"][0] == "café €"
    assert found["emoji"][0] == "😀"
    assert found["other"][0] == "q#"


def test_line_endings_are_all_accepted_when_files_come_from_any_os() -> None:
    assert entries("a=1\r\nb=2\rc=3\n") == {"a": ("1", 1), "b": ("2", 2), "c": ("3", 3)}


def test_trailing_whitespace_is_kept_when_java_reads_a_value() -> None:
    assert entries("a = x  \n")["a"][0] == "x  "


def test_every_repeat_is_kept_in_order_when_a_key_is_repeated() -> None:
    raw = read_properties("a = 1\na = 2\n", "t")
    assert [(e.value, e.line) for e in raw.entries] == [("1", 1), ("2", 2)]


def test_problem_is_reported_when_a_line_has_no_key() -> None:
    raw = read_properties("= value\n", "t.properties")
    assert [str(p) for p in raw.problems] == [
        "t.properties:1: line has no key before the value 'value'; write 'key = value'"
    ]


_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
)


@given(st.lists(st.tuples(_text.filter(bool), _text), max_size=8))
def test_formatted_pairs_read_back_equal_when_keys_and_values_are_arbitrary(
    pairs: list[tuple[str, str]],
) -> None:
    raw = read_properties(format_properties(pairs), "t")
    assert not raw.problems
    assert [(e.key, e.value) for e in raw.entries if e.key != "clusters"] == [
        (k, v) for k, v in pairs if k != "clusters"
    ]


def test_warning_explains_java_escapes_when_a_regex_backslash_is_single() -> None:
    raw = read_properties("topics = a\\.b, c\\\\.d\n", "t")
    assert [e.value for e in raw.entries] == ["a.b, c\\.d"]
    assert raw.warnings == (
        "line 1, key 'topics': '\\.' is read as '.' (a Java properties escape);"
        " write '\\\\.' if a regex backslash is meant",
    )
