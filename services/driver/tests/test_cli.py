"""srm-driver's answers to bad input: one line naming the problem, exit 2, nothing started."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_common.config import load_config
from srm_common.errors import SrmError
from srm_driver.cli import main
from srm_driver.settings import _int_setting

CONFIG = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:9"}
  backup: {bootstrap.servers: "127.0.0.1:8"}
flows:
  primary->backup: {enabled: true%s}
"""


def _config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG % extra)
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--spark-master", "nonsense"], "--spark-master 'nonsense' is not a Spark master URL"),
        (["--set", "tasks.max"], "--set 'tasks.max': expected KEY=VALUE"),
        (["--spark-conf", "x"], "--spark-conf 'x': expected KEY=VALUE"),
        (["--set", "primary->nowhere.enabled=true"], "unknown cluster alias 'nowhere'"),
        (["--spark-master", "local[2,4]"], "lets Spark retry a failed task 4 times"),
        (["--spark-master", "local[*, 3]"], "lets Spark retry a failed task 3 times"),
        (["--spark-conf", "spark.task.maxFailures=4"], "spark.task.maxFailures=4 lets Spark run"),
        (["--spark-conf", "spark.speculation=true"], "spark.speculation=true would run a second"),
        (
            ["--spark-conf", "spark.dynamicAllocation.enabled=true"],
            "spark.dynamicAllocation.enabled would size the copy job's executors",
        ),
    ],
)
def test_bad_flags_are_one_message_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["--config", str(_config(tmp_path)), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_bad_config_value_is_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", str(_config(tmp_path, ", srm.batch.max.records: 0"))]) == 2
    assert (
        "srm.batch.max.records': expected a whole number >= 1, got '0'" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("set", "srm.copier = 'jvm': the JVM copy slot was removed"),
        ("env", "$SRM_COPIER = 'JVM': the JVM copy slot was removed"),
        ("other", "srm.copier = 'rust': the only copy slot is python"),
    ],
)
def test_a_config_asking_for_the_removed_jvm_slot_is_one_message(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    message: str,
) -> None:
    monkeypatch.delenv("SRM_COPIER", raising=False)
    args = ["--config", str(_config(tmp_path))]
    if how == "env":
        monkeypatch.setenv("SRM_COPIER", "JVM")
    else:
        args += ["--set", f"srm.copier={'jvm' if how == 'set' else 'rust'}"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "remove" in err


def test_srm_copier_python_is_accepted_and_no_jars_are_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from srm_driver.settings import driver_settings

    monkeypatch.delenv("SRM_DRIVER_JARS", raising=False)
    monkeypatch.setenv("SRM_COPIER", "python")
    config = load_config(_config(tmp_path))
    settings = driver_settings(
        config,
        spark_master="local[1]",
        spark_conf={},
        host="127.0.0.1",
        port=0,
        driver_id="d1",
        standalone=True,
    )
    assert settings.driver_id == "d1"


def test_missing_file_is_one_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


@pytest.mark.parametrize("raw", ["abc", "0", "-2"])
def test_offset_storage_settings_are_checked(tmp_path: Path, raw: str) -> None:
    config = load_config(_config(tmp_path, f", offset.storage.replication.factor: '{raw}'"))
    flow = config.flow("primary", "backup")
    with pytest.raises(SrmError, match="offset.storage.replication.factor = .* expected a whole"):
        _int_setting(config, flow, "offset.storage.replication.factor", -1, minimum=1)


def test_offset_storage_settings_default_and_broker_default(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, ", offset.storage.replication.factor: '-1'"))
    flow = config.flow("primary", "backup")
    assert _int_setting(config, flow, "offset.storage.replication.factor", 3, minimum=1) == -1
    assert _int_setting(config, flow, "offset.storage.partitions", 25, minimum=1) == 25


def test_settings_srm_does_not_act_on_are_logged_once_at_start_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    extra = ", add.source.alias.to.metrics: true, topics.blacklist: [x]"
    assert main(["--config", str(_config(tmp_path, extra)), "--spark-master", "nonsense"]) == 2
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert sum("not supported: add.source.alias.to.metrics (set on" in m for m in warned) == 1
    assert any("'flows.primary->backup.topics.blacklist' is deprecated" in m for m in warned)
