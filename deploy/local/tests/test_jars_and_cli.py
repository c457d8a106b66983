"""Unit tests of srm-local's pure parts: artifact names, CLI arguments, help."""

from __future__ import annotations

import pytest
from srm_local import cli, stack
from srm_local.jars import _artifact_name, kafka_version


@pytest.mark.parametrize(
    ("file_name", "artifact"),
    [
        ("kafka-clients-3.9.0.jar", "kafka-clients"),
        ("spark-sql-kafka-0-10_2.13-4.0.0.jar", "spark-sql-kafka-0-10_2.13"),
        ("commons-pool2-2.12.0.jar", "commons-pool2"),
        ("scala-library-2.13.15.jar", "scala-library"),
        ("jsr305-3.0.0.jar", "jsr305"),
        ("zstd-jni-1.5.6-9.jar", "zstd-jni"),
    ],
)
def test_artifact_name_drops_the_version_when_given_a_maven_jar_name(file_name, artifact):
    assert _artifact_name(file_name) == artifact, f"{file_name} should be artifact {artifact}"


def test_kafka_version_is_a_4x_release_when_read_from_the_pom():
    assert kafka_version().startswith("4."), "the stack promises Apache Kafka 4.x"


def test_cluster_argument_is_refused_with_an_example_when_it_is_not_alias_equals_port(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["kafka", "up", "--cluster", "dr:9292"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "'dr:9292' is not ALIAS=PORT (for example dr=9292" in err, err
    assert "Traceback" not in err


def test_default_ports_move_when_environment_overrides_them(monkeypatch):
    monkeypatch.setenv("SRM_PRIMARY_PORT", "19092")
    specs = {spec.alias: spec for spec in stack.default_cluster_specs()}
    assert specs["primary"].bootstrap_servers == "127.0.0.1:19092"
    assert specs["primary"].quorum_port == 19093, "the controller takes the next port"
    assert specs["backup"].bootstrap_servers == "127.0.0.1:9192"


def test_help_shows_examples_when_asked(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "srm-local up" in out and "srm-local down" in out


def test_bad_port_variable_is_one_clear_message_when_the_environment_sets_it(monkeypatch, capsys):
    monkeypatch.setenv("SRM_PRIMARY_PORT", "abc")
    assert cli.main(["kafka", "up"]) == 1
    err = capsys.readouterr().err
    assert "SRM_PRIMARY_PORT='abc' is not a port; use a number from 1024 to 65534" in err, err
    assert "Traceback" not in err
