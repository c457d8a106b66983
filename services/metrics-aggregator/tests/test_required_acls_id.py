"""``srm-control acls --print`` grants the aggregator's topics and group by its id: the
default there must be the aggregator's own."""

from __future__ import annotations

from srm_common.required_acls_grant import DEFAULT_AGGREGATOR_ID
from srm_metrics_aggregator.settings import DEFAULT_APP_ID


def test_the_printed_acls_name_the_aggregators_default_id() -> None:
    assert DEFAULT_AGGREGATOR_ID == DEFAULT_APP_ID
