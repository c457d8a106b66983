"""Settings for every test suite of the workspace.

Hypothesis's default 200 ms deadline per example is a timing assertion: on a loaded
2-core machine (a benchmark or Spark running beside) it fails tests whose logic is
right. Speed is measured by `make bench`, never asserted by tests.
"""

from hypothesis import settings

settings.register_profile("srm", deadline=None)
settings.load_profile("srm")
