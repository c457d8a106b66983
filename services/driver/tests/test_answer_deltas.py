"""Answers of copy protocol 2 look only at what changed (copying/answers.py, parts.py):
whatever happens to a slot's partitions between two answers, the deltas folded by the
slot give exactly the whole state the driver would answer."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest
from srm_common.config import load_config
from srm_driver.copier.plan import Desired
from srm_driver.copying.answers import Answers
from srm_driver.copying.clients import unit_settings
from srm_driver.copying.ledger import Ledger
from srm_driver.copying.protocol import PartitionPlan, SlotReport
from srm_driver.copying.state import PartitionState

FLOW = "primary->backup"
CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:8"}
flows:
  primary->backup: {enabled: true}
"""
KEYS = [("t", n) for n in range(6)]
SLOT = 0

# What happens to a partition between answers, through the same fields and calls the copy
# service uses. (Seeded random sequences: the driver's tests install only its own
# dependencies, so no property-testing library.)
WHATS = ["add", "remove", "move", "run", "reserve", "retry", "halt", "release"]


def _rounds(seed: int) -> list[tuple[list[tuple[str, int, int]], bool]]:
    rng = random.Random(seed)
    return [
        (
            [
                (rng.choice(WHATS), rng.randrange(len(KEYS)), rng.randrange(2))
                for _ in range(rng.randrange(7))
            ],
            rng.random() < 0.25,  # the answer is lost
        )
        for _ in range(rng.randrange(1, 12))
    ]


def _answers(tmp: Path) -> tuple[Ledger, Answers]:
    (tmp / "srm.yaml").write_text(CONFIG)
    flow = load_config(tmp / "srm.yaml").flow("primary", "backup")
    ledger = Ledger({FLOW: flow}, lambda event: None)
    adapters = {FLOW: SimpleNamespace(settings=unit_settings(flow, write_timeout_ms=10_000))}
    return ledger, Answers(ledger, adapters, lambda: False)  # type: ignore[arg-type]


def _apply(ledger: Ledger, what: str, key: tuple[str, int], arg: int) -> None:
    parts = ledger.parts
    state = parts.get(FLOW, key)
    if what == "add":
        parts.add(PartitionState(FLOW, key, "primary.t", arg))
        return
    if state is None:
        return
    if what == "remove":
        parts.remove(state)
    elif what == "move":
        parts.move(state, arg)
    elif what == "run":
        plan = ledger.new_plan_id()
        state.running(PartitionPlan(key[0], key[1], plan, "primary.t", 0, 0, 100), None)  # type: ignore[arg-type]
    elif what == "reserve" and state.plan is not None:
        old = state.plan
        state.plan = PartitionPlan(
            old.topic, old.partition, old.plan, old.remote, old.start, old.down, old.reserve + 10
        )
    elif what == "retry":
        state.retry_later(1.0, None)
    elif what == "halt":
        from srm_common.domain.progress import Halt

        state.halted(Halt("poison", "x"))
    elif what == "release":
        state.status = "releasing"


@pytest.mark.parametrize("seed", range(300))
def test_deltas_folded_by_the_slot_equal_the_whole_state(tmp_path: Path, seed: int) -> None:
    """Property (300 seeded sequences of changes, lost answers among them)."""
    rounds = _rounds(seed)
    ledger, answers = _answers(tmp_path)
    slot = Desired()  # the copy slot's side, as it folds answers
    for seq, (steps, lost) in enumerate(rounds):
        for what, index, arg in steps:
            _apply(ledger, what, KEYS[index], arg)
        report = SlotReport(
            "job", SLOT, seq, False, (), answered=slot.version, protocol=2, full=True
        )
        answer = answers.answer(report, {FLOW: 1000}, set())
        if lost:
            continue  # the slot never got it: it still holds the version before
        base = answer.get("base")
        assert slot.apply(answer["version"], base, answer["units"])  # type: ignore[arg-type]
        held = (
            {key: wanted.plan for key, wanted in slot.plan(FLOW).partitions.items()}
            if FLOW in slot.flows
            else {}
        )
        whole = {
            state.key: state.plan.plan
            for state in ledger.parts.of_slot(SLOT, FLOW)
            if state.status == "running" and state.plan is not None
        }
        assert held == whole
        reserves = {
            key: wanted.reserve
            for key, wanted in (slot.plan(FLOW).partitions.items() if FLOW in slot.flows else ())
        }
        assert reserves == {
            state.key: state.plan.reserve
            for state in ledger.parts.of_slot(SLOT, FLOW)
            if state.status == "running" and state.plan is not None
        }
        for state in ledger.parts.of_slot(SLOT, FLOW):
            if state.status != "running" and not state.stopped:
                assert state.omitted_since is not None, "a plan left out is marked so"


def test_an_answer_to_an_idle_slot_looks_at_no_partition(tmp_path: Path) -> None:
    ledger, answers = _answers(tmp_path)
    for n in range(1000):
        key = ("t", n)
        ledger.parts.add(PartitionState(FLOW, key, "primary.t", SLOT))
        ledger.parts.get(FLOW, key).running(  # type: ignore[union-attr]
            PartitionPlan("t", n, n + 1, "primary.t", 0, 0, 100),
            None,  # type: ignore[arg-type]
        )
    first = answers.answer(SlotReport("job", SLOT, 0, False, (), protocol=2), {FLOW: 1000}, set())
    assert len(first["units"][FLOW]["partitions"]) == 1000  # type: ignore[index]
    looked: list[object] = []
    ledger.parts.get = lambda *a: looked.append(a)  # type: ignore[method-assign]
    ledger.parts.of_slot = lambda *a: looked.append(a) or []  # type: ignore[method-assign]
    idle = answers.answer(
        SlotReport("job", SLOT, 1, False, (), answered=0, protocol=2), {FLOW: 1000}, set()
    )
    assert idle["base"] == 0 and idle["units"][FLOW]["partitions"] == []  # type: ignore[index]
    assert looked == [], "nothing changed: no partition looked at"
