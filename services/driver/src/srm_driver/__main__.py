"""``python -m srm_driver``: the same as the ``srm-driver`` command."""

import sys

from srm_driver.cli import main

sys.exit(main())
