"""Kerberos (GSSAPI) in MM2's keys: what loads, what librdkafka and aiokafka get, what is
refused (one line naming <alias>.<key>), and how a failed login reads. No KDC here: the
real login is tests/integration/test_kerberos_replication.py."""

from __future__ import annotations

import pytest
from srm_common.adapters import kerberos
from srm_common.adapters.kafka_clients import librdkafka_security
from srm_common.config import parse_properties_text
from srm_common.config.security import KerberosLogin, Security, read_security
from srm_common.errors import ConfigError

BASE = (
    "clusters = primary, backup\n"
    "primary.bootstrap.servers = p:9092\nbackup.bootstrap.servers = b:9092\n"
)
KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
JAAS = (
    f'{KRB5} required useKeyTab=true storeKey=true keyTab="/etc/srm/srm.keytab"'
    ' principal="srm/h@EX.COM";'
)
GSSAPI = (
    "security.protocol = SASL_PLAINTEXT\nsasl.mechanism = GSSAPI\n"
    f"sasl.kerberos.service.name = kafka\nsasl.jaas.config = {JAAS}\n"
)


PRIMARY = "".join(f"primary.{line}\n" for line in GSSAPI.splitlines())


def load(body: str):
    return parse_properties_text(BASE + body, "mm2.properties")


def refusal(body: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(body)
    message = str(caught.value)
    assert "\n" not in message, f"one line expected, got {message!r}"
    return message


def test_a_keytab_login_loads_for_every_cluster_when_written_at_top_level() -> None:
    config = load(GSSAPI)
    keys = config.flows[("primary", "backup")].target_producer
    assert keys["sasl.jaas.config"] == JAAS, "the Java clients get the keys unchanged"
    login = read_security(keys).kerberos
    assert login == KerberosLogin("srm/h@EX.COM", "/etc/srm/srm.keytab", "kafka")
    assert login.short_name == "srm"


def test_the_service_name_may_come_from_the_jaas_config() -> None:
    jaas = JAAS.replace("useKeyTab", 'serviceName="kafka-b" useKeyTab')
    keys = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "GSSAPI",
        "sasl.jaas.config": jaas,
    }
    assert read_security(keys).kerberos.service_name == "kafka-b"


@pytest.mark.parametrize(
    ("body", "key", "why"),
    [
        (
            PRIMARY.replace("useKeyTab=true", "useTicketCache=true"),
            "primary.sasl.jaas.config",
            "ticket cache (useTicketCache=true) is not supported",
        ),
        (
            PRIMARY.replace('keyTab="/etc/srm/srm.keytab" ', ""),
            "primary.sasl.jaas.config",
            "no keyTab=",
        ),
        (
            PRIMARY.replace(' principal="srm/h@EX.COM"', ""),
            "primary.sasl.jaas.config",
            "no principal=",
        ),
        (
            PRIMARY.replace("/etc/srm/srm.keytab", "srm.keytab"),
            "primary.sasl.jaas.config",
            "absolute path",
        ),
        (
            PRIMARY.replace("primary.sasl.kerberos.service.name = kafka\n", ""),
            "primary.sasl.kerberos.service.name",
            "set sasl.kerberos.service.name = kafka",
        ),
        (
            PRIMARY.replace("useKeyTab", 'serviceName="other" useKeyTab'),
            "primary.sasl.kerberos.service.name",
            "differs from serviceName=",
        ),
        (
            PRIMARY.replace(KRB5, "org.apache.kafka.common.security.plain.PlainLoginModule"),
            "primary.sasl.jaas.config",
            f"needs the login module {KRB5}",
        ),
        (
            PRIMARY + "primary.sasl.kerberos.keytab = /k\n",
            "primary.sasl.kerberos.keytab",
            "keyTab=...",
        ),
        (
            GSSAPI + f"backup.sasl.jaas.config = {JAAS.replace('srm/h', 'other/h')}\n",
            "backup.sasl.jaas.config",
            "one Kerberos login",
        ),
    ],
)
def test_a_kerberos_setting_that_cannot_work_is_one_line_naming_the_key(
    body: str, key: str, why: str
) -> None:
    message = refusal(body)
    assert f"key '{key}'" in message, message
    assert why in message, message


def test_librdkafka_gets_the_service_and_no_kinit_timer_when_translated() -> None:
    login = KerberosLogin("srm@EX.COM", "/k/srm.keytab", "kafka")
    security = Security(protocol="SASL_PLAINTEXT", mechanism="GSSAPI", kerberos=login)
    assert librdkafka_security(security) == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.principal": "srm@EX.COM",
        "sasl.kerberos.keytab": "/k/srm.keytab",
        "sasl.kerberos.min.time.before.relogin": "0",
    }


def test_a_login_without_gssapi_support_names_make_kerberos(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(kerberos, "missing_support", lambda: "the wheel has no GSSAPI")
    monkeypatch.setattr(kerberos, "_current", None)
    with pytest.raises(kerberos.KerberosLoginError) as caught:
        kerberos.log_in(KerberosLogin("srm@EX.COM", "/k/srm.keytab", "kafka"))
    assert str(caught.value) == "GSSAPI (Kerberos) cannot be used: the wheel has no GSSAPI"


def test_a_second_principal_in_one_process_is_refused(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    first = KerberosLogin("srm@EX.COM", "/k/srm.keytab", "kafka")
    monkeypatch.setattr(kerberos, "_current", first)
    kerberos.log_in(first)  # the same login again: nothing to do
    with pytest.raises(kerberos.KerberosLoginError, match="already logs in to Kerberos as srm@"):
        kerberos.log_in(KerberosLogin("other@EX.COM", "/k/other.keytab", "kafka"))


@pytest.mark.parametrize(
    ("kdc_says", "hint"),
    [
        ("Password incorrect", "export it again"),
        ("Client 'x@EX.COM' not found in Kerberos database", "does not know this principal"),
        ("Cannot contact any KDC for realm 'EX.COM'", "KDC is running"),
        ("Key table file '/k' not found", "check keyTab="),
    ],
)
def test_a_failed_login_says_what_to_check(kdc_says: str, hint: str) -> None:
    login = KerberosLogin("srm@EX.COM", "/k/srm.keytab", "kafka")
    line = kerberos._explain(login, kdc_says)
    assert line.startswith(
        f"Kerberos login as srm@EX.COM (keytab /k/srm.keytab) failed: {kdc_says};"
    )
    assert hint in line


def test_java_reads_the_krb5_conf_the_python_clients_read(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("KRB5_CONFIG", "/run/krb5.conf")
    assert kerberos.jvm_options() == ["-Djava.security.krb5.conf=/run/krb5.conf"]
    monkeypatch.delenv("KRB5_CONFIG")
    assert kerberos.jvm_options() == []
