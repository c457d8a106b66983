"""The gateway's test configuration (srm_api_gateway.testing holds it and a sample log)."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_api_gateway.testing import CONFIG
from srm_common.config import load_config
from srm_common.config.model import SrmConfig


@pytest.fixture
def config(tmp_path: Path) -> SrmConfig:
    path = tmp_path / "srm.yaml"
    path.write_text(CONFIG)
    return load_config(path)
