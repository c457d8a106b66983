"""One cluster's security settings, read from the Java (MM2) keys and checked for both stacks.

Our clients of a cluster are of two kinds: Java (the copier's consumers and producers)
and librdkafka (admins, internal producers, the control log, the aggregator's and the
gateway's Python clients). Operators write MM2's Java keys; :func:`read_security` reads
them into one :class:`Security` that :mod:`srm_common.adapters.kafka_clients` turns into
librdkafka's keys, and refuses what one of the two stacks could not honour, with one
line naming the key (:class:`SecurityProblem`). What is supported::

    security.protocol   PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl.mechanism      PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512, with sasl.jaas.config naming
                        PlainLoginModule / ScramLoginModule, username= and password=;
                        GSSAPI (Kerberos), with sasl.jaas.config naming Krb5LoginModule,
                        useKeyTab=true, keyTab= and principal=, and the broker's service
                        name in sasl.kerberos.service.name (or serviceName= in the JAAS)
    ssl.truststore.*    JKS | PKCS12 file, or PEM (file or ssl.truststore.certificates),
                        or none (both stacks then trust the system's CAs)
    ssl.keystore.*      JKS | PKCS12 file, or PEM (file, or ssl.keystore.key plus
                        ssl.keystore.certificate.chain) for mutual TLS
    ssl.endpoint.identification.algorithm   https (default) | "" (no host name check)

GSSAPI needs the optional Kerberos build of the Python clients (``make kerberos``: the
librdkafka inside the confluent-kafka wheel has no GSSAPI), which the load-time check
(:mod:`srm_common.config.security_check`) asks for; a process logs in as one Kerberos
principal, from a keytab, whatever the cluster (its clients share one credential cache).
Refused, and why: a Kerberos login without a keytab (``useTicketCache``: the services
run unattended); OAUTHBEARER
(Java needs a login callback handler class and librdkafka its own OIDC settings, with no
common key set to translate and no token endpoint here to test against); Java class
hooks (``sasl.login.class``, ``*.callback.handler.class``, ``ssl.engine.factory.class``,
``ssl.provider``), which librdkafka cannot run; ``ssl.cipher.suites`` (Java's suite
names are not OpenSSL's); librdkafka's own keys (``sasl.username``...), which the Java
clients would ignore, each with the Java key to write instead. Keys a stack does not
need are dropped for it, knowingly (see ``JAVA_ONLY_KEYS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from srm_common.config.security_problem import SecurityProblem
from srm_common.config.tls_stores import KeyStore, TrustStore, read_keystore, read_truststore
from srm_common.jaas import JaasLogin, JaasSyntaxError, parse_jaas

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
KRB5_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
MECHANISM_MODULES = {
    "PLAIN": PLAIN_MODULE,
    "SCRAM-SHA-256": SCRAM_MODULE,
    "SCRAM-SHA-512": SCRAM_MODULE,
    "GSSAPI": KRB5_MODULE,
}
JAVA_ONLY_KEYS = frozenset(
    {
        "sasl.jaas.config",  # becomes sasl.username / sasl.password
        "sasl.mechanism",  # becomes sasl.mechanisms
        "sasl.kerberos.service.name",  # the same name for librdkafka
        # Java's ticket renewal (a login from a ticket cache); librdkafka's keys of the
        # same names mean its own kinit, which the process's login replaces.
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.kerberos.ticket.renew.jitter",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.principal.to.local.rules",  # a broker's key
        "ssl.protocol",  # Java's SSLContext name; OpenSSL negotiates the highest common
        "ssl.enabled.protocols",  # no librdkafka key; OpenSSL's minimum is TLS 1.2 here
        "ssl.keymanager.algorithm",  # which Java implementation reads the key store
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "ssl.truststore.type",  # the stores become PEM files for librdkafka
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.key.password",
    }
)
"""Java keys that never reach librdkafka as such (translated or meaningless there)."""

_REFUSED_HOOKS = {
    "sasl.login.class": "a Java login class",
    "sasl.login.callback.handler.class": "a Java callback handler",
    "sasl.client.callback.handler.class": "a Java callback handler",
    "ssl.engine.factory.class": "a Java SSL engine factory",
    "ssl.provider": "a Java security provider",
}
_LIBRDKAFKA_KEYS = {
    "sasl.username": "sasl.jaas.config (username=...)",
    "sasl.password": "sasl.jaas.config (password=...)",
    "sasl.mechanisms": "sasl.mechanism",
    "sasl.kerberos.keytab": "sasl.jaas.config (keyTab=...)",
    "sasl.kerberos.principal": "sasl.jaas.config (principal=...)",
    "ssl.key.location": "ssl.keystore.location with ssl.keystore.type=PEM",
    "ssl.certificate.location": "ssl.keystore.location with ssl.keystore.type=PEM",
    "ssl.key.pem": "ssl.keystore.key with ssl.keystore.type=PEM",
    "ssl.certificate.pem": "ssl.keystore.certificate.chain with ssl.keystore.type=PEM",
    "ssl.ca.pem": "ssl.truststore.certificates with ssl.truststore.type=PEM",
    "ssl.ca.location": "ssl.truststore.location with ssl.truststore.type=PEM",
}
"""librdkafka's names the Java clients would ignore, with the Java key to write."""


