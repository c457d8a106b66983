"""Property tests: remote names round-trip, cycles never close, exclude always wins, and
RE2 matches simple Java patterns as a backtracking engine does."""

from __future__ import annotations

import re
import string

from hypothesis import given
from hypothesis import strategies as st
from srm_common.domain.filters import TopicFilter, compile_patterns
from srm_common.domain.policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    is_cycle,
    should_replicate_topic,
)

SEPARATORS = st.sampled_from([".", "_", "-", "::", "->", "*", "\\"])
NAME_CHARS = string.ascii_letters + string.digits + "._-:>*\\"
ALL_TOPICS = TopicFilter(include=[".*"], exclude=[])


def names_without(separator: str) -> st.SearchStrategy[str]:
    """Non-empty names sharing no character with the separator (so prefixes cannot blur)."""
    alphabet = "".join(c for c in NAME_CHARS if c not in separator)
    return st.text(alphabet=alphabet, min_size=1, max_size=12)


@st.composite
def policy_and_chain(
    draw: st.DrawFn,
) -> tuple[DefaultReplicationPolicy, str, list[str]]:
    """A default policy, a local topic and the distinct aliases it crossed, oldest first."""
    separator = draw(SEPARATORS)
    policy = DefaultReplicationPolicy(separator, draw(st.booleans()))
    topic = draw(names_without(separator))
    chain = draw(st.lists(names_without(separator), min_size=1, max_size=5, unique=True))
    return policy, topic, chain


def replicate_along(policy: DefaultReplicationPolicy, topic: str, chain: list[str]) -> str:
    for alias in chain:
        topic = policy.format_remote_topic(alias, topic)
    return topic


@given(st.data())
def test_format_round_trips_when_alias_and_topic_lack_separator(data: st.DataObject) -> None:
    separator = data.draw(SEPARATORS)
    policy = DefaultReplicationPolicy(separator)
    alias = data.draw(names_without(separator))
    topic = data.draw(names_without(separator))
    remote = policy.format_remote_topic(alias, topic)
    assert policy.topic_source(remote) == alias, "topic_source must give back the source alias"
    assert policy.upstream_topic(remote) == topic, "upstream_topic must give back the topic"
    assert policy.topic_source(topic) is None, "a name without separator is local"
    assert policy.original_topic(topic) == topic, "a local name is its own original"


@given(st.text(alphabet="ab._", max_size=12), SEPARATORS)
def test_source_and_upstream_rebuild_topic_when_topic_is_arbitrary(
    topic: str, separator: str
) -> None:
    policy = DefaultReplicationPolicy(separator)
    source = policy.topic_source(topic)
    upstream = policy.upstream_topic(topic)
    assert (source is None) == (upstream is None), "source and upstream are both known or not"
    if source is not None and upstream is not None:
        rebuilt = policy.format_remote_topic(source, upstream)
        assert rebuilt == topic, "format(source, upstream) must rebuild the remote name"


@given(policy_and_chain())
def test_original_topic_survives_hops_when_chain_of_prefixes(
    case: tuple[DefaultReplicationPolicy, str, list[str]],
) -> None:
    policy, topic, chain = case
    remote = replicate_along(policy, topic, chain)
    assert policy.original_topic(remote) == topic, "original_topic strips every hop"
    assert policy.topic_source(remote) == chain[-1], "the source is the last hop"
    assert policy.upstream_topic(remote) == replicate_along(policy, topic, chain[:-1]), (
        "upstream_topic undoes exactly the last hop"
    )


@given(policy_and_chain(), st.data())
def test_is_cycle_blocks_every_cluster_in_chain_when_topic_crossed_it(
    case: tuple[DefaultReplicationPolicy, str, list[str]], data: st.DataObject
) -> None:
    policy, topic, chain = case
    remote = replicate_along(policy, topic, chain)
    for alias in chain:
        assert is_cycle(policy, remote, alias), f"{remote!r} must never go back to {alias!r}"
        assert not should_replicate_topic(policy, ALL_TOPICS, remote, alias + "#", alias), (
            f"{remote!r} must not be replicated back to {alias!r}"
        )
    fresh = data.draw(names_without(policy.separator).filter(lambda a: a not in chain))
    assert not is_cycle(policy, remote, fresh), f"{fresh!r} never held {remote!r}: no cycle"


