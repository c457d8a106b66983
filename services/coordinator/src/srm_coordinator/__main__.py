"""``python -m srm_coordinator``: the same as the ``srm-coordinator`` command."""

import sys

from srm_coordinator.cli import main

sys.exit(main())
