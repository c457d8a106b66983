"""``python -m srm_metrics_aggregator``: the same as the ``srm-metrics-aggregator`` command."""

import sys

from srm_metrics_aggregator.cli import main

sys.exit(main())
