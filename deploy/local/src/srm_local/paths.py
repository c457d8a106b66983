"""Where the local stack keeps things: project root, jar cache and run folders."""

from __future__ import annotations

import os
from pathlib import Path

_MARKER = Path("deploy") / "maven" / "kafka" / "pom.xml"


def project_root() -> Path:
    """The checkout this stack belongs to.

    ``SRM_PROJECT_ROOT`` wins; otherwise the first folder holding ``deploy/maven``
    above this module (editable install) or above the working directory.
    """
    override = os.environ.get("SRM_PROJECT_ROOT")
    if override:
        return Path(override).resolve()
    for start in (Path(__file__).resolve(), Path.cwd().resolve()):
        for folder in (start, *start.parents):
            if (folder / _MARKER).is_file():
                return folder
    raise RuntimeError(
        "cannot find the SRM checkout (no deploy/maven/kafka/pom.xml above "
        f"{Path(__file__).resolve()} or {Path.cwd()}); set SRM_PROJECT_ROOT"
    )


def cache_dir() -> Path:
    """Downloaded artifacts (jars); safe to delete, refetched on demand."""
    return Path(os.environ.get("SRM_CACHE_DIR", project_root() / ".cache"))


def run_dir() -> Path:
    """Data, logs and pid files of local processes (``make down`` stops them)."""
    return Path(os.environ.get("SRM_RUN_DIR", project_root() / ".run"))
