"""The benchmark is not an installed package: its tests import it from ``bench/``, and
the helpers they share from here."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# bench_samples.py: the sample report the table and JSON tests share.
sys.path.insert(0, str(Path(__file__).resolve().parent))
