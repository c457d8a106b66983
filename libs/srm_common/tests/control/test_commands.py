"""Operator pattern commands and config-file changes, validated into events."""

from __future__ import annotations

import pytest
from srm_common.config import parse_yaml_text
from srm_common.config.control import effective_flow
from srm_common.control.commands import (
    MAX_PATTERN_LENGTH,
    MAX_PATTERNS,
    ChangePatterns,
    CommandRejected,
    ResumePartition,
    applied_before,
    command_id,
    config_diff,
    decide,
)
from srm_common.control.events import (
    ConfigApplied,
    Envelope,
    Event,
    FlowBaseline,
    FlowDisabled,
    FlowEnabled,
    GroupsAllowed,
    GroupsAllowRemoved,
    GroupsDenied,
    GroupsDenyRemoved,
    TopicsAllowed,
    TopicsAllowRemoved,
    TopicsDenied,
    TopicsDenyRemoved,
)
from srm_common.control.state import ControlState, apply, replay
from srm_common.control.state_records import AppliedCommand
from srm_common.domain.resume import ResumeMode, ResumePoint
from srm_common.errors import InvalidCommandError, SrmError
from srm_common.replication_plan import replicated_partitions

AB = "primary->backup"
ALIASES = ("primary", "backup")


def fold(*events: Event) -> ControlState:
    return replay(Envelope(e, i, offset=i) for i, e in enumerate(events))


def then(state: ControlState, events: list[Event]) -> ControlState:
    for event in events:
        state = apply(state, Envelope(event, 0))
    return state


STATE = fold(TopicsAllowed(AB, ("orders.*", "payments")), TopicsDenied(AB, ("orders\\.tmp",)))


def change(action: str, *patterns: str, kind: str = "topics", flow: str = AB) -> ChangePatterns:
    return ChangePatterns(flow, kind, action, patterns)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("command", "event"),
    [
        (change("add", "audit"), TopicsAllowed(AB, ("audit",))),
        (change("remove", "payments"), TopicsAllowRemoved(AB, ("payments",))),
        (change("add-blacklist", "x"), TopicsDenied(AB, ("x",))),
        (change("remove-blacklist", "orders\\.tmp"), TopicsDenyRemoved(AB, ("orders\\.tmp",))),
        (change("add", "billing-.*", kind="groups"), GroupsAllowed(AB, ("billing-.*",))),
    ],
)
def test_each_action_edits_its_list(command: ChangePatterns, event: Event) -> None:
    assert decide(STATE, command, aliases=ALIASES) == [event]


def test_adding_only_records_patterns_not_yet_listed_and_is_idempotent() -> None:
    command = change("add", " audit ", "", "payments", "audit")
    events = decide(STATE, command, aliases=ALIASES)
    assert events == [TopicsAllowed(AB, ("audit",))]
    assert decide(then(STATE, events), command, aliases=ALIASES) == []


def test_flow_names_are_normalised() -> None:
    events = decide(STATE, change("add", "a", flow=" primary -> backup "), aliases=ALIASES)
    assert events == [TopicsAllowed(AB, ("a",))]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (change("add", "a", flow="primary"), "flow 'primary' is not SOURCE->TARGET; name it like"),
        (
            change("add", "a", flow="primary->dr"),
            "unknown cluster alias 'dr'; known aliases: primary, backup",
        ),
        (change("add", "a", flow="backup->backup"), "would replicate backup into itself"),
        (change("add", " ", ""), "no pattern given for the topics allowlist of primary->backup"),
        (change("add", "a", kind="acls"), "unknown pattern kind 'acls'; use topics or groups"),
        (change("purge", "a"), "unknown action 'purge'; use one of add, remove, add-blacklist"),
        (
            change("add", "ok", "orders("),
            "topics allowlist of primary->backup: invalid regular expression 'orders('",
        ),
        (
            change("add-blacklist", "\\p{Greek}"),
            "topics denylist of primary->backup: invalid regular expression",
        ),
        (
            change("remove", "foo.*"),
            "'foo.*' is not in the topics allowlist of primary->backup"
            " (it holds: orders.*, payments); nothing was changed",
        ),
        (
            change("remove", "payments", "a", "b"),
            "'a', 'b' are not in the topics allowlist",
        ),
        (
            change("remove", "g", kind="groups"),
            "'g' is not in the groups allowlist of primary->backup (it is empty)",
        ),
    ],
)
def test_bad_commands_are_rejected_with_one_clear_line(
    command: ChangePatterns, message: str
) -> None:
    with pytest.raises(CommandRejected) as caught:
        decide(STATE, command, aliases=ALIASES)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, InvalidCommandError | SrmError)


