"""The coordinator's loop steps with fake Kafka adapters: a failed append steps down, a
command not reached in time is withdrawn."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest
from srm_common.adapters.kafka_log import ControlLogError, Fenced
from srm_common.config import load_config
from srm_common.config.control import control_settings
from srm_common.config.model import FlowConfig
from srm_common.control.commands import ChangePatterns
from srm_common.control.events import Envelope
from srm_coordinator.leader import Leader
from srm_coordinator.membership import Membership
from srm_coordinator.service import CommandResult, CommandTimedOut, Coordinator, NotLeader

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true, topics: [orders]}
"""


class NoDiscovery:
    def discover(self, _flow: FlowConfig, _after: int) -> tuple[list[tuple[str, int]], list[str]]:
        return [], []

    def close(self) -> None:
        pass


class FakeWriter:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.closed = False
        self.next_offset = 0

    def append(self, envelopes: list[Envelope]) -> list[Envelope]:
        if self.error is not None:
            raise self.error
        written = []
        for e in envelopes:
            written.append(Envelope(e.event, e.at_ms, e.by, e.command_id, self.next_offset))
            self.next_offset += 1
        return written

    def close(self) -> None:
        self.closed = True


class FakeBeats:
    closed = False

    def poll(self, _timeout: float = 0) -> list[object]:
        return []

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def coordinator(tmp_path: Path) -> Coordinator:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    config = load_config(path)
    service = Coordinator(config, control_settings(config), coordinator_id="c1")
    membership = Membership(10_000)
    service._membership = membership
    service._leader = Leader(
        config,
        coordinator="c1",
        url="http://c1:1",
        membership=membership,
        discovery=NoDiscovery(),  # type: ignore[arg-type]
        control=control_settings(config),
    )
    service._beats = FakeBeats()  # type: ignore[assignment]
    service._writer = FakeWriter()  # type: ignore[assignment]
    service.leading = True
    assert service._commit(service._leader.take_over(service.state))
    return service


def queue(service: Coordinator) -> Future[CommandResult]:
    future: Future[CommandResult] = Future()
    command = ChangePatterns("primary->backup", "topics", "add", ("payments",))
    service._commands.put((command, "op", future))
    return future


def test_a_round_appends_and_folds_its_events(coordinator: Coordinator) -> None:
    future = queue(coordinator)
    coordinator._round()
    assert future.result(0).changes == ("topics allowlist of primary->backup: + payments",)
    assert coordinator.state.flow("primary->backup").topics == ("orders", "payments")
    assert coordinator.state.tasks["primary->backup"].generation == 1
    assert coordinator.leading


@pytest.mark.parametrize(
    "error",
    [Fenced("another coordinator leads"), ControlLogError("commit timed out")],
    ids=["fenced", "append failed"],
)
def test_a_failed_command_append_steps_down_without_crashing_the_round(
    coordinator: Coordinator, error: Exception
) -> None:
    writer = FakeWriter(error)
    coordinator._writer = writer  # type: ignore[assignment]
    before = coordinator.state
    future = queue(coordinator)
    coordinator._round()
    assert not coordinator.leading
    assert coordinator._leader is None and writer.closed
    with pytest.raises(NotLeader):
        future.result(0)
    assert coordinator.state is before


def test_a_failed_round_append_steps_down_so_the_next_loop_takes_over_again(
    coordinator: Coordinator,
) -> None:
    coordinator._writer = FakeWriter(ControlLogError("commit timed out"))  # type: ignore[assignment]
    coordinator._round()
    assert not coordinator.leading and coordinator._writer is None


def test_members_is_empty_when_not_leading(coordinator: Coordinator) -> None:
    coordinator.leading = False
    assert coordinator.members() == {}


def test_a_command_not_reached_in_time_is_withdrawn_and_never_applied(
    coordinator: Coordinator,
) -> None:
    command = ChangePatterns("primary->backup", "topics", "add", ("late",))
    with pytest.raises(CommandTimedOut, match="withdrawn and not applied"):
        coordinator.submit(command, "op", timeout=0.05)  # no round runs meanwhile
    coordinator._round()
    assert coordinator.state.flow("primary->backup").topics == ("orders",)
    assert coordinator._commands.empty()


def test_a_command_the_loop_has_started_is_waited_for(coordinator: Coordinator) -> None:
    """Past the timeout but already being written: not withdrawn, its outcome is told."""
    entered, go = threading.Event(), threading.Event()

    class SlowWriter(FakeWriter):
        def append(self, envelopes: list[Envelope]) -> list[Envelope]:
            entered.set()
            go.wait(30)
            return super().append(envelopes)

    coordinator._writer = SlowWriter()  # type: ignore[assignment]
    command = ChangePatterns("primary->backup", "topics", "add", ("payments",))
    outcome: list[object] = []
    started = time.monotonic()
    submitter = threading.Thread(
        target=lambda: outcome.append(coordinator.submit(command, "op", timeout=4.0))
    )
    submitter.start()
    while coordinator._commands.empty() and submitter.is_alive():
        time.sleep(0.01)
    rounds = threading.Thread(target=coordinator._round)
    rounds.start()
    assert entered.wait(10)
    time.sleep(max(0.0, started + 4.5 - time.monotonic()))  # the first wait is over
    go.set()
    submitter.join(10)
    rounds.join(10)
    assert outcome, "submit raised (see the thread's exception above)"
    [result] = outcome
    assert isinstance(result, CommandResult)
    assert result.changes == ("topics allowlist of primary->backup: + payments",)
