"""Secured local clusters: SASL over TLS, SCRAM users, mutual TLS and an authorizer.

A cluster started with a :class:`ClusterSecurity` in its :class:`ClusterSpec` listens on::

    SASL_SSL        spec.port            SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN, TLS
    CONTROLLER      spec.port + 1        SASL_PLAINTEXT + PLAIN, loopback, broker only
    SSL             security.ssl_port    mutual TLS required (client cert CN -> principal)
    SASL_PLAINTEXT  security.sasl_plaintext_port   the three mechanisms, no TLS

with ``StandardAuthorizer``, ``super.users=User:<admin>`` (the broker's own principal on
every listener) and ``allow.everyone.if.no.acl.found=false``: a principal without ACLs is
refused (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED). Certificates come from
:mod:`srm_local.tls_files` (one CA for every cluster of a pool, plus an unrelated CA).

SCRAM users: the admin (both SCRAM mechanisms) and ``scram_users`` are added when the
storage is formatted (``kafka-storage format --add-scram``); later ones with Kafka's own
``kafka-configs --alter --add-config SCRAM-SHA-512=[password=...]``
(:meth:`SecuredCluster.create_user`). PLAIN users are static (``plain_users``, in the
listener's JAAS), so they are fixed when the cluster starts.

What a started cluster offers its clients (:class:`SecuredCluster`)::

    cluster.bootstrap_servers                    # SASL_SSL listener, "127.0.0.1:<port>"
    cluster.ssl_bootstrap_servers                # mutual-TLS listener
    cluster.sasl_plaintext_bootstrap_servers
    cluster.tls                                  # TlsFiles: ca_pem, truststore_jks,
                                                 #   truststore_p12, client_keystore_jks,
                                                 #   client_keystore_p12, client_pem,
                                                 #   client_key, stranger_truststore_jks...
    cluster.tls.password                         # of every store and the encrypted key
    cluster.admin                                # Credential of the super user
    cluster.client_config(alice)                 # librdkafka keys (sasl.username,
                                                 #   ssl.ca.location), bootstrap included
    cluster.client_config()                      # the same as the admin
    cluster.mm2_keys(alice)                      # MM2/Java keys: security.protocol,
                                                 #   sasl.mechanism, sasl.jaas.config,
                                                 #   ssl.truststore.location/.password
    cluster.java_properties(alice)               # a file of those keys for Kafka's tools
    write_mm2_properties(path, {"primary": keys, ...}, {"primary->backup.enabled": True})

Tests start secured clusters through ``srm_harness.secured.SecuredPool`` (the test
harness, not part of this package), which adds users, ACLs and topics as the admin.

``srm-local kafka up --secured`` uses :func:`local_secured_clusters` and
:func:`write_local_client_files` for the run folder's clusters (docs/security.md).

``mm2_keys`` is what a user of SRM or MM2 writes under ``clusters.<alias>``; the product
must translate it for librdkafka itself. Harness clients use ``client_config`` so that a
test's data never depends on the code under test.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from srm_local.clusters import (
    ClusterSpec,
    ClusterStartError,
    LocalKafkaCluster,
)
from srm_local.tls_files import TlsFiles, write_tls_files

SCRAM_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
MECHANISMS = (*SCRAM_MECHANISMS, "PLAIN")
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_LOGIN_MODULES = {
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
}
# A client certificate's "CN=srm-client,O=srm-local" becomes the principal User:srm-client.
PRINCIPAL_MAPPING = "RULE:^CN=([^,]+),.*$/$1/,DEFAULT"


@dataclass(frozen=True)
class Credential:
    """A SASL user: name, password and the mechanism it logs in with."""

    username: str
    password: str
    mechanism: str = "SCRAM-SHA-512"

    def __post_init__(self) -> None:
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"mechanism {self.mechanism!r}: use one of {', '.join(MECHANISMS)}")
        if '"' in self.password or '"' in self.username:
            raise ValueError("a JAAS value cannot hold a double quote")

    @property
    def principal(self) -> str:
        return f"User:{self.username}"

    def jaas(self) -> str:
        """The ``sasl.jaas.config`` line a Java client writes for this user."""
        module = _LOGIN_MODULES[self.mechanism]
        return f'{module} required username="{self.username}" password="{self.password}";'

    def with_mechanism(self, mechanism: str) -> Credential:
        return Credential(self.username, self.password, mechanism)

    def __repr__(self) -> str:  # never print a password in a test report
        return f"Credential({self.username!r}, {self.mechanism})"


@dataclass(frozen=True)
class ClusterSecurity:
    """How a local cluster is secured; see the module docstring for the listeners."""

    tls: TlsFiles
    admin: Credential
    ssl_port: int
    sasl_plaintext_port: int
    scram_users: Mapping[str, str] = field(default_factory=dict)
    plain_users: Mapping[str, str] = field(default_factory=dict)

    def broker_properties(self, host: str, port: int, controller_port: int) -> dict[str, str]:
        """server.properties entries replacing the plaintext listeners."""
        admin = self.admin
        plain_users = {admin.username: admin.password, **self.plain_users}
        plain_server = " ".join(f'user_{name}="{pw}"' for name, pw in plain_users.items())
        plain_module = _LOGIN_MODULES["PLAIN"]
        plain_jaas = f"{plain_module} required {plain_server};"
        tls = self.tls
        properties = {
            "listeners": (
                f"SASL_SSL://{host}:{port},CONTROLLER://{host}:{controller_port},"
                f"SSL://{host}:{self.ssl_port},SASL_PLAINTEXT://{host}:{self.sasl_plaintext_port}"
            ),
            "advertised.listeners": (
                f"SASL_SSL://{host}:{port},SSL://{host}:{self.ssl_port},"
                f"SASL_PLAINTEXT://{host}:{self.sasl_plaintext_port}"
            ),
            "listener.security.protocol.map": (
                "SASL_SSL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
            ),
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.enabled.mechanisms": ",".join(MECHANISMS),
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            # One JAAS line per listener and mechanism: SCRAM's server side reads users
            # from the metadata log (the admin's line is also the broker's client side).
            **{
                f"listener.name.{listener}.{mechanism.lower()}.sasl.jaas.config": (
                    plain_jaas if mechanism == "PLAIN" else admin.with_mechanism(mechanism).jaas()
                )
                for listener in ("sasl_ssl", "sasl_plaintext")
                for mechanism in MECHANISMS
            },
            # The broker talks to its controller as the admin over PLAIN; the same JAAS
            # line is the client (username/password) and the server (user_<name>) side.
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": (
                f'{plain_module} required username="{admin.username}"'
                f' password="{admin.password}" user_{admin.username}="{admin.password}";'
            ),
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(tls.broker_keystore),
            "ssl.keystore.password": tls.password,
            "ssl.key.password": tls.password,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(tls.truststore_p12),
            "ssl.truststore.password": tls.password,
            "listener.name.ssl.ssl.client.auth": "required",
            "ssl.principal.mapping.rules": PRINCIPAL_MAPPING,
            "authorizer.class.name": AUTHORIZER,
            "super.users": admin.principal,
            "allow.everyone.if.no.acl.found": "false",
        }
        return properties

    def format_arguments(self) -> list[str]:
        """``--add-scram`` arguments: the admin and ``scram_users``, both SCRAM mechanisms."""
        users = {self.admin.username: self.admin.password, **self.scram_users}
        return [
            f"--add-scram={mechanism}=[name={name},password={password}]"
            for name, password in users.items()
            for mechanism in SCRAM_MECHANISMS
        ]

    def client_config(self, bootstrap: str, credential: Credential | None = None) -> dict[str, str]:
        """librdkafka keys for a SASL_SSL client (the admin unless ``credential``)."""
        who = credential or self.admin
        return {
            "bootstrap.servers": bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": who.mechanism,
            "sasl.username": who.username,
            "sasl.password": who.password,
            "ssl.ca.location": str(self.tls.ca_pem),
        }


class SecuredCluster:
    """A started secured cluster; see the module docstring for what it offers."""

    def __init__(self, cluster: LocalKafkaCluster) -> None:
        assert cluster.spec.security is not None
        self.cluster = cluster
        self.security: ClusterSecurity = cluster.spec.security

    alias = property(lambda self: self.cluster.alias)
    bootstrap_servers = property(lambda self: self.cluster.bootstrap_servers)
    tls = property(lambda self: self.security.tls)
    admin = property(lambda self: self.security.admin)

    @property
    def ssl_bootstrap_servers(self) -> str:
        return f"{self.cluster.spec.host}:{self.security.ssl_port}"

    @property
    def sasl_plaintext_bootstrap_servers(self) -> str:
        return f"{self.cluster.spec.host}:{self.security.sasl_plaintext_port}"

    def client_config(self, credential: Credential | None = None) -> dict[str, str]:
        """librdkafka keys (bootstrap included) for the admin or ``credential``."""
        return self.security.client_config(self.bootstrap_servers, credential)

    def mm2_keys(self, credential: Credential, *, truststore: str = "JKS") -> dict[str, str]:
        """The cluster's keys as an MM2/SRM user writes them (Java client style)."""
        store = self.tls.truststore_jks if truststore == "JKS" else self.tls.truststore_p12
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": credential.mechanism,
            "sasl.jaas.config": credential.jaas(),
            "ssl.truststore.location": str(store),
            "ssl.truststore.password": self.tls.password,
            **({"ssl.truststore.type": "PKCS12"} if truststore == "PKCS12" else {}),
        }

    def java_properties(self, credential: Credential | None = None) -> Path:
        """A client properties file (``--command-config``) for Kafka's tools."""
        who = credential or self.admin
        keys = self.mm2_keys(who)
        keys.pop("bootstrap.servers")
        path = self.cluster.folder / f"client-{who.username}-{who.mechanism}.properties"
        path.write_text("".join(f"{key}={value}\n" for key, value in keys.items()))
        path.chmod(0o600)
        return path


