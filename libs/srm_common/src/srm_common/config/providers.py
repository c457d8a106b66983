"""Config providers: ``${file:/path:key}``, ``${env:NAME}``, ``${directory:/dir:file}`` in values.

Kafka's config providers, resolved when the configuration is loaded, so that no secret
needs to sit in the configuration file or on a command line::

    config.providers = file,env                     # optional here, see below
    config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
    primary.sasl.jaas.config = ${file:/etc/srm/secrets.properties:primary.jaas}
    backup.ssl.truststore.password = ${env:BACKUP_TRUSTSTORE_PASSWORD}

* ``file``: the value of ``key`` in the properties file ``path`` (Java ``Properties``
  syntax, as Kafka's ``FileConfigProvider`` reads it);
* ``env``: the environment variable ``NAME`` (Kafka's ``EnvVarConfigProvider``);
* ``directory``: the whole content of the file ``file`` in the directory ``dir``, not
  trimmed (Kafka's ``DirectoryConfigProvider``; mind a trailing newline).

The placeholder syntax is Kafka's ``ConfigTransformer`` pattern; a value may hold several
placeholders and text around them. Unlike Kafka, the three providers are known without a
``config.providers`` declaration: Kafka leaves an undeclared placeholder as written, which
here would send the text ``${env:X}`` as a password and fail far from the cause. When
``config.providers`` is declared, only the names it lists are resolved and each must be one
of Kafka's three classes (a custom Java provider cannot run in Python). Every problem is
one line naming the key and the file, variable or key that is missing, never a value.
Resolved values are remembered as secrets (:mod:`srm_common.redaction`).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from srm_common.config.raw import Entry, RawConfig, RawValue
from srm_common.errors import ConfigError
from srm_common.redaction import remember_secret

PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
"""Kafka's ConfigTransformer pattern: ``${provider:[path:]key}``."""

PROVIDER_CLASSES = {
    "file": "org.apache.kafka.common.config.provider.FileConfigProvider",
    "env": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    "directory": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
}
_CLASS_KINDS = {cls: kind for kind, cls in PROVIDER_CLASSES.items()}
DECLARATION = "config.providers"

Lookup = Callable[[str | None, str], str]


class ProviderError(ValueError):
    """A placeholder cannot be resolved; the message names what is missing."""


def resolve_placeholders(raw: RawConfig, environ: Mapping[str, str] | None = None) -> RawConfig:
    """``raw`` with every placeholder replaced; problems are added to ``raw.problems``."""
    env = os.environ if environ is None else environ
    entries = {e.key: e for e in raw.entries}
    problems = list(raw.problems)
    providers = _declared(entries)
    resolved: list[Entry] = []
    files: dict[str, Mapping[str, str]] = {}
    for entry in raw.entries:
        if entry.key == DECLARATION or entry.key.startswith(DECLARATION + "."):
            resolved.append(entry)
            continue
        try:
            value = _resolve_value(entry.value, providers, env, files)
        except ProviderError as exc:
            problems.append(
                ConfigError(str(exc), source=raw.source, key=entry.display, line=entry.line)
            )
            continue
        if value != entry.value and isinstance(value, str) and isinstance(entry.value, str):
            _remember_placeholder(entry.key, entry.value, value, providers)
        resolved.append(entry if value == entry.value else replace(entry, value=value))
    return replace(raw, entries=tuple(resolved), problems=tuple(problems))


def _declared(entries: Mapping[str, Entry]) -> dict[str, str]:
    """Provider name -> kind (file/env/directory), or -> why it cannot be used."""
    declaration = entries.get(DECLARATION)
    if declaration is None:
        return {kind: kind for kind in PROVIDER_CLASSES}
    value = declaration.value
    names = value if isinstance(value, tuple) else tuple(value.split(","))
    providers: dict[str, str] = {}
    for name in (n.strip() for n in names if n.strip()):
        class_key = f"{DECLARATION}.{name}.class"
        class_entry = entries.get(class_key)
        class_name = str(class_entry.value).strip() if class_entry else ""
        if not class_name and name in PROVIDER_CLASSES:
            providers[name] = name  # Kafka's own name for it; the class is implied
        elif class_name in _CLASS_KINDS:
            providers[name] = _CLASS_KINDS[class_name]
        else:
            why = "is not set" if not class_name else "is not one of Kafka's three providers"
            providers[name] = (
                f"config provider {name!r} cannot be used: {class_key} {why}; the ones"
                f" resolved here are {', '.join(PROVIDER_CLASSES.values())}"
            )
    return providers