def test_a_bad_regex_rejects_the_whole_command() -> None:
    with pytest.raises(CommandRejected, match="nothing was changed"):
        decide(STATE, change("add", "fine", "bad["), aliases=ALIASES)


@pytest.mark.parametrize(
    ("pattern", "construct"),
    [
        ("(x)\\1", "the backreference \\1"),
        ("orders(?!-eu)", "negative lookahead (?!...)"),
        ("a*+b", "the possessive quantifier *+"),
        ("(?>a|ab)c", "the atomic group (?>...)"),
        ("(?P<x>a)", "(?P...) is Python syntax"),
    ],
)
@pytest.mark.parametrize("action", ["add", "add-blacklist"])
def test_a_pattern_needing_backtracking_is_refused_and_the_lists_stay(
    pattern: str, construct: str, action: str
) -> None:
    for kind in ("topics", "groups"):
        with pytest.raises(CommandRejected) as caught:
            decide(STATE, change(action, "fine", pattern, kind=kind), aliases=ALIASES)
        message = str(caught.value)
        assert f"invalid regular expression {pattern!r}: {construct}" in message, message
        assert message.endswith("nothing was changed"), "the operator learns nothing changed"


def test_a_pattern_a_stricter_release_refuses_can_still_be_removed() -> None:
    old = fold(TopicsDenied(AB, ("(x)\\1", "tmp-.*")))
    events = decide(old, change("remove-blacklist", "(x)\\1"), aliases=ALIASES)
    assert events == [TopicsDenyRemoved(AB, ("(x)\\1",))]


def test_a_nested_quantifier_is_harmless_when_a_long_topic_name_meets_it() -> None:
    # Issue 11: '(a+)+b' against 40 a's backtracks for hours; RE2 answers at once.
    state = fold(TopicsAllowed(AB, (".*",)))
    events = decide(state, change("add-blacklist", "(a+)+b"), aliases=ALIASES)
    assert events == [TopicsDenied(AB, ("(a+)+b",))], "the pattern is valid Java: accepted"
    config = parse_yaml_text(
        'clusters:\n  primary: {bootstrap.servers: "h:1"}\n  backup: {bootstrap.servers: "h:2"}\n'
        "flows:\n  primary->backup: {enabled: true}\n",
        "srm.yaml",
    )
    flow = effective_flow(config.flow("primary", "backup"), then(state, events).flow(AB))
    counts = {"a" * 40: 1, "a" * 4000: 1, "a" * 40 + "b": 1}
    assert replicated_partitions(flow, counts) == [("a" * 40, 0), ("a" * 4000, 0)]


# --- bounded input and command ids ---------------------------------------------------


def test_more_than_100_patterns_in_one_command_are_refused_naming_the_limit() -> None:
    assert decide(STATE, change("add", *(f"t{i}" for i in range(MAX_PATTERNS))), aliases=ALIASES)
    with pytest.raises(CommandRejected, match="101 patterns for the topics allowlist of") as c:
        decide(STATE, change("add", *(f"t{i}" for i in range(101))), aliases=ALIASES)
    assert f"at most {MAX_PATTERNS} per command" in str(c.value)


def test_a_pattern_over_1000_characters_is_refused_unless_removing_one_the_list_holds() -> None:
    long = "x" * (MAX_PATTERN_LENGTH + 1)
    assert decide(STATE, change("add", "y" * MAX_PATTERN_LENGTH), aliases=ALIASES)
    for action in ("add", "remove", "add-blacklist"):
        with pytest.raises(CommandRejected) as caught:
            decide(STATE, change(action, long), aliases=ALIASES)
        message = str(caught.value)
        assert f"a pattern of {MAX_PATTERN_LENGTH + 1} characters" in message
        assert f"at most {MAX_PATTERN_LENGTH} characters" in message and len(message) < 300
    held = fold(TopicsAllowed(AB, (long,)))  # from a config file, say
    assert decide(held, change("remove", long), aliases=ALIASES) == [
        TopicsAllowRemoved(AB, (long,))
    ]


def test_a_command_whose_id_the_log_holds_was_applied_before() -> None:
    command = ChangePatterns(AB, "topics", "remove", ("payments",), command_id="r-1")
    assert command_id(command) == "r-1" and applied_before(STATE, command) is None
    events = decide(STATE, command, aliases=ALIASES)
    state = STATE
    for event in events:
        state = apply(state, Envelope(event, 5, "alice", "r-1"))
    assert applied_before(state, command) == AppliedCommand(5, "alice", 1)
    assert applied_before(state, change("remove", "payments")) is None, "no id: decide it"
    resume = ResumePartition(AB, "orders", 0, ResumePoint(ResumeMode.COPY_END), "r-2")
    assert command_id(resume) == "r-2"