@dataclass(frozen=True)
class KerberosLogin:
    """A Kerberos login from a keytab (GSSAPI), to the brokers' ``service_name``.

    ``principal`` as written (``srm/host.example.com@EXAMPLE.COM``; without a realm the
    default realm of krb5.conf is meant). The keytab's path is not a secret; its content
    is, and is never read by the configuration code."""

    principal: str
    keytab: str
    service_name: str

    @property
    def short_name(self) -> str:
        """The Kafka user a broker makes of the principal under its default
        ``sasl.kerberos.principal.to.local.rules`` (the first component)."""
        return self.principal.split("@", 1)[0].split("/", 1)[0]


@dataclass(frozen=True)
class Security:
    """A client's security settings, checked: ``mechanism`` is set exactly when the
    protocol uses SASL, with ``username``/``password`` for PLAIN and SCRAM and
    ``kerberos`` for GSSAPI; the stores only when it uses TLS."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    truststore: TrustStore | None = None
    keystore: KeyStore | None = None
    verify_hostname: bool = True
    kerberos: KerberosLogin | None = None

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def read_security(keys: Mapping[str, str]) -> Security:
    """The security settings of one client config (Java keys).

    Raises :class:`SecurityProblem` for the first key that one of the two client stacks
    cannot honour. Keys of a layer the protocol does not use (``ssl.*`` under
    ``SASL_PLAINTEXT``) are ignored, as Kafka's clients ignore them.
    """
    protocol = keys.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise SecurityProblem(
            "security.protocol",
            "expected one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
        )
    security = Security(protocol=protocol)
    uses_tls, uses_sasl = security.uses_tls, security.uses_sasl
    for key, java in _LIBRDKAFKA_KEYS.items():
        if key in keys and (uses_sasl if key.startswith("sasl.") else uses_tls):
            raise SecurityProblem(
                key,
                f"this is librdkafka's key, which the Java clients ignore; write {java}"
                " instead (it is translated for librdkafka)",
            )
    for key, what in _REFUSED_HOOKS.items():
        if keys.get(key, "").strip() and (uses_sasl if key.startswith("sasl.") else uses_tls):
            raise SecurityProblem(
                key,
                f"{what} cannot be used: the Python clients (librdkafka) cannot run Java"
                " classes; remove it",
            )
    mechanism = username = password = kerberos = None
    if uses_sasl:
        mechanism = _read_mechanism(keys)
        if mechanism == "GSSAPI":
            kerberos = _read_kerberos(keys)
        else:
            username, password = _read_login(keys, mechanism)
    truststore = keystore = None
    verify_hostname = True
    if uses_tls:
        if keys.get("ssl.cipher.suites", "").strip():
            raise SecurityProblem(
                "ssl.cipher.suites",
                "Java's cipher suite names are not OpenSSL's, so librdkafka cannot honour"
                " them; remove the key (both stacks then negotiate strong suites)",
            )
        truststore = read_truststore(keys)
        keystore = read_keystore(keys)
        algorithm = keys.get("ssl.endpoint.identification.algorithm", "https").strip()
        if algorithm.lower() not in ("", "https"):
            raise SecurityProblem(
                "ssl.endpoint.identification.algorithm",
                "expected https (check the broker's host name) or an empty value (do not)",
            )
        verify_hostname = algorithm.lower() == "https"
    return Security(
        protocol=protocol,
        mechanism=mechanism,
        username=username,
        password=password,
        truststore=truststore,
        keystore=keystore,
        verify_hostname=verify_hostname,
        kerberos=kerberos,
    )


def _read_mechanism(keys: Mapping[str, str]) -> str:
    # Unset is Kafka's default, GSSAPI; said, since a forgotten key then asks for Kerberos.
    mechanism = keys.get("sasl.mechanism", "").strip() or "GSSAPI"
    if mechanism == "OAUTHBEARER":
        raise SecurityProblem(
            "sasl.mechanism",
            "OAUTHBEARER is not supported: the Java clients need a login callback handler"
            " and librdkafka its own OIDC settings, with no common keys to translate and"
            " no token endpoint here to test them; use SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN",
        )
    if mechanism not in MECHANISM_MODULES:
        hint = (
            " (mechanism names are case sensitive)"
            if mechanism.upper() in MECHANISM_MODULES
            else ""
        )
        raise SecurityProblem(
            "sasl.mechanism",
            f"expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or GSSAPI{hint}",
        )
    return mechanism


def _read_jaas(keys: Mapping[str, str], mechanism: str, example: str) -> JaasLogin:
    text = keys.get("sasl.jaas.config")
    if text is None or not text.strip():
        raise SecurityProblem(
            "sasl.jaas.config",
            f"{mechanism} needs the login, e.g. sasl.jaas.config ="
            f" {MECHANISM_MODULES[mechanism]} required {example};",
        )
    try:
        login = parse_jaas(text)
    except JaasSyntaxError as exc:
        raise SecurityProblem("sasl.jaas.config", f"cannot be read: {exc}") from None
    module = MECHANISM_MODULES[mechanism]
    if login.module != module:
        raise SecurityProblem(
            "sasl.jaas.config",
            f"sasl.mechanism {mechanism} needs the login module {module}, not {login.module}",
        )
    return login


def _read_login(keys: Mapping[str, str], mechanism: str) -> tuple[str, str]:
    login = _read_jaas(keys, mechanism, 'username="..." password="..."')
    if login.options.get("tokenauth", "false").lower() == "true":
        raise SecurityProblem(
            "sasl.jaas.config",
            "delegation tokens (tokenauth=true) are not supported: librdkafka cannot use them",
        )
    for option in ("username", "password"):
        if not login.options.get(option):
            raise SecurityProblem(
                "sasl.jaas.config", f'the login module has no {option}="..." option'
            )
    return login.options["username"], login.options["password"]


def _read_kerberos(keys: Mapping[str, str]) -> KerberosLogin:
    """A keytab login, as Kafka's Java client reads it: Krb5LoginModule's options and the
    service name from ``sasl.kerberos.service.name`` or the JAAS ``serviceName`` (the two
    must agree when both are given)."""
    example = 'useKeyTab=true storeKey=true keyTab="/etc/srm/srm.keytab" principal="srm@REALM"'
    login = _read_jaas(keys, "GSSAPI", example)
    options = login.options
    if options.get("useKeyTab", "false").lower() != "true":
        why = "the services run unattended, so they log in from a keytab"
        if options.get("useTicketCache", "false").lower() == "true":
            why = f"a login from a ticket cache (useTicketCache=true) is not supported: {why}"
        raise SecurityProblem("sasl.jaas.config", f"{why}; write {KRB5_MODULE} required {example};")
    for option in ("keyTab", "principal"):
        if not options.get(option, "").strip():
            raise SecurityProblem(
                "sasl.jaas.config", f'the Kerberos login has no {option}="..." option'
            )
    if not options["keyTab"].strip().startswith("/"):  # opened from other folders too
        raise SecurityProblem(
            "sasl.jaas.config", "keyTab= must be an absolute path (it is opened by every client)"
        )
    configured = keys.get("sasl.kerberos.service.name", "").strip()
    in_jaas = options.get("serviceName", "").strip()
    if configured and in_jaas and configured != in_jaas:
        raise SecurityProblem(
            "sasl.kerberos.service.name",
            "differs from serviceName= in sasl.jaas.config (Kafka refuses that); keep one",
        )
    service = configured or in_jaas
    if not service:
        raise SecurityProblem(
            "sasl.kerberos.service.name",
            "GSSAPI needs the brokers' Kerberos service name (the first part of their"
            " principal, usually kafka): set sasl.kerberos.service.name = kafka",
        )
    return KerberosLogin(options["principal"].strip(), options["keyTab"].strip(), service)
