"""The coordinator's memory of the event log it followed: a small file, written atomically
only when the log changes, another topic's memory ignored, garbage refused in one line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from srm_common.adapters.event_log_reader import EventLogReader
from srm_common.config import load_config
from srm_common.config.control import control_plane
from srm_common.control.events import Envelope, LogStarted
from srm_common.errors import SrmError
from srm_coordinator.log_memory import LogMemory
from srm_coordinator.service import Coordinator
from srm_coordinator.testing import Fakes

TOPIC = "srm-control.log.internal"
TOPICS = {"backup": TOPIC, "primary": TOPIC}
CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:9"}
flows:
  primary->backup: {enabled: true, topics: [orders]}
"""


def test_a_log_is_remembered_across_a_restart_when_its_id_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "c1.json"
    memory = LogMemory(path, TOPICS)
    assert memory.known("backup") is None and not path.exists()
    memory.remember("backup", "L1")
    assert LogMemory(path, TOPICS).known("backup") == "L1"
    assert LogMemory(path, TOPICS).known("primary") is None, "each log has its own memory"
    assert json.loads(path.read_text()) == {
        "v": 2,
        "logs": {"backup": {"topic": TOPIC, "log_id": "L1"}},
    }
    memory.remember("primary", "P1")
    memory.remember("backup", "L2")  # a restored log taken up
    assert LogMemory(path, TOPICS).known("backup") == "L2"
    assert LogMemory(path, TOPICS).known("primary") == "P1"
    assert [p.name for p in tmp_path.iterdir()] == ["c1.json"], "no temporary file is left"


def test_a_log_without_an_id_is_remembered_as_having_existed(tmp_path: Path) -> None:
    path = tmp_path / "c1.json"
    LogMemory(path, TOPICS).remember("backup", None)
    assert LogMemory(path, TOPICS).known("backup") == ""


def test_the_file_is_not_rewritten_when_the_log_is_the_same(tmp_path: Path) -> None:
    path = tmp_path / "c1.json"
    memory = LogMemory(path, TOPICS)
    memory.remember("backup", "L1")
    path.write_text(path.read_text().replace("L1", "XX"))  # would show a rewrite
    memory.remember("backup", "L1")
    assert "XX" in path.read_text()


def test_another_topics_memory_is_no_memory_of_this_log(tmp_path: Path) -> None:
    path = tmp_path / "c1.json"
    LogMemory(path, {"backup": "other-prefix.log.internal"}).remember("backup", "L1")
    assert LogMemory(path, TOPICS).known("backup") is None


def test_the_memory_of_an_earlier_releases_single_log_is_no_memory_of_a_target(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c1.json"
    path.write_text('{"v": 1, "topic": "srm-control.events.internal", "log_id": "L0"}')
    memory = LogMemory(path, TOPICS)
    assert memory.known("backup") is None
    memory.remember("backup", "L1")
    assert LogMemory(path, TOPICS).known("backup") == "L1"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{half", "not JSON"),
        ('{"v": 9, "logs": {}}', "not a version 2 log memory"),
        ('{"v": 2, "logs": []}', "no logs object"),
        (
            '{"v": 2, "logs": {"b": {"topic": "t", "log_id": 5}}}',
            "no log_id and topic strings for b",
        ),
        ("[]", "not a version 2 log memory"),
    ],
)
def test_a_garbled_memory_is_one_line_saying_how_to_go_on(
    tmp_path: Path, content: str, why: str
) -> None:
    path = tmp_path / "c1.json"
    path.write_text(content)
    with pytest.raises(SrmError) as caught:
        LogMemory(path, TOPICS)
    message = str(caught.value)
    assert message.startswith(f"cannot read the log memory {path} ({why})")
    assert "delete it to start without that memory" in message and "\n" not in message


def test_a_state_file_in_a_missing_directory_is_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(SrmError, match="is no writable directory; give a --state-file in one"):
        LogMemory(tmp_path / "missing" / "c1.json", TOPICS)


def test_a_coordinator_passes_its_memory_to_the_reader_and_remembers_what_it_folds(
    tmp_path: Path,
) -> None:
    config_path = tmp_path / "srm.yaml"
    config_path.write_text(CONFIG)
    config = load_config(config_path)
    settings = control_plane(config).log("backup")
    topics = {"backup": settings.events_topic}
    path = tmp_path / "c1.json"
    LogMemory(path, topics).remember("backup", "L1")
    asked: list[str | None] = []

    fakes = Fakes()
    fakes.log.put([Envelope(LogStarted("L1", None, ""), 1, "c0", None, 0)])

    def reader(_client_id: str, known_log: str | None) -> EventLogReader:
        asked.append(known_log)
        return fakes.log.reader(known_log)

    adapters = replace(fakes.adapters(), reader=reader)
    memory = LogMemory(path, topics)
    coordinator = Coordinator(config, settings, adapters, coordinator_id="c1", memory=memory)
    coordinator.replay("http://c1:1")
    assert asked == ["L1"], "the reader must be told which log to expect"

    assert coordinator.follower is not None
    coordinator.follower.fold([Envelope(LogStarted("L2", "L1", "test"), 1, "alice", None, 2)])
    assert LogMemory(path, topics).known("backup") == "L2"