# --- config_diff -------------------------------------------------------------------


def flow(
    enabled: bool = True, topics: tuple[str, ...] = ("orders",), **lists: tuple[str, ...]
) -> FlowBaseline:
    return FlowBaseline(
        enabled,
        topics,
        lists.get("topics_exclude", ()),
        lists.get("groups", (".*",)),
        lists.get("groups_exclude", ()),
    )


def test_first_apply_seeds_enabled_flows_and_every_list() -> None:
    baseline = {AB: flow(), "backup->primary": flow(enabled=False, topics=("x",))}
    events = config_diff(ControlState(), baseline, "srm.properties")
    assert events == [
        TopicsAllowed("backup->primary", ("x",)),
        GroupsAllowed("backup->primary", (".*",)),
        TopicsAllowed(AB, ("orders",)),
        GroupsAllowed(AB, (".*",)),
        FlowEnabled(AB),
        ConfigApplied("srm.properties", baseline),
    ]
    state = then(ControlState(), events)
    assert state.flow(AB).enabled and not state.flow("backup->primary").enabled
    assert config_diff(state, baseline, "srm.properties") == [], "an unchanged file is a no-op"


def test_operator_changes_survive_a_restart_with_the_same_file() -> None:
    baseline = {AB: flow()}
    state = then(ControlState(), config_diff(ControlState(), baseline, "p"))
    state = then(state, [TopicsAllowed(AB, ("audit",)), TopicsAllowRemoved(AB, ("orders",))])
    state = then(state, [FlowDisabled(AB)])
    assert config_diff(state, baseline, "p") == []


def test_file_edits_are_applied_as_adds_removes_and_switches() -> None:
    old = {AB: flow(topics=("orders", "payments"))}
    state = then(ControlState(), config_diff(ControlState(), old, "p"))
    state = then(state, [TopicsAllowRemoved(AB, ("payments",))])  # the operator was first
    new = {AB: flow(enabled=False, topics=("orders", "audit"), groups_exclude=("test-.*",))}
    events = config_diff(state, new, "p")
    assert events == [
        FlowDisabled(AB),
        TopicsAllowed(AB, ("audit",)),
        GroupsDenied(AB, ("test-.*",)),
        ConfigApplied("p", new),
    ]


def test_a_flow_dropped_from_the_file_is_disabled_and_loses_the_files_patterns() -> None:
    old = {AB: flow(groups_exclude=("test-.*",))}
    state = then(ControlState(), config_diff(ControlState(), old, "p"))
    state = then(state, [TopicsAllowed(AB, ("audit",))])
    events = config_diff(state, {}, "p")
    assert events == [
        FlowDisabled(AB),
        TopicsAllowRemoved(AB, ("orders",)),
        GroupsAllowRemoved(AB, (".*",)),
        GroupsDenyRemoved(AB, ("test-.*",)),
        ConfigApplied("p", {}),
    ]
    assert then(state, events).flow(AB).topics == ("audit",)


def test_enabling_comes_after_the_lists_and_skips_a_flow_already_enabled() -> None:
    old = {AB: flow(enabled=False)}
    state = then(ControlState(), config_diff(ControlState(), old, "p"))
    events = config_diff(state, {AB: flow(topics=("orders", "b"))}, "p")
    assert [type(e) for e in events] == [TopicsAllowed, FlowEnabled, ConfigApplied]
    already = then(state, [FlowEnabled(AB)])
    events = config_diff(already, {AB: flow()}, "p")
    assert [type(e) for e in events] == [ConfigApplied]


def test_a_new_path_alone_is_recorded() -> None:
    baseline = {AB: flow()}
    state = then(ControlState(), config_diff(ControlState(), baseline, "old.properties"))
    assert config_diff(state, baseline, "new.properties") == [
        ConfigApplied("new.properties", baseline)
    ]


def test_config_drift_only_when_the_log_has_another_baseline() -> None:
    from srm_common.control.commands import baseline_digest, config_drift

    baseline = {AB: flow()}
    assert config_drift(ControlState(), baseline, "a.yaml") is None, "a fresh log takes it"
    state = then(ControlState(), config_diff(ControlState(), baseline, "a.yaml"))
    assert config_drift(state, baseline, "b.yaml") is None, "same contents, other path"
    other = {AB: flow(topics=("orders", "b"))}
    drift = config_drift(state, other, "b.yaml")
    assert drift is not None and baseline_digest(other) in drift
    assert baseline_digest(baseline) in drift and baseline_digest(other) != baseline_digest(
        baseline
    )
