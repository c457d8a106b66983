"""What every SRM command does the same way: logging, ``--set KEY=VALUE`` pairs, loading
the configuration with one clear line (and exit status 2) instead of a traceback."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from srm_common.config import load_config
from srm_common.config.model import SrmConfig
from srm_common.errors import ConfigError
from srm_common.redaction import install_log_redaction, redact_text


def setup_logging() -> None:
    logging.basicConfig(
        level=os.environ.get("SRM_LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    for chatty in ("alembic", "uvicorn", "httpx"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    # Secret values the configuration loads (passwords, provider-resolved values) are
    # masked in every line, whichever library logs them.
    install_log_redaction()


def parse_pairs(items: Sequence[str], option: str, example: str) -> dict[str, str]:
    """``KEY=VALUE`` items as a dict; ValueError naming the bad one and an example."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{option} {item!r}: expected KEY=VALUE, e.g. {option} {example}")
        pairs[key.strip()] = value.strip()
    return pairs


def port(text: str) -> int:
    """An argparse type: a TCP port, 0 meaning any free one."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a port; use 1024-65535, or 0 for any free one"
        )
    return value


def load_or_exit(prog: str, path: Path, sets: Sequence[str]) -> SrmConfig:
    """The configuration at ``path`` with ``--set`` overrides, or exit 2 with one line."""
    try:
        return load_config(path, overrides=parse_pairs(sets, "--set", "tasks.max=4"))
    except (ConfigError, ValueError) as exc:
        fail(prog, str(exc))
    except OSError as exc:
        fail(prog, f"cannot read {path}: {exc.strerror}")


def fail(prog: str, message: str, status: int = 2):  # noqa: ANN201 - never returns
    print(f"{prog}: {redact_text(message)}", file=sys.stderr)
    raise SystemExit(status)


def exit_code(run: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None) -> int:
    """Run a command's body: its own status, or the status of a SystemExit (argparse's
    usage errors, :func:`fail`) whose message is printed already."""
    try:
        return run(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """``--config FILE`` (required) and ``--set KEY=VALUE`` (repeatable), as every
    service reads them (:func:`load_or_exit`)."""
    parser.add_argument("--config", required=True, type=Path, help="srm.yaml or MM2 properties")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key of the configuration (repeatable)",
    )
