"""Resolving ``replication.policy.class`` (MM2 Java names or Python paths) to a policy."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping

from srm_common.domain.policy import (
    DefaultReplicationPolicy,
    IdentityReplicationPolicy,
    ReplicationPolicy,
)
from srm_common.errors import ConfigError

POLICY_CLASS_KEY = "replication.policy.class"
_MM2_PACKAGE = "org.apache.kafka.connect.mirror."
_BUILT_IN: Mapping[str, type[DefaultReplicationPolicy]] = {
    f"{_MM2_PACKAGE}DefaultReplicationPolicy": DefaultReplicationPolicy,
    f"{_MM2_PACKAGE}IdentityReplicationPolicy": IdentityReplicationPolicy,
    "DefaultReplicationPolicy": DefaultReplicationPolicy,
    "IdentityReplicationPolicy": IdentityReplicationPolicy,
    "default": DefaultReplicationPolicy,
    "identity": IdentityReplicationPolicy,
}
_VALID = (
    "valid values are DefaultReplicationPolicy or IdentityReplicationPolicy (also with the"
    f" {_MM2_PACKAGE} prefix), 'default', 'identity', or the Python path of a"
    " ReplicationPolicy class such as 'my_package.policies:PrefixPolicy'"
)
_POLICY_METHODS = tuple(
    name
    for name in dir(ReplicationPolicy)
    if not name.startswith("_") and callable(getattr(ReplicationPolicy, name))
)


def resolve_replication_policy_class(class_name: str) -> type[object]:
    """The class named by ``replication.policy.class``, imported but not instantiated.

    Accepts MM2's Java names, their short forms, ``default``/``identity`` (any case) and a
    Python path ``pkg.module:Class`` or ``pkg.module.Class``. Raises :class:`ConfigError`
    (key ``replication.policy.class``) naming what would be valid.
    """
    name = class_name.strip()
    built_in = _BUILT_IN.get(name) or _BUILT_IN.get(name.lower())
    if built_in is not None:
        return built_in
    if name.startswith(_MM2_PACKAGE) or "." not in name.replace(":", "."):
        raise ConfigError(
            f"unknown replication policy {class_name!r}; {_VALID}", key=POLICY_CLASS_KEY
        )
    candidate = _import_class(name)
    missing = [
        method for method in _POLICY_METHODS if not callable(getattr(candidate, method, None))
    ]
    if not isinstance(candidate, type) or missing:
        what = (
            "is not a class" if not isinstance(candidate, type) else f"lacks {', '.join(missing)}"
        )
        raise ConfigError(
            f"{class_name!r} is not a replication policy: it {what}; subclass"
            f" srm_common.domain.policy.DefaultReplicationPolicy or implement ReplicationPolicy;"
            f" {_VALID}",
            key=POLICY_CLASS_KEY,
        )
    return candidate


def is_known_policy_class(class_name: str) -> bool:
    """Does ``class_name`` name a usable policy class? May import user modules."""
    try:
        resolve_replication_policy_class(class_name)
    except ConfigError:
        return False
    return True


def load_replication_policy(
    class_name: str,
    *,
    separator: str,
    internal_topic_separator_enabled: bool,
    source_alias: str | None,
) -> ReplicationPolicy:
    """Instantiate the policy named by ``replication.policy.class``.

    Keyword arguments ``separator``, ``internal_topic_separator_enabled`` and
    ``source_alias`` are passed to the class when its ``__init__`` accepts them (all of
    them if it takes ``**kwargs``). Errors from the class become :class:`ConfigError`
    (a :class:`ConfigError` it raises itself, such as an empty separator, passes through).
    """
    policy_class = resolve_replication_policy_class(class_name)
    offered: dict[str, object] = {
        "separator": separator,
        "internal_topic_separator_enabled": internal_topic_separator_enabled,
        "source_alias": source_alias,
    }
    kwargs = _accepted_kwargs(policy_class, offered)
    try:
        policy = policy_class(**kwargs)
    except ConfigError:
        raise
    except Exception as exc:  # user code: any failure is a configuration problem
        raise ConfigError(
            f"cannot create replication policy {class_name!r} with {kwargs}: {exc}",
            key=POLICY_CLASS_KEY,
        ) from exc
    if not isinstance(policy, ReplicationPolicy):
        raise ConfigError(
            f"{class_name!r} did not create a replication policy; {_VALID}", key=POLICY_CLASS_KEY
        )
    return policy


def _import_class(path: str) -> object:
    module_name, _, attribute = path.rpartition(":") if ":" in path else path.rpartition(".")
    if not module_name or not attribute:
        raise ConfigError(f"cannot parse policy path {path!r}; {_VALID}", key=POLICY_CLASS_KEY)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # user code: ImportError, or anything its import raises
        raise ConfigError(
            f"cannot import module {module_name!r} for replication policy {path!r}"
            f" ({type(exc).__name__}: {exc}); {_VALID}",
            key=POLICY_CLASS_KEY,
        ) from exc
    try:
        return getattr(module, attribute)
    except AttributeError as exc:
        raise ConfigError(
            f"module {module_name!r} has no class {attribute!r}; {_VALID}", key=POLICY_CLASS_KEY
        ) from exc


def _accepted_kwargs(
    target: Callable[..., object], offered: dict[str, object]
) -> dict[str, object]:
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # no introspectable signature: offer nothing
        return {}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return dict(offered)
    usable = {
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    return {name: value for name, value in offered.items() if name in usable}