def _resolve_value(
    value: RawValue,
    providers: Mapping[str, str],
    env: Mapping[str, str],
    files: dict[str, Mapping[str, str]],
) -> RawValue:
    if isinstance(value, tuple):
        return tuple(str(_resolve_value(item, providers, env, files)) for item in value)
    if "${" not in value:
        return value

    def one(match: re.Match[str]) -> str:
        name, path, key = match.group(1), match.group(2), match.group(3)
        kind = providers.get(name)
        if kind is None:
            known = ", ".join(sorted(providers)) or "none"
            raise ProviderError(
                f"unknown config provider {name!r} in ${{{name}:...}}; declared in"
                f" {DECLARATION}: {known}"
            )
        if kind not in PROVIDER_CLASSES:
            raise ProviderError(kind)
        found = _lookup(kind, path, key, env, files)
        remember_secret(found)
        return found

    return PLACEHOLDER.sub(one, value)


def _lookup(
    kind: str,
    path: str | None,
    key: str,
    env: Mapping[str, str],
    files: dict[str, Mapping[str, str]],
) -> str:
    if kind == "env":
        if path:
            raise ProviderError(f"write ${{env:{key}}} (the env provider takes no path)")
        if key not in env:
            raise ProviderError(f"environment variable {key} is not set")
        return env[key]
    if not path:
        raise ProviderError(f"${{{kind}:...}} needs a path: ${{{kind}:/path:{key}}}")
    if kind == "directory":
        target = Path(path) / key
        if Path(key).is_absolute() or ".." in Path(key).parts:
            raise ProviderError(f"file name {key!r} must stay inside the directory {path}")
        return _read(target, what=f"file {key} in directory {path}")
    if path not in files:
        files[path] = _properties(path)
    if key not in files[path]:
        raise ProviderError(f"key {key!r} is not in the properties file {path}")
    return files[path][key]


def _read(path: Path, *, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProviderError(f"{what} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise ProviderError(f"cannot read {what}: {reason}") from None


def _properties(path: str) -> Mapping[str, str]:
    from srm_common.config.properties_file import read_properties

    text = _read(Path(path), what=f"properties file {path}")
    parsed = read_properties(text, path)
    if parsed.problems:
        line = parsed.problems[0].line
        raise ProviderError(f"properties file {path} cannot be read (line {line})")
    values = {e.key: str(e.value) for e in parsed.entries}
    if parsed.clusters is not None:  # the reader keeps 'clusters' aside
        values["clusters"] = ",".join(a.alias for a in parsed.clusters.aliases)
    return values


_lock = threading.Lock()
_placeholders: dict[str, list[tuple[str, str, dict[str, str]]]] = {}
"""resolved value -> [(flat key, value as written, {provider name: class})]."""


def _remember_placeholder(
    key: str, written: str, resolved: str, providers: Mapping[str, str]
) -> None:
    used = {m.group(1) for m in PLACEHOLDER.finditer(written)}
    classes = {name: PROVIDER_CLASSES[providers[name]] for name in used}
    with _lock:
        _placeholders.setdefault(resolved, []).append((key, written, classes))


def with_placeholders(keys: Mapping[str, str]) -> dict[str, str]:
    """``keys`` (a Java client config) with every value that a config provider resolved
    put back as written (``${file:/etc/srm/s.properties:jaas}``), plus the
    ``config.providers`` declarations that let Kafka's Java client resolve it itself.

    So a secret kept in a file or the environment is read by the Java client where it
    runs and never travels in the copy channel's answers. A value is put back only when
    a key of the same name (``sasl.jaas.config``, any prefix) was resolved to exactly
    that value; anything else is left as it is.
    """
    out = dict(keys)
    classes: dict[str, str] = {}
    with _lock:
        known = {value: list(uses) for value, uses in _placeholders.items()}
    for key, value in keys.items():
        for flat, written, used in known.get(value, ()):
            if flat == key or flat.endswith("." + key):
                out[key] = written
                classes.update(used)
                break
    if classes:
        out[DECLARATION] = ",".join(sorted(classes))
        for name, class_name in sorted(classes.items()):
            out[f"{DECLARATION}.{name}.class"] = class_name
    return out


def resolve_client_keys(
    keys: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``keys`` as :func:`with_placeholders` wrote them, resolved where the client runs
    (a copy slot, in a Spark executor): every placeholder replaced by what its provider
    reads here, the ``config.providers`` declarations removed. A resolved value is
    remembered as a secret. :class:`ProviderError` names the key and what is missing."""
    env = os.environ if environ is None else environ
    declared = {
        key: Entry(key, value, None, key)
        for key, value in keys.items()
        if key == DECLARATION or key.startswith(DECLARATION + ".")
    }
    if DECLARATION not in declared:
        return dict(keys)  # nothing was put back as written
    providers = _declared(declared)
    files: dict[str, Mapping[str, str]] = {}
    out: dict[str, str] = {}
    for key, value in keys.items():
        if key in declared:
            continue
        try:
            out[key] = str(_resolve_value(value, providers, env, files))
        except ProviderError as exc:
            raise ProviderError(f"{key}: {exc}") from None
    return out


def forget_placeholders() -> None:
    """Empty the record of resolved placeholders (tests)."""
    with _lock:
        _placeholders.clear()
