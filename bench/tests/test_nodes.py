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
