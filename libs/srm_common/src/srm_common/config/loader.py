"""Entry points: load a configuration file (YAML or properties) into one validated model."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from srm_common.config.model import SrmConfig
from srm_common.config.properties_file import read_properties
from srm_common.config.providers import resolve_placeholders
from srm_common.config.raw import Entry, RawConfig
from srm_common.config.resolve import build_config
from srm_common.config.yaml_file import read_yaml
from srm_common.errors import ConfigError
from srm_common.redaction import remember_config_secrets

YAML_SUFFIXES = (".yaml", ".yml")


def load_config(
    path: str | os.PathLike[str], *, overrides: Mapping[str, str] | None = None
) -> SrmConfig:
    """Load ``path`` into an :class:`SrmConfig` with MM2's defaults and precedence.

    ``overrides`` are flat MM2 keys (``primary.bootstrap.servers``,
    ``primary->backup.tasks.max``) that replace the file's values for those keys, as if
    written there; errors name them as ``<key> (override)``. ``make up`` uses this to
    move cluster ports.

    The format follows the extension: ``.yaml``/``.yml`` (any case) is our YAML schema
    (see :mod:`srm_common.config.yaml_file`); anything else (``.properties``, ``.conf``,
    none) is an MM2/SRM properties file. The file is read as UTF-8.

    Raises :class:`ConfigError` when the file cannot be read or is invalid: one problem is
    raised as itself, several as one ``ConfigProblemsError`` whose message lists each
    (``file:line, key 'k': message``) on its own line. Never another exception type.
    """
    source = os.fspath(path)
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"cannot read the configuration file: {reason}", source=source) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            "the file is not valid UTF-8; save it as UTF-8 (use \\uXXXX escapes in properties)",
            source=source,
            line=line,
        ) from exc
    if source.lower().endswith(YAML_SUFFIXES):
        return parse_yaml_text(text, source=source, overrides=overrides)
    return parse_properties_text(text, source=source, overrides=overrides)


def parse_properties_text(
    text: str, source: str = "<properties>", *, overrides: Mapping[str, str] | None = None
) -> SrmConfig:
    """Like :func:`load_config` for the text of a properties file; ``source`` names it."""
    return _built(_overridden(read_properties(text, source), overrides))


def parse_yaml_text(
    text: str, source: str = "<yaml>", *, overrides: Mapping[str, str] | None = None
) -> SrmConfig:
    """Like :func:`load_config` for the text of a YAML file; ``source`` names it."""
    return _built(_overridden(read_yaml(text, source), overrides))


def _built(raw: RawConfig) -> SrmConfig:
    """Placeholders resolved (:mod:`srm_common.config.providers`), the model built, and its
    secrets remembered so that logs and answers mask them (:mod:`srm_common.redaction`)."""
    config = build_config(resolve_placeholders(raw))
    for cluster in config.clusters.values():
        for keys in (cluster.client, cluster.consumer, cluster.producer, cluster.admin):
            remember_config_secrets(keys)
    for flow in config.flows.values():
        remember_config_secrets(flow.target_producer)
        remember_config_secrets(flow.source_consumer)
    return config


def _overridden(raw: RawConfig, overrides: Mapping[str, str] | None) -> RawConfig:
    if not overrides:
        return raw
    kept = tuple(entry for entry in raw.entries if entry.key not in overrides)
    added = tuple(
        Entry(key=key, value=value, line=None, display=f"{key} (override)")
        for key, value in overrides.items()
    )
    return replace(raw, entries=kept + added)
