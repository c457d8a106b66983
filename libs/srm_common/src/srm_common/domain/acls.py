"""Kafka ACL bindings, and which topic ACLs of a source a flow copies to its target.

MM2's rule (``MirrorSourceConnector.syncTopicAcls``), applied to every binding the
source's authorizer lists, in this order::

    resource type TOPIC?  no  -> skipped (group, cluster, transactional id ACLs stay)
    pattern LITERAL?      no  -> skipped (PREFIXED bindings are not copied)
    ALLOW WRITE?          yes -> skipped (nobody but the replicator writes a remote topic)
    topic replicated?     no  -> skipped (filter, internal topic, cycle: the flow's rule)
    copied to the remote topic's name, LITERAL, same principal and host;
    ALLOW ALL becomes ALLOW READ; everything else (DENY included) as it is.

DENY bindings are copied, as MM2 copies them: a source that allows ``User:*`` and denies
``User:mallory`` must not let mallory read the copy. One deliberate difference from
MM2: the wildcard topic ``*`` is never copied. MM2 would turn it into a literal
``primary.*`` (a name no topic has, so a no-op) under the default policy, and into ``*``
(every topic of the target) under the identity policy; neither is what the operator
meant, so it is reported as skipped and left to them.

Example, flow ``primary->backup`` with the default policy::

    source (primary)                              target (backup)
    TOPIC orders LITERAL User:alice READ  ALLOW -> TOPIC primary.orders LITERAL ... READ ALLOW
    TOPIC orders LITERAL User:alice ALL   ALLOW -> TOPIC primary.orders LITERAL ... READ ALLOW
    TOPIC orders LITERAL User:bob   READ  DENY  -> TOPIC primary.orders LITERAL ... READ DENY
    TOPIC orders LITERAL User:alice WRITE ALLOW    (skipped: WRITE is never granted)
    TOPIC ord    PREFIXED User:carol READ ALLOW    (skipped: PREFIXED)
    GROUP app    LITERAL User:alice READ  ALLOW    (skipped: not a topic)

Pure: bindings in, bindings out; the flow's topic rule and its naming come in as
functions so that this module knows nothing of configuration or policies' classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

ResourceType = Literal["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"]
PatternType = Literal["LITERAL", "PREFIXED"]
Permission = Literal["ALLOW", "DENY"]

OPERATIONS = frozenset(
    {
        "ALL",
        "READ",
        "WRITE",
        "CREATE",
        "DELETE",
        "ALTER",
        "DESCRIBE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "CREATE_TOKENS",
        "DESCRIBE_TOKENS",
    }
)
"""Kafka's ACL operations (``AclOperation`` without ANY and UNKNOWN)."""

WILDCARD = "*"
"""A LITERAL resource name that matches every resource of its type."""


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL as Kafka's authorizer stores it: a resource pattern and an access entry.

    ``principal`` is ``User:<name>`` (or ``User:*``); ``host`` is ``*`` or an address.
    Invariants: the operation is one of :data:`OPERATIONS`; a principal has a type.
    """

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: str
    permission: Permission

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise ValueError(f"unknown ACL operation {self.operation!r}")
        if ":" not in self.principal:
            raise ValueError(f"principal {self.principal!r} has no type; write User:<name>")
        if not self.name:
            raise ValueError("an ACL's resource name must not be empty")

    def describe(self) -> str:
        """``User:alice ALLOW READ on TOPIC orders (LITERAL) from *``."""
        return (
            f"{self.principal} {self.permission} {self.operation} on {self.resource_type}"
            f" {self.name} ({self.pattern_type}) from {self.host}"
        )


@dataclass(frozen=True)
class SkippedAcl:
    """A source binding the flow does not copy, and why (for operators)."""

    binding: AclBinding
    reason: str


@dataclass(frozen=True)
class AclCopyPlan:
    """What one round of ACL sync wants on the target: ``copies`` pairs each source
    binding with the binding it becomes on the target; ``wanted`` is the target bindings
    without duplicates (two sources can give one target binding: READ and ALL)."""

    copies: tuple[tuple[AclBinding, AclBinding], ...]
    skipped: tuple[SkippedAcl, ...]

    @property
    def wanted(self) -> tuple[AclBinding, ...]:
        return tuple(sorted({target for _, target in self.copies}))


def plan_acl_copy(
    bindings: Iterable[AclBinding],
    *,
    reason_not_replicated: Callable[[str], str | None],
    remote_topic: Callable[[str], str],
) -> AclCopyPlan:
    """Which of the source's ``bindings`` a flow copies, and what each becomes.

    ``reason_not_replicated(topic)`` is the flow's topic rule (None: the flow copies
    ``topic``); ``remote_topic(topic)`` its name on the target under the flow's policy
    (``orders`` -> ``primary.orders``; identity: ``orders``). See the module docstring.
    """
    copies: list[tuple[AclBinding, AclBinding]] = []
    skipped: list[SkippedAcl] = []
    for binding in sorted(set(bindings)):
        reason = _reason_not_copied(binding, reason_not_replicated)
        if reason is not None:
            skipped.append(SkippedAcl(binding, reason))
            continue
        copies.append((binding, target_binding(binding, remote_topic(binding.name))))
    return AclCopyPlan(tuple(copies), tuple(skipped))


def target_binding(binding: AclBinding, remote_topic: str) -> AclBinding:
    """``binding`` on ``remote_topic``: LITERAL, ALLOW ALL downgraded to ALLOW READ."""
    operation = binding.operation
    if binding.permission == "ALLOW" and operation == "ALL":
        operation = "READ"
    return AclBinding(
        resource_type="TOPIC",
        name=remote_topic,
        pattern_type="LITERAL",
        principal=binding.principal,
        host=binding.host,
        operation=operation,
        permission=binding.permission,
    )


def missing_acls(
    wanted: Iterable[AclBinding], existing: Iterable[AclBinding]
) -> tuple[AclBinding, ...]:
    """The ``wanted`` bindings the target does not have yet, sorted (never a removal:
    ACL sync only adds, as MM2's ``createAcls``)."""
    have = set(existing)
    return tuple(sorted(set(wanted) - have))


def _reason_not_copied(
    binding: AclBinding, reason_not_replicated: Callable[[str], str | None]
) -> str | None:
    if binding.resource_type != "TOPIC":
        return f"a {binding.resource_type} ACL; only topic ACLs are copied"
    if binding.pattern_type != "LITERAL":
        return f"a {binding.pattern_type} pattern; only LITERAL topic ACLs are copied"
    if binding.permission == "ALLOW" and binding.operation == "WRITE":
        return "ALLOW WRITE is never granted on a remote topic: only the replicator writes it"
    if binding.name == WILDCARD:
        return (
            "the wildcard topic '*' is not copied (it would name every topic of the"
            " target or none); grant it on the target yourself"
        )
    reason = reason_not_replicated(binding.name)
    if reason is not None:
        return f"topic not replicated: {reason}"
    return None
