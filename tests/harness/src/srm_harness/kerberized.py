"""Local clusters whose clients log in with Kerberos (SASL/GSSAPI), against a local MIT KDC.

Each cluster of a :class:`KerberosPool` is a single KRaft node listening on::

    PLAINTEXT       spec.port        127.0.0.1, the harness's own clients (User:ANONYMOUS)
    CONTROLLER      spec.port + 1    PLAINTEXT, loopback, the node itself
    SASL_PLAINTEXT  gssapi_port      localhost, GSSAPI only: the broker is
                                     kafka/localhost@SRM.LOCAL (its keytab from the KDC)

with ``StandardAuthorizer``, ``allow.everyone.if.no.acl.found=false`` and
``super.users=User:ANONYMOUS;User:<srm>``: on the GSSAPI listener only the principal the
pool was made for (``srm@SRM.LOCAL`` becomes ``User:srm`` under Kafka's default
``sasl.kerberos.principal.to.local.rules``) gets anything done; any other principal,
even with a good keytab, is refused by the authorizer.

The GSSAPI listener is ``localhost``, not ``127.0.0.1``: a Kerberos client asks for the
ticket of ``kafka/<the broker's host name>``, and Java and librdkafka agree on the name
only when it is one (krb5.conf turns off DNS canonicalisation: :mod:`srm_harness.kdc`).

API (``tests/integration/test_kerberos_replication.py``)::

    pool = KerberosPool(folder)                     # a KDC (started) and its realm
    pool.kdc.principal("srm")                       # "srm@SRM.LOCAL"; keytab: pool.keytab
    clusters = pool.start("primary", "backup")      # KerberizedCluster by alias
    clusters["primary"].bootstrap_servers           # PLAINTEXT, for the harness
    clusters["primary"].mm2_keys()                  # what an SRM/MM2 user writes: GSSAPI
    pool.env()                                      # KRB5_CONFIG for the product's processes
    pool.stop_all()                                 # clusters and KDC
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from srm_local.clusters import ClusterSpec, LocalKafkaCluster, start_clusters
from srm_local.ports import free_ports

from srm_harness.kdc import Kdc

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
KRB5_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
SERVICE = "kafka"
BROKER_HOST = "localhost"


def krb5_jaas(principal: str, keytab: Path | str) -> str:
    """A keytab login as Kafka's Java clients (and SRM) read it."""
    return (
        f'{KRB5_MODULE} required useKeyTab=true storeKey=true keyTab="{keytab}"'
        f' principal="{principal}";'
    )


@dataclass
class KerberizedCluster:
    """A started cluster of a :class:`KerberosPool`."""

    cluster: LocalKafkaCluster
    gssapi_port: int
    principal: str  # the product's Kerberos principal
    keytab: Path

    alias = property(lambda self: self.cluster.alias)
    bootstrap_servers = property(lambda self: self.cluster.bootstrap_servers)

    @property
    def gssapi_bootstrap_servers(self) -> str:
        return f"{BROKER_HOST}:{self.gssapi_port}"

    def mm2_keys(
        self, *, principal: str | None = None, keytab: Path | None = None
    ) -> dict[str, str]:
        """The cluster's keys as an SRM/MM2 user writes them for a Kerberos login."""
        return {
            "bootstrap.servers": self.gssapi_bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "GSSAPI",
            "sasl.kerberos.service.name": SERVICE,
            "sasl.jaas.config": krb5_jaas(principal or self.principal, keytab or self.keytab),
        }


@dataclass
class KerberosPool:
    """A KDC and clusters by alias sharing it; see the module docstring."""

    folder: Path
    user: str = "srm"
    started: dict[str, KerberizedCluster] = field(default_factory=dict)
    kdc: Kdc = field(init=False)

    def __post_init__(self) -> None:
        self.kdc = Kdc(self.folder / "kdc")
        self.kdc.start()
        try:
            self.broker_keytab = self.kdc.add_principal(f"{SERVICE}/{BROKER_HOST}")
            self.keytab = self.kdc.add_principal(self.user)
        except Exception:
            self.kdc.stop()
            raise

    def env(self) -> dict[str, str]:
        return self.kdc.env()

    def start(self, *aliases: str) -> dict[str, KerberizedCluster]:
        missing = [alias for alias in aliases if alias not in self.started]
        clusters = [self._cluster(alias) for alias in missing]
        if clusters:
            try:
                start_clusters([c.cluster for c in clusters], fresh=True)
            except Exception:
                for cluster in clusters:
                    cluster.cluster.stop()
                raise
            self.started.update({c.alias: c for c in clusters})
        return {alias: self.started[alias] for alias in aliases}

    def _cluster(self, alias: str) -> KerberizedCluster:
        port, controller, gssapi_port = free_ports(3)
        properties = self._broker_properties(port, controller, gssapi_port)
        spec = ClusterSpec(
            alias,
            port,
            controller_port=controller,
            properties=properties,
            jvm_options=(f"-Djava.security.krb5.conf={self.kdc.krb5_conf}",),
        )
        cluster = LocalKafkaCluster(spec, self.folder / "kafka" / alias)
        return KerberizedCluster(cluster, gssapi_port, self.kdc.principal(self.user), self.keytab)

    def _broker_properties(self, port: int, controller: int, gssapi_port: int) -> Mapping[str, str]:
        broker = self.kdc.principal(f"{SERVICE}/{BROKER_HOST}")
        return {
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller},"
                f"SASL_PLAINTEXT://{BROKER_HOST}:{gssapi_port}"
            ),
            "advertised.listeners": (
                f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://{BROKER_HOST}:{gssapi_port}"
            ),
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT"
            ),
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "GSSAPI",
            "sasl.kerberos.service.name": SERVICE,
            "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": krb5_jaas(
                broker, self.broker_keytab
            ),
            "authorizer.class.name": AUTHORIZER,
            "allow.everyone.if.no.acl.found": "false",
            "super.users": f"User:ANONYMOUS;User:{self.user}",
        }

    def stop_all(self) -> None:
        for cluster in self.started.values():
            cluster.cluster.stop()
        self.started.clear()
        self.kdc.stop()
