"""``srm-control acls --print``: the least-privilege ACLs SRM's services need, from the
configuration alone (:func:`srm_common.required_acls.required_acls`; nothing connects)."""

from __future__ import annotations

import argparse

from srm_common.acl_render import acl_table, kafka_acls_commands
from srm_common.cli_support import fail
from srm_common.config.model import SrmConfig
from srm_common.errors import SrmError
from srm_common.required_acls import SERVICES, UNKNOWN_PRINCIPAL, required_acls

PROG = "srm-control acls"

EPILOG = """\
examples:
  srm-control acls --print                             kafka-acls.sh commands, every cluster
  srm-control acls --print --format table              one line per principal and resource
  srm-control acls --print --cluster backup --service driver
  srm-control acls --print --principal primary=User:srm-primary \\
      --principal coordinator@primary=User:srm-coordinator
  srm-control acls --print --command-config /etc/kafka/{alias}-admin.properties

Principals come from each cluster's connection settings (the username of
sasl.jaas.config; User:ANONYMOUS on PLAINTEXT). With SSL client certificates the
principal is the certificate's name, which the configuration does not hold: give it with
--principal ALIAS=User:CN=... (or SERVICE@ALIAS=... for one service). The commands are
run by an administrator (--command-config: the admin's client settings, not SRM's).
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], epilog: str) -> None:
    p = sub.add_parser(
        "acls",
        help="print the ACLs each SRM service needs on each cluster (least privilege)",
        epilog=EPILOG + "\n" + epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--print", dest="print_", action="store_true", required=True, help="print them")
    p.add_argument(
        "--format",
        choices=("commands", "table"),
        default="commands",
        help="kafka-acls.sh commands (default) or a table",
    )
    p.add_argument("--cluster", metavar="ALIAS", help="only this cluster")
    p.add_argument("--service", choices=SERVICES, help="only this service")
    p.add_argument(
        "--principal",
        action="append",
        default=[],
        metavar="[SERVICE@]ALIAS=PRINCIPAL",
        help="the principal to grant on ALIAS (for SERVICE only, with SERVICE@); repeatable",
    )
    p.add_argument(
        "--command-config",
        default="{alias}-admin.properties",
        metavar="FILE",
        help="the admin client file each command names ({alias} is replaced)",
    )


def run(args: argparse.Namespace, config: SrmConfig) -> int:
    principals = _principals(args.principal, config)
    if args.cluster is not None and args.cluster not in config.clusters:
        known = ", ".join(config.clusters)
        fail(PROG, f"--cluster {args.cluster}: unknown cluster alias; known aliases: {known}")
    try:
        rows = required_acls(config, principals)
    except SrmError as exc:
        fail(PROG, str(exc))
    rows = [
        r
        for r in rows
        if (args.cluster is None or r.cluster == args.cluster)
        and (args.service is None or r.service == args.service)
    ]
    if args.format == "table":
        print(acl_table(rows))
    else:
        print(kafka_acls_commands(config, rows, command_config=args.command_config))
    unknown = sorted({r.cluster for r in rows if r.binding.principal.startswith("User:<")})
    if unknown:
        placeholder = UNKNOWN_PRINCIPAL.format(alias=unknown[0])
        print(
            f"\n# {placeholder} and the like: the configuration does not say who SRM is on"
            f" {', '.join(unknown)} (SSL certificates); pass --principal ALIAS=User:...",
        )
    return 0


def _principals(given: list[str], config: SrmConfig) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in given:
        where, sep, principal = item.partition("=")
        service, _, alias = where.rpartition("@")
        if not sep or not alias or ":" not in principal:
            fail(
                PROG,
                f"--principal {item!r}: write ALIAS=User:NAME or SERVICE@ALIAS=User:NAME"
                " (e.g. primary=User:srm)",
            )
        if alias not in config.clusters:
            known = ", ".join(config.clusters)
            fail(PROG, f"--principal {item!r}: unknown cluster alias {alias!r}; known: {known}")
        if service and service not in SERVICES:
            fail(
                PROG,
                f"--principal {item!r}: unknown service {service!r}; one of {', '.join(SERVICES)}",
            )
        out[where] = principal
    return out
