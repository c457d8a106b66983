"""Bench clusters of several brokers (make bench-scale --brokers N): what each node is told."""

import pytest
from srm_bench.nodes import NodeGroup
from srm_bench.options import parse_options
from srm_bench.stack import BenchStack


def test_brokers_are_a_scale_option() -> None:
    with pytest.raises(SystemExit):
        parse_options(["--brokers", "2"])  # not the scale benchmark
    assert parse_options(["--scale", "--brokers", "2", "--scale-points", "30000"]).brokers == 2
    assert parse_options(["--scale"]).brokers == 1


def test_a_cluster_of_two_is_a_controller_node_and_a_broker_of_its_quorum(tmp_path) -> None:
    stack = BenchStack(tmp_path, "2g", brokers=2)
    assert isinstance(stack.source, NodeGroup) and isinstance(stack.target, NodeGroup)
    first, second = stack.source.nodes
    assert stack.source.bootstrap_servers == f"{first.bootstrap_servers},{second.bootstrap_servers}"
    assert first._mode_properties()["process.roles"] == "broker,controller"
    told = second._mode_properties()
    assert told["process.roles"] == "broker" and told["node.id"] == "2"
    assert told["controller.quorum.voters"] == f"1@{first.spec.host}:{first.spec.quorum_port}"
    assert told["listeners"] == f"PLAINTEXT://{second.spec.host}:{second.spec.port}"
    assert first.folder.parent == second.folder.parent == stack.source.folder
    assert not isinstance(BenchStack(tmp_path / "one", None).target, NodeGroup)


def test_a_killed_runs_brokers_are_found_at_every_depth(tmp_path, monkeypatch) -> None:
    """bench-scale's points and several-broker clusters keep their brokers deeper than
    make bench's: a killed run's are all stopped by the next run."""
    from srm_bench import stack as stack_module

    run = tmp_path / "bench-1"
    for where in ("kafka/primary", "p30000/kafka/backup/node2", "kafka/backup/node1"):
        (run / where).mkdir(parents=True)
        (run / where / "kafka.pid").write_text("1\n")
    (run / "bench.pid").write_text("999999999\n")  # its bench process is gone
    asked: list[str] = []

    def stop(self, *, timeout: float = 30.0) -> bool:
        asked.append(str(self.folder.relative_to(run)))
        return True

    monkeypatch.setattr(stack_module.LocalKafkaCluster, "stop", stop)
    stopped = stack_module.stop_orphaned_stacks(tmp_path)
    assert sorted(asked) == ["kafka/backup/node1", "kafka/primary", "p30000/kafka/backup/node2"]
    assert len(stopped) == 3
