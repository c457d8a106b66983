"""``python -m srm_api_gateway``: the same as the ``srm-api-gateway`` command."""

import sys

from srm_api_gateway.cli import main

sys.exit(main())
