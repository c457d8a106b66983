"""Secured local clusters under test: a pool of them sharing one CA and one admin, and
what a test does to one as its admin (SCRAM users, ACLs, topics).

The clusters themselves (listeners, JAAS, the broker's properties, client keys) are
:mod:`srm_local.secured`'s, which ``srm-local kafka up --secured`` also uses; this module
is the test side only (the ``kafka_secured`` fixture of ``tests/conftest.py``)::

    pool = SecuredPool(folder)                   # one CA, one admin password per pool
    cluster = pool.start("primary", "backup")["primary"]   # SecuredTestCluster, started
    alice = cluster.create_user("alice", "pw")   # Credential (SCRAM-SHA-512 by default)
    cluster.allow(alice.principal, "topic", "orders", "READ", "DESCRIBE")
    cluster.allow(alice.principal, "group", "g-", "READ", pattern="PREFIXED")
    cluster.acls()                               # [AclBinding], every ACL of the cluster
    cluster.create_topic("orders", partitions=3)
    pool.stop_all()
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from srm_local.clusters import ClusterSpec, LocalKafkaCluster
from srm_local.ports import free_ports
from srm_local.secured import (
    SCRAM_MECHANISMS,
    ClusterSecurity,
    Credential,
    SecuredCluster,
    admin_password,
)
from srm_local.tls_files import TlsFiles, write_tls_files

from srm_harness.clients import create_topic
from srm_harness.pool import start_on_fresh_ports


class SecuredTestCluster(SecuredCluster):
    """A started secured cluster (:class:`srm_local.secured.SecuredCluster`) and what a
    test does to it as its admin."""

    def admin_client(self, credential: Credential | None = None):  # type: ignore[no-untyped-def]
        from confluent_kafka.admin import AdminClient

        return AdminClient(self.client_config(credential))

    def create_user(
        self,
        username: str,
        password: str,
        mechanism: str = "SCRAM-SHA-512",
        *,
        with_kafka_configs: bool = False,
    ) -> Credential:
        """A SCRAM user, made through the Admin API (AlterUserScramCredentials, 4096
        iterations: the request ``kafka-configs --alter --add-config`` sends, without a
        JVM start per user) or, ``with_kafka_configs``, with Kafka's own ``kafka-configs``
        as an operator would (docs/security.md); waits until it can log in (the
        credential reaches the broker through the metadata log)."""
        credential = Credential(username, password, mechanism)
        if mechanism not in SCRAM_MECHANISMS:
            raise ValueError(f"{mechanism} users are static: pass plain_users to SecuredPool")
        if with_kafka_configs:
            self._create_user_with_kafka_configs(credential)
        else:
            from confluent_kafka.admin import (
                ScramCredentialInfo,
                ScramMechanism,
                UserScramCredentialUpsertion,
            )

            upsert = UserScramCredentialUpsertion(
                username,
                ScramCredentialInfo(ScramMechanism[mechanism.replace("-", "_")], 4096),
                password.encode(),
            )
            client = self.admin_client()  # must outlive its future
            client.alter_user_scram_credentials([upsert])[username].result(30)
        self.wait_can_log_in(credential)
        return credential

    def _create_user_with_kafka_configs(self, credential: Credential) -> None:
        from srm_local.tools import run_tool  # Kafka's own kafka-configs, as an operator

        result = run_tool(
            "kafka-configs",
            [
                "--bootstrap-server",
                self.bootstrap_servers,
                "--command-config",
                str(self.java_properties()),
                "--alter",
                "--add-config",
                f"{credential.mechanism}=[password={credential.password}]",
                "--entity-type",
                "users",
                "--entity-name",
                credential.username,
            ],
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"kafka-configs could not add user {credential.username} on {self.alias}:"
                f" {result.stdout}{result.stderr}".replace(credential.password, "***")
            )

    def wait_can_log_in(self, credential: Credential, timeout: float = 20) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        while True:
            client = AdminClient({**self.client_config(credential), "log_level": 0})
            try:
                client.list_topics(timeout=3)
                return
            except Exception:  # noqa: BLE001 - authentication fails until the user arrives
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{credential.username} cannot log in to {self.alias} after {timeout} s"
                    ) from None
                time.sleep(0.3)

    def allow(
        self,
        principal: str,
        resource_type: str,
        name: str,
        *operations: str,
        pattern: str = "LITERAL",
        host: str = "*",
    ) -> None:
        """ALLOW ACLs: ``allow("User:alice", "topic", "orders", "READ", "DESCRIBE")``;
        resource types topic, group, cluster (name ``kafka-cluster``), transactional_id."""
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        bindings = [
            AclBinding(
                # librdkafka calls Kafka's CLUSTER resource (code 4) BROKER.
                ResourceType[
                    "BROKER" if resource_type.upper() == "CLUSTER" else resource_type.upper()
                ],
                name,
                ResourcePatternType[pattern.upper()],
                principal,
                host,
                AclOperation[operation.upper()],
                AclPermissionType.ALLOW,
            )
            for operation in operations
        ]
        client = self.admin_client()
        for future in client.create_acls(bindings).values():
            future.result(30)

    def acls(self) -> list[object]:
        """Every ACL binding on the cluster."""
        from confluent_kafka.admin import (
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        any_acl = AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        client = self.admin_client()  # must outlive its future
        return list(client.describe_acls(any_acl).result(30))

    def create_topic(
        self, name: str, *, partitions: int = 1, config: Mapping[str, str] | None = None
    ) -> str:
        create_topic(
            self.bootstrap_servers,
            name,
            partitions=partitions,
            config=config,
            client=self.client_config(),
        )
        return name


@dataclass
class SecuredPool:
    """Secured clusters by alias sharing one CA and one admin; started on demand."""

    folder: Path
    admin: Credential = field(default_factory=lambda: Credential("admin", admin_password()))
    scram_users: Mapping[str, str] = field(default_factory=dict)
    plain_users: Mapping[str, str] = field(default_factory=dict)
    started: dict[str, SecuredTestCluster] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def tls(self) -> TlsFiles:
        return write_tls_files(self.folder / "tls", "store-" + self.admin.password[-8:])

    def start(self, *aliases: str, attempts: int = 3) -> dict[str, SecuredTestCluster]:
        """The clusters of ``aliases``, starting those not running (in parallel)."""
        with self._lock:
            missing = [a for a in aliases if a not in self.started]
            if missing:
                tls = self.tls
                clusters = start_on_fresh_ports(
                    lambda: [self._cluster(alias, tls) for alias in missing],
                    self.timings,
                    attempts,
                )
                self.started.update({c.alias: SecuredTestCluster(c) for c in clusters})
        return {alias: self.started[alias] for alias in aliases}

    def _cluster(self, alias: str, tls: TlsFiles) -> LocalKafkaCluster:
        port, _controller, ssl_port, plaintext_port = free_ports(4)
        security = ClusterSecurity(
            tls=tls,
            admin=self.admin,
            ssl_port=ssl_port,
            sasl_plaintext_port=plaintext_port,
            scram_users=self.scram_users,
            plain_users=self.plain_users,
        )
        spec = ClusterSpec(alias, port, security=security)
        return LocalKafkaCluster(spec, self.folder / "kafka" / alias)

    def stop_all(self) -> None:
        for cluster in self.started.values():
            cluster.cluster.stop()
        self.started.clear()
