"""``srm-control acls --print``: what it prints, and one line for each bad flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_control.cli import main

CONFIG = """\
clusters:
  primary:
    bootstrap.servers: "127.0.0.1:9"
    security.protocol: SASL_SSL
    sasl.mechanism: SCRAM-SHA-512
    sasl.jaas.config: >-
      org.apache.kafka.common.security.scram.ScramLoginModule required
      username="srm" password="not-printed";
  backup: {bootstrap.servers: "127.0.0.1:8"}
flows:
  primary->backup: {enabled: true, topics: [orders]}
"""


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    return str(path)


def test_prints_kafka_acls_commands_and_never_a_password(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", config, "acls", "--print"]) == 0
    out = capsys.readouterr().out
    assert (
        "kafka-acls.sh --bootstrap-server 127.0.0.1:9 --command-config primary-admin.properties"
        " --add --allow-principal User:srm --operation Describe --operation DescribeConfigs"
        " --operation Read --topic orders"
    ) in out
    assert "--allow-principal User:ANONYMOUS" in out, "backup is PLAINTEXT"
    assert "not-printed" not in out


def test_a_table_for_one_cluster_and_service(
    config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--config", config, "acls", "--print", "--format", "table"]
    assert main([*argv, "--cluster", "backup", "--service", "api-gateway"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["CLUSTER", "SERVICE", "PRINCIPAL", "RESOURCE", "OPERATIONS"]
    # backup's log (each target holds the log of the flows into it) and its metrics.
    assert [line.split() for line in lines[1:]] == [
        [
            "backup",
            "api-gateway",
            "User:ANONYMOUS",
            "GROUP:srm-control.reader.",
            "(prefixed)",
            "DESCRIBE",
        ],
        [
            "backup",
            "api-gateway",
            "User:ANONYMOUS",
            "TOPIC:srm-control.log.internal",
            "DESCRIBE,READ",
        ],
        [
            "backup",
            "api-gateway",
            "User:ANONYMOUS",
            "TOPIC:srm-metrics-aggregated.internal",
            "DESCRIBE,READ",
        ],
    ]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--principal", "primary"], "write ALIAS=User:NAME"),
        (["--principal", "nowhere=User:x"], "unknown cluster alias 'nowhere'"),
        (["--principal", "spark@primary=User:x"], "unknown service 'spark'"),
        (["--cluster", "nowhere"], "--cluster nowhere: unknown cluster alias"),
    ],
)
def test_a_bad_flag_is_one_line(
    config: str, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--config", config, "acls", "--print", *flags]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]


def test_ssl_principals_are_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG.replace("security.protocol: SASL_SSL", "security.protocol: SSL"))
    assert main(["--config", str(path), "acls", "--print", "--cluster", "primary"]) == 0
    out = capsys.readouterr().out
    assert "User:'<principal of primary>'" in out or "'User:<principal of primary>'" in out
    assert "pass --principal ALIAS=User:..." in out