def admin_password() -> str:
    return "admin-" + secrets.token_hex(8)


def write_mm2_properties(
    path: Path,
    clusters: Mapping[str, Mapping[str, str]],
    settings: Mapping[str, object] | None = None,
) -> Path:
    """An MM2-style properties file: ``clusters = a, b``, then ``<alias>.<key>`` for each
    cluster's keys (``mm2_keys``), then ``settings`` as written (``primary->backup.enabled``,
    ``replication.factor``...). Lists are joined with commas, as MM2 reads them."""

    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace("\n", "\\n")

    lines = [f"clusters = {', '.join(clusters)}"]
    for alias, keys in clusters.items():
        lines += [f"{alias}.{key} = {escape(value)}" for key, value in keys.items()]
    for key, value in (settings or {}).items():
        text = ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        if isinstance(value, bool):
            text = str(value).lower()
        lines.append(f"{key} = {escape(text)}")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)
    return path


# -- `srm-local kafka up --secured`: the local clusters, secured ---------------------------


def local_secured_clusters(
    specs: Iterable[ClusterSpec], root: Path, *, fresh: bool
) -> list[LocalKafkaCluster]:
    """Secured versions of the local clusters of ``specs`` under ``root`` (the run folder):
    SASL_SSL on each spec's port, the controller on the next, SSL (mutual TLS) and
    SASL_PLAINTEXT on the two after. The admin's password is made once and kept in
    ``<root>/secured/admin.password`` (0600): SCRAM credentials live in the formatted
    data, so a restart without ``fresh`` needs the same one."""
    folder = root / "secured"
    folder.mkdir(parents=True, exist_ok=True)
    password_file = folder / "admin.password"
    clusters = []
    for spec in specs:
        data = root / "kafka" / spec.alias
        properties = data / "server.properties"
        if not fresh and (data / "data" / "meta.properties").exists():
            secured_before = properties.exists() and "SASL_SSL" in properties.read_text()
            if not secured_before:
                raise ClusterStartError(
                    f"cluster '{spec.alias}' has plaintext data in {data}; add --fresh to"
                    " start it secured (its topics are deleted)"
                )
            if not password_file.exists():
                raise ClusterStartError(
                    f"cluster '{spec.alias}' was secured with an admin password no longer in"
                    f" {password_file}; add --fresh to start it again (its topics are deleted)"
                )
        clusters.append((spec, data))
    if not password_file.exists():
        password_file.write_text(admin_password() + "\n")
        password_file.chmod(0o600)
    admin = Credential("admin", password_file.read_text().strip())
    tls = write_tls_files(folder / "tls", "store-" + admin.password[-8:])
    made = []
    for spec, data in clusters:
        security = ClusterSecurity(
            tls=tls, admin=admin, ssl_port=spec.port + 2, sasl_plaintext_port=spec.port + 3
        )
        secured_spec = ClusterSpec(
            spec.alias, spec.port, spec.controller_port, spec.host, spec.properties, security
        )
        made.append(LocalKafkaCluster(secured_spec, data))
    return made


def write_local_client_files(clusters: Iterable[LocalKafkaCluster], root: Path) -> list[Path]:
    """For each started secured cluster, the admin's client properties (Kafka's tools:
    ``--command-config``), and one MM2-style ``srm.properties`` naming them all, in
    ``<root>/secured`` (0600: they hold the admin's password)."""
    written = []
    keys = {}
    for cluster in clusters:
        secured = SecuredCluster(cluster)
        target = root / "secured" / f"{cluster.alias}-admin.properties"
        target.write_bytes(secured.java_properties().read_bytes())
        target.chmod(0o600)
        written.append(target)
        keys[cluster.alias] = secured.mm2_keys(secured.admin)
    config = write_mm2_properties(root / "secured" / "srm.properties", keys)
    return [*written, config]
