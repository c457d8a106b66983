"""Entry point: ``PYTHONPATH=bench .venv/bin/python -m srm_bench [options]``."""

from srm_bench.session import main

raise SystemExit(main())
