"""The vocabulary the required-ACL areas share: how an area grants, and names they reuse.

:mod:`srm_common.required_acls` collects every area's grants; the areas
(:mod:`srm_common.required_acls_flows`, :mod:`srm_common.required_acls_services`) say what
each service needs through a :class:`Grant`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

from srm_common.domain.acls import PatternType, ResourceType

DEFAULT_AGGREGATOR_ID = "srm-metrics-aggregator"
"""``srm.metrics.aggregator.id``'s default (the aggregator's settings use the same)."""

TOPIC_WRITER = ("CREATE", "WRITE", "READ", "DESCRIBE")
# librdkafka's consumers look their group's coordinator up (FindCoordinator: DESCRIBE on
# the group) even when they only assign partitions and commit nothing.
GROUP_LOOKUP = "the {what} consumer group is looked up (FindCoordinator), nothing committed"
READER_GROUP = "srm-reader"
"""The group id of :mod:`srm_common.adapters.kafka_reader`'s consumers (commits nothing)."""
_REGEX_CHARS = re.compile(r"[\\^$|?*+()\[\]{}]")


class Grant(Protocol):
    def __call__(
        self,
        cluster: str,
        service: str,
        resource: ResourceType,
        name: str,
        operations: Iterable[str],
        why: str,
        pattern: PatternType = "LITERAL",
    ) -> None: ...


def topic_resources(patterns: Iterable[str]) -> list[tuple[str, PatternType, str | None]]:
    """``topics``/``groups`` patterns as ACL resources: (name, pattern type, note)."""
    out: list[tuple[str, PatternType, str | None]] = []
    for pattern in patterns:
        plain = pattern.replace("\\.", ".")
        if pattern in (".*", ".+"):
            out.append(("*", "LITERAL", None))
        elif not _REGEX_CHARS.search(plain.replace(".", "")):
            out.append((plain, "LITERAL", None))
        elif pattern.endswith(".*") and not _REGEX_CHARS.search(pattern[:-2].replace("\\.", "")):
            prefix = pattern[:-2].replace("\\.", ".")
            # An unescaped '.' in the prefix matches any character: not a prefix of names.
            if "." not in pattern[:-2].replace("\\.", ""):
                out.append((prefix, "PREFIXED", None))
            else:
                out.append(("*", "LITERAL", f"pattern {pattern!r} has no exact ACL form"))
        else:
            out.append(("*", "LITERAL", f"pattern {pattern!r} has no exact ACL form"))
    return out


def noted(why: str, note: str | None) -> str:
    return f"{why}; {note}: narrow it by hand" if note else why