@given(policy_and_chain(), st.data())
def test_next_hop_prefixes_source_when_topic_replicated_again(
    case: tuple[DefaultReplicationPolicy, str, list[str]], data: st.DataObject
) -> None:
    policy, topic, chain = case
    remote = replicate_along(policy, topic, chain)
    target = data.draw(names_without(policy.separator).filter(lambda a: a not in chain))
    if policy.is_internal_topic(remote) or policy.is_heartbeats_topic(remote):
        return  # internal names are never replicated; heartbeats are covered elsewhere
    assert should_replicate_topic(policy, ALL_TOPICS, remote, chain[-1], target), (
        f"{remote!r} must go on to a cluster it never visited ({target!r})"
    )
    next_name = policy.format_remote_topic(chain[-1], remote)
    assert policy.upstream_topic(next_name) == remote, "the next hop adds exactly one prefix"


@given(policy_and_chain())
def test_heartbeats_stay_heartbeats_when_replicated_along_chain(
    case: tuple[DefaultReplicationPolicy, str, list[str]],
) -> None:
    policy, _, chain = case
    remote = replicate_along(policy, policy.heartbeats_topic(), chain)
    assert policy.is_heartbeats_topic(remote), f"{remote!r} must count as heartbeats"


@given(st.data())
def test_identity_keeps_name_when_topic_is_not_heartbeats(data: st.DataObject) -> None:
    separator = data.draw(SEPARATORS)
    alias = data.draw(names_without(separator))
    topic = data.draw(st.text(alphabet=NAME_CHARS, min_size=1).filter(lambda t: "heart" not in t))
    policy = IdentityReplicationPolicy(alias, separator)
    assert policy.format_remote_topic(alias, topic) == topic, "identity keeps the name"
    assert policy.original_topic(topic) == topic, "identity original is the name"
    assert not is_cycle(policy, topic, alias + "x"), "identity never reports a cycle"


# --- filters ---------------------------------------------------------------------------------

NAMES = st.text(alphabet=string.ascii_letters + string.digits + "._-", min_size=1, max_size=10)


@given(st.lists(NAMES, max_size=5), st.lists(NAMES, max_size=5), NAMES)
def test_exclude_always_wins_when_name_is_in_both_lists(
    include: list[str], exclude: list[str], name: str
) -> None:
    topic_filter = TopicFilter(
        include=[".*", *map(re.escape, include)],
        exclude=[*map(re.escape, exclude), re.escape(name)],
    )
    assert not topic_filter.matches(name), f"excluded {name!r} must never be selected"


@given(st.lists(NAMES, max_size=5), NAMES)
def test_literal_list_matches_exactly_its_members_when_escaped(names: list[str], name: str) -> None:
    compiled = compile_patterns([re.escape(n) for n in names])
    matched = compiled is not None and compiled.matches(name)
    assert matched == (name in names), f"{name!r} matches iff it is listed in {names!r}"


@given(st.text(max_size=12).filter(lambda s: "\\E" not in s and s.strip() == s and s))
def test_java_quote_matches_only_itself_when_text_is_arbitrary(text: str) -> None:
    compiled = compile_patterns([f"\\Q{text}\\E"])
    assert compiled is not None, "a non-blank quoted entry compiles"
    assert compiled.matches(text), f"\\Q{text}\\E must match {text!r}"
    assert not compiled.matches(text + "x"), "a quoted entry matches nothing longer"


# Java patterns whose meaning Java and Python's re (ASCII) agree on: literals, '.', classes,
# \d \w \s, groups, alternation, greedy and lazy quantifiers, a leading (?i).
ATOMS = st.sampled_from(
    ["a", "b", "B", "-", "\\.", ".", "[ab]", "[a-c]", "[^a]", "[\\d.]", "\\d", "\\w", "\\s", "\\W"]
)
QUANTIFIERS = st.sampled_from(["", "", "*", "+", "?", "*?", "+?", "??", "{2}", "{1,3}", "{0,}"])


def _quantified(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(inner, QUANTIFIERS).map("".join)


SIMPLE_PATTERNS = st.tuples(
    st.sampled_from(["", "(?i)"]),
    st.recursive(
        _quantified(ATOMS),
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3).map("".join),
            st.lists(inner, min_size=2, max_size=3).map("|".join),
            _quantified(inner.map(lambda p: f"({p})")),
            _quantified(inner.map(lambda p: f"(?:{p})")),
        ),
        max_leaves=8,
    ),
).map("".join)


@given(SIMPLE_PATTERNS, st.lists(st.text(alphabet="abcAB1-. _\n\t", max_size=8), max_size=6))
def test_re2_matches_as_python_re_when_pattern_is_simple_java(
    pattern: str, names: list[str]
) -> None:
    compiled = compile_patterns([pattern])
    assert compiled is not None, f"{pattern!r} compiles"
    for name in names:
        expected = re.fullmatch(pattern, name, re.ASCII) is not None
        assert compiled.matches(name) == expected, f"{pattern!r} on {name!r}: {expected}"
