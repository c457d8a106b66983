"""sasl.jaas.config read with the rules of Kafka's JaasConfig (java.io.StreamTokenizer)."""

from __future__ import annotations

import pytest
from srm_common.jaas import JaasSyntaxError, parse_jaas

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_username_and_password_are_read_when_double_quoted() -> None:
    login = parse_jaas(f'{SCRAM} required username="alice" password="alice-secret";')
    assert login.module == SCRAM and login.flag == "required"
    assert dict(login.options) == {"username": "alice", "password": "alice-secret"}


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ('"a\\"b"', 'a"b'),  # escaped quote
        ("'a\"b'", 'a"b'),  # the other quote inside single quotes
        ('"a\\\\b"', "a\\b"),  # escaped backslash
        ('"tab\\there"', "tab\there"),  # \t
        ('"\\101\\60"', "A0"),  # octal escapes, 3 digits when the first is 0-3
        ('"\\477"', "'7"),  # first digit 4-7: two octal digits only (\47 = ')
        ('"\\q"', "q"),  # any other escaped character is itself
        ('"a/b;c=d"', "a/b;c=d"),  # comment, ';' and '=' are plain inside quotes
        ("s3cr3t!#", "s3cr3t!#"),  # unquoted word
    ],
)
def test_values_unescape_like_java_when_quoted(written: str, read: str) -> None:
    login = parse_jaas(f"{SCRAM} required username=u password={written};")
    assert login.options["password"] == read


def test_two_adjacent_quoted_strings_are_refused_when_not_one_value() -> None:
    with pytest.raises(JaasSyntaxError, match="option 's' has no value"):
        parse_jaas(f"{SCRAM} required password='it''s';")


def test_comments_are_skipped_when_outside_quotes() -> None:
    text = f"""// leading comment
    {SCRAM} /* flag follows */ REQUIRED
        username="u" // the user
        password="p"; /* trailing */"""
    login = parse_jaas(text)
    assert login.flag == "required", "flags are case-insensitive, stored lower case"
    assert dict(login.options) == {"username": "u", "password": "p"}


def test_an_unquoted_slash_starts_a_comment_when_unquoted() -> None:
    with pytest.raises(JaasSyntaxError, match="does not end with ';'"):
        parse_jaas(f"{SCRAM} required username=u password=a/b;")


def test_a_quote_ends_at_the_end_of_a_line_when_unclosed() -> None:
    login = parse_jaas(f'{SCRAM} required username="u\n password="p";')
    assert login.options["username"] == "u"
    assert login.options["password"] == "p"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no login module"),
        ("   // only a comment", "no login module"),
        (SCRAM, "no control flag"),
        (f"{SCRAM} mandatory;", "control flag"),
        (f"{SCRAM} required username;", "option 'username' has no value"),
        (f"{SCRAM} required username=;", "option 'username' has no value"),
        (f'{SCRAM} required username="u"', "does not end with ';'"),
        (f'{SCRAM} required username="u"; {SCRAM} required;', "exactly one"),
        (f'{SCRAM} required password="x\\', "lone backslash"),
    ],
)
def test_kafkas_refusals_are_refused_when_the_entry_is_malformed(text: str, reason: str) -> None:
    with pytest.raises(JaasSyntaxError, match=reason):
        parse_jaas(text)


def test_errors_never_quote_a_value_when_refused() -> None:
    with pytest.raises(JaasSyntaxError) as caught:
        parse_jaas(f'{SCRAM} required username="u" password="hunter2-secret"')
    assert "hunter2" not in str(caught.value)
