"""The headers of a copy into a shared (identity policy) target, where the remote
partition may have other writers: the origin rule (drop a record that came from the
target, stamp one with where it came from: :mod:`srm_common.domain.origin`) and the copy
header that names the upstream record, so that a restart can find the last one that
landed (:mod:`srm_driver.shared_target`). Pure.
"""

from __future__ import annotations

from typing import Any

from srm_common.domain.origin import DROP, STAMP, decide

from srm_driver.copier.plan import UnitPlan

# What copy_headers returns for a record the origin rule does not copy.
DROPPED = object()


def copy_headers(plan: UnitPlan, up: int, headers: Any) -> Any:
    """The headers of the copy of upstream ``up`` (a record with ``headers``), or
    :data:`DROPPED`; raises ``MalformedOrigin`` for an origin header it cannot read (a
    poison record: the partition stops)."""
    origin, copy_header = plan.origin_header, plan.copy_header
    if origin is not None:
        action = decide(headers, origin, plan.target)
        if action == DROP:
            return DROPPED
        if action == STAMP:
            headers = [*(headers or ()), (origin, plan.source.encode())]
    if copy_header is not None:
        headers = [h for h in headers or () if h[0] != copy_header]
        headers.append((copy_header, f"{plan.source}/{up}".encode()))
    return headers
