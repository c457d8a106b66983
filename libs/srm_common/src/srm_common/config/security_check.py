"""Load-time check that every client of every cluster has settings both stacks can honour.

Each problem is one line naming the key as the operator wrote it (``primary.sasl.mechanism``,
``primary.consumer.ssl.keystore.type``, or ``sasl.mechanism`` when it came from the top
level), reported with the file's other problems (:mod:`srm_common.config.problems`).
"""

from __future__ import annotations

from collections.abc import Mapping

from srm_common.config.families import CLIENT_ROLES
from srm_common.config.model import ClusterConfig, FlowConfig
from srm_common.config.problems import Problems
from srm_common.config.raw import Entry, Style, show_key
from srm_common.config.security import SecurityProblem, read_security

_FLOW_SIDES = {
    "source_consumer": "source",
    "source_producer": "source",
    "source_admin": "source",
    "target_consumer": "target",
    "target_producer": "target",
    "target_internal_producer": "target",
    "target_admin": "target",
}


def check_security(
    clusters: Mapping[str, ClusterConfig],
    flows: Mapping[tuple[str, str], FlowConfig],
    entries: Mapping[str, Entry],
    style: Style,
    problems: Problems,
) -> None:
    """Record one problem per client config whose security settings are refused."""
    aliases = tuple(clusters)

    def report(alias: str, role: str | None, error: SecurityProblem) -> None:
        candidates = [f"{alias}.{role}.{error.key}"] if role else []
        candidates += [f"{alias}.{error.key}", error.key]
        written = next((entries[c] for c in candidates if c in entries), None)
        name = written.key if written else f"{alias}.{error.key}"
        problems.add(
            str(error),
            key=written.display if written else show_key(style, name, aliases),
            line=written.line if written else None,
        )

    for alias, cluster in clusters.items():
        for role in (None, *CLIENT_ROLES):
            keys = cluster.client if role is None else cluster.client_config(role)
            try:
                read_security(keys)
            except SecurityProblem as error:
                report(alias, role, error)
    for flow in flows.values():
        for name, side in _FLOW_SIDES.items():
            alias = flow.source if side == "source" else flow.target
            try:
                read_security(getattr(flow, name))
            except SecurityProblem as error:
                report(alias, name.rsplit("_", 1)[1], error)
