"""``python -m srm_control``: the same as the ``srm-control`` command."""

import sys

from srm_control.cli import main

sys.exit(main())
