"""Load-time check that every client of every cluster has settings both stacks can honour.

Each problem is one line naming the key as the operator wrote it (``primary.sasl.mechanism``,
``primary.consumer.ssl.keystore.type``, or ``sasl.mechanism`` when it came from the top
level), reported with the file's other problems (:mod:`srm_common.config.problems`).

Kerberos: a process logs in as one principal (:mod:`srm_common.adapters.kerberos`), so
clients whose GSSAPI logins differ (principal or keytab) are one problem, on the first
client that differs from the first login met.
"""

from __future__ import annotations

from collections.abc import Mapping

from srm_common.config.families import CLIENT_ROLES
from srm_common.config.model import ClusterConfig, FlowConfig
from srm_common.config.problems import Problems
from srm_common.config.raw import Entry, Style, show_key
from srm_common.config.security import KerberosLogin, SecurityProblem, read_security

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

    first: list[KerberosLogin] = []

    def check(alias: str, role: str | None, keys: Mapping[str, str]) -> None:
        try:
            login = read_security(keys).kerberos
        except SecurityProblem as error:
            report(alias, role, error)
            return
        if login is None or (first and _same_login(first[0], login)):
            return
        if not first:
            first.append(login)
            return
        report(
            alias,
            role,
            SecurityProblem(
                "sasl.jaas.config",
                f"every cluster must use one Kerberos login (a process logs in once):"
                f" {login.principal} with keytab {login.keytab} here, {first[0].principal}"
                f" with keytab {first[0].keytab} elsewhere; give them the same principal=",
            ),
        )

    for alias, cluster in clusters.items():
        for role in (None, *CLIENT_ROLES):
            check(alias, role, cluster.client if role is None else cluster.client_config(role))
    for flow in flows.values():
        for name, side in _FLOW_SIDES.items():
            alias = flow.source if side == "source" else flow.target
            check(alias, name.rsplit("_", 1)[1], getattr(flow, name))


def _same_login(a: KerberosLogin, b: KerberosLogin) -> bool:
    return (a.principal, a.keytab) == (b.principal, b.keytab)
