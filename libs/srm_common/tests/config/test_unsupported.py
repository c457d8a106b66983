"""Settings SRM accepts for MM2 compatibility but does not act on: what is reported, and
that every documented key is either acted on or reported."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from srm_common.config import SrmConfig, load_config, parse_properties_text
from srm_common.config.keys import CONNECTOR_KEYS
from srm_common.config.unsupported import FAMILIES, PREFIX, unsupported_settings

REPO = Path(__file__).resolve().parents[4]
DOCS = REPO / "docs" / "configuration.md"

HEADER = """\
clusters = primary, backup
primary.bootstrap.servers = 127.0.0.1:9092
backup.bootstrap.servers = 127.0.0.1:9192
primary->backup.enabled = true
"""


def load(body: str) -> SrmConfig:
    return parse_properties_text(HEADER + body, source="mm2.properties")


def lines(body: str) -> tuple[str, ...]:
    return unsupported_settings(load(body))


def test_a_file_that_sets_nothing_unsupported_reports_nothing() -> None:
    assert lines("") == ()


def test_acl_sync_takes_effect_so_it_is_never_reported() -> None:
    body = "sync.topic.acls.enabled = true\nsync.topic.acls.interval.seconds = 30\n"
    assert lines(body) == ()


@pytest.mark.parametrize(
    "path", [REPO / "deploy" / "local" / "srm.yaml", REPO / "docs" / "examples" / "mm2.properties"]
)
def test_the_example_configurations_set_nothing_unsupported(path: Path) -> None:
    assert unsupported_settings(load_config(path)) == ()


def test_a_switch_turned_on_is_one_line_naming_the_flows_where_it_is_on() -> None:
    body = (
        "add.source.alias.to.metrics = true\nbackup->primary.add.source.alias.to.metrics = false\n"
    )
    assert lines(body) == (
        f"{PREFIX}: add.source.alias.to.metrics (set on primary->backup): every raw metrics"
        " sample names its flow, source and target (docs/metrics.md)",
    )


def test_a_key_set_at_top_level_is_reported_once_for_every_flow() -> None:
    config = parse_properties_text(
        "clusters = a, b, c\na.bootstrap.servers = a:1\nb.bootstrap.servers = b:1\n"
        "c.bootstrap.servers = c:1\nconsumer.poll.timeout.ms = 500\n"
        "a->b.consumer.poll.timeout.ms = 300\n"
    )
    [line] = unsupported_settings(config)
    assert line.startswith(f"{PREFIX}: consumer.poll.timeout.ms (set on every flow):")


@pytest.mark.parametrize(
    "body",
    [
        "emit.offset-syncs.enabled = true\n",
        "use.defaults.from = TARGET\n",
        "add.source.alias.to.metrics = false\n",
        "topic.filter.class = org.apache.kafka.connect.mirror.DefaultTopicFilter\n",
        "forwarding.admin.class = org.apache.kafka.clients.admin.ForwardingAdmin\n",
        "offset.storage.partitions = 5\nbackup.offset.storage.replication.factor = 1\n",
        "srm.control.cluster = backup\nsrm.driver.lease.ms = 4000\n",
    ],
)
def test_values_that_ask_for_what_srm_does_anyway_are_quiet(body: str) -> None:
    assert lines(body) == ()


@pytest.mark.parametrize(
    ("body", "reported"),
    [
        ("offset.lag.max = 100\n", "offset.lag.max"),
        ("emit.offset-syncs.enabled = FALSE\n", "emit.offset-syncs.enabled=false"),
        ("use.defaults.from = source\n", "use.defaults.from=source"),
        ("consumer.poll.timeout.ms = 500\n", "consumer.poll.timeout.ms"),
        ("admin.timeout.ms = 60000\n", "admin.timeout.ms"),
        ("group.filter.class = com.example.Groups\n", "group.filter.class=com.example.Groups"),
        (
            "forwarding.admin.class = com.example.Admin\n",
            "forwarding.admin.class=com.example.Admin",
        ),
        ("primary->backup.exactly.once.support = required\n", "exactly.once.support"),
        ("add.source.alias.to.metrics = true\n", "add.source.alias.to.metrics"),
    ],
)
def test_a_setting_srm_cannot_honour_is_one_line(body: str, reported: str) -> None:
    [line] = lines(body)
    assert line.startswith(f"{PREFIX}: {reported} (set on ")


def test_filter_classes_share_one_line_naming_only_the_classes_srm_would_need_to_load() -> None:
    body = (
        "topic.filter.class = com.example.Topics\n"
        "config.property.filter.class = com.example.Configs\n"
        "backup->primary.topic.filter.class = org.apache.kafka.connect.mirror.DefaultTopicFilter\n"
    )
    [line] = lines(body)
    assert line.startswith(
        f"{PREFIX}: topic.filter.class=com.example.Topics,"
        " config.property.filter.class=com.example.Configs (set on every flow)"
    )


def test_keys_srm_passes_through_without_reading_say_where_they_are() -> None:
    body = (
        "config.action.reload = none\n"
        "primary->backup.key.converter = x.Converter\n"
        "primary.offset.flush.timeout.ms = 5000\n"
        "offset.storage.partitions = 5\n"
    )
    [line] = lines(body)
    assert line.startswith(
        f"{PREFIX}: config.action.reload (set at top level), key.converter (set on"
        " primary->backup), offset.flush.timeout.ms (set on cluster primary): SRM runs no"
        " Connect worker"
    )


def test_control_keys_count_only_at_top_level_where_they_are_read() -> None:
    [line] = lines("primary->backup.srm.control.cluster = backup\nsrm.driver.lease.ms = 4000\n")
    assert line.startswith(f"{PREFIX}: srm.control.cluster (set on primary->backup): ")


def test_each_family_is_one_line_whatever_the_number_of_flows_and_keys() -> None:
    body = (
        "add.source.alias.to.metrics = true\n"
        "offset.lag.max = 10\nbackup->primary.offset.lag.max = 20\n"
        "config.action.reload = none\n"
    )
    reported = lines(body)
    assert len(reported) == 3
    assert all(line.startswith(PREFIX) for line in reported)


def test_config_providers_are_not_reported_when_set_at_top_level() -> None:
    body = (
        "config.providers = file\n"
        "config.providers.file.class ="
        " org.apache.kafka.common.config.provider.FileConfigProvider\n"
    )
    assert not lines(body), "config providers are read when the file loads"


def _documented() -> dict[str, str]:
    """Key -> its 'in SRM' cell, from every key table of the configuration docs."""
    cells = r"^\| `([^`]+)` \|.*\| (takes effect|accepted, not supported) \|$"
    return dict(re.findall(cells, DOCS.read_text(), re.MULTILINE))


def test_the_docs_say_of_every_catalogue_key_whether_it_takes_effect_or_is_reported() -> None:
    documented = _documented()
    assert set(CONNECTOR_KEYS) <= set(documented)
    reported = [key for family in FAMILIES for key in family.keys]
    assert len(reported) == len(set(reported))
    unsupported = {key for key, cell in documented.items() if cell == "accepted, not supported"}
    assert unsupported == set(reported)
