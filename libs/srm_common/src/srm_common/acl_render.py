"""Required ACLs (:mod:`srm_common.required_acls`) as ``kafka-acls.sh`` commands for an
administrator to run, or as a table: what ``srm-control acls --print`` prints."""

from __future__ import annotations

import re
from collections.abc import Iterable

from srm_common.config.model import SrmConfig
from srm_common.required_acls import RequiredAcl


def kafka_acls_commands(
    config: SrmConfig,
    rows: Iterable[RequiredAcl],
    *,
    command_config: str = "{alias}-admin.properties",
) -> str:
    """``rows`` as ``kafka-acls.sh --add`` commands, one per principal and resource (its
    operations together), under a comment per cluster and service saying why.

    ``command_config`` names the admin client file of each cluster (``{alias}`` is
    replaced): an administrator's credentials, not SRM's.
    """
    grouped: dict[tuple[str, str, str, str, str, str], list[str]] = {}
    whys: dict[tuple[str, str, str, str, str, str], dict[str, None]] = {}
    for row in rows:
        b = row.binding
        key = (row.cluster, row.service, b.principal, b.resource_type, b.name, b.pattern_type)
        grouped.setdefault(key, []).append(b.operation)
        whys.setdefault(key, {})[row.why] = None
    lines: list[str] = []
    heading = None
    for key in sorted(grouped):
        cluster, service, principal, resource, name, pattern = key
        if (cluster, service) != heading:
            heading = (cluster, service)
            servers = ",".join(config.cluster(cluster).bootstrap_servers)
            lines += ["", f"# --- {cluster} ({servers}): {service} as {principal}"]
        lines.append(f"# {'; '.join(whys[key])}")
        servers = ",".join(config.cluster(cluster).bootstrap_servers)
        parts = [
            "kafka-acls.sh",
            f"--bootstrap-server {servers}",
            f"--command-config {command_config.format(alias=cluster)}",
            "--add",
            f"--allow-principal {_quoted(principal)}",
            *(f"--operation {_camel(op)}" for op in sorted(set(grouped[key]))),
            _resource_flag(resource, name),
        ]
        if pattern == "PREFIXED":
            parts.append("--resource-pattern-type prefixed")
        lines.append(" ".join(parts))
    return "\n".join(lines).lstrip("\n")


def acl_table(rows: Iterable[RequiredAcl]) -> str:
    """``rows`` as an aligned table: cluster, service, principal, resource, operations."""
    grouped: dict[tuple[str, str, str, str], list[str]] = {}
    for row in rows:
        b = row.binding
        resource = f"{b.resource_type}:{b.name}" + (
            " (prefixed)" if b.pattern_type == "PREFIXED" else ""
        )
        grouped.setdefault((row.cluster, row.service, b.principal, resource), []).append(
            b.operation
        )
    table = [("CLUSTER", "SERVICE", "PRINCIPAL", "RESOURCE", "OPERATIONS")]
    table += [(*key, ",".join(sorted(set(ops)))) for key, ops in sorted(grouped.items())]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(r)).rstrip()
        for r in table
    )


def _camel(operation: str) -> str:
    return "".join(part.capitalize() for part in operation.split("_"))


def _resource_flag(resource: str, name: str) -> str:
    if resource == "CLUSTER":
        return "--cluster"
    flag = {"TOPIC": "--topic", "GROUP": "--group", "TRANSACTIONAL_ID": "--transactional-id"}
    return f"{flag[resource]} {_quoted(name)}"


def _quoted(text: str) -> str:
    safe = re.fullmatch(r"[A-Za-z0-9_.:=@,/+-]+", text)
    return text if safe else "'" + text.replace("'", "'\\''") + "'"
