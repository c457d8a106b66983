"""What a secured local cluster's server.properties and format step say (no broker)."""

from __future__ import annotations

from pathlib import Path

import pytest
from srm_local.clusters import ClusterSpec, LocalKafkaCluster, _listener_port
from srm_local.secured import ClusterSecurity, Credential
from srm_local.tls_files import TlsFiles


def _security() -> ClusterSecurity:
    return ClusterSecurity(
        tls=TlsFiles(Path("/tls"), "store-pw"),
        admin=Credential("admin", "admin-pw"),
        ssl_port=9303,
        sasl_plaintext_port=9304,
        scram_users={"alice": "alice-pw"},
        plain_users={"pat": "pat-pw"},
    )


def test_broker_is_secured_on_every_client_listener() -> None:
    props = _security().broker_properties("127.0.0.1", 9301, 9302)
    assert props["listeners"] == (
        "SASL_SSL://127.0.0.1:9301,CONTROLLER://127.0.0.1:9302,"
        "SSL://127.0.0.1:9303,SASL_PLAINTEXT://127.0.0.1:9304"
    )
    assert "PLAINTEXT:PLAINTEXT" not in props["listener.security.protocol.map"]
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["super.users"] == "User:admin"
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["listener.name.ssl.ssl.client.auth"] == "required"
    for listener in ("sasl_ssl", "sasl_plaintext"):
        for mechanism in ("scram-sha-512", "scram-sha-256", "plain"):
            assert f"listener.name.{listener}.{mechanism}.sasl.jaas.config" in props
    plain = props["listener.name.sasl_ssl.plain.sasl.jaas.config"]
    assert 'user_admin="admin-pw"' in plain and 'user_pat="pat-pw"' in plain


def test_scram_users_are_added_at_format_with_both_mechanisms() -> None:
    assert _security().format_arguments() == [
        "--add-scram=SCRAM-SHA-512=[name=admin,password=admin-pw]",
        "--add-scram=SCRAM-SHA-256=[name=admin,password=admin-pw]",
        "--add-scram=SCRAM-SHA-512=[name=alice,password=alice-pw]",
        "--add-scram=SCRAM-SHA-256=[name=alice,password=alice-pw]",
    ]


def test_written_properties_and_listener_port(tmp_path: Path) -> None:
    spec = ClusterSpec("primary", 9301, security=_security())
    cluster = LocalKafkaCluster(spec, tmp_path / "primary")
    cluster._write_files()
    path = tmp_path / "primary" / "server.properties"
    assert oct(path.stat().st_mode & 0o777) == "0o600"  # it holds the admin's password
    assert _listener_port(path) == 9301  # `make down` finds the SASL_SSL listener
    plain = LocalKafkaCluster(ClusterSpec("backup", 9401), tmp_path / "backup")
    plain._write_files()
    text = (tmp_path / "backup" / "server.properties").read_text()
    assert "listeners=PLAINTEXT://127.0.0.1:9401,CONTROLLER://127.0.0.1:9402" in text
    assert "sasl" not in text and "authorizer" not in text


def test_credential_jaas_and_repr() -> None:
    alice = Credential("alice", "s3cret", "SCRAM-SHA-256")
    assert alice.jaas() == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required"
        ' username="alice" password="s3cret";'
    )
    assert "s3cret" not in repr(alice)
    with pytest.raises(ValueError, match="mechanism 'GSSAPI'"):
        Credential("a", "b", "GSSAPI")


def test_local_secured_clusters_keep_one_admin_password_and_refuse_plaintext_data(
    tmp_path: Path,
) -> None:
    from srm_local.clusters import ClusterStartError
    from srm_local.secured import local_secured_clusters

    specs = [ClusterSpec("primary", 21410)]
    first = local_secured_clusters(specs, tmp_path, fresh=False)
    again = local_secured_clusters(specs, tmp_path, fresh=False)
    security = first[0].spec.security
    assert security is not None and again[0].spec.security is not None
    assert security.admin.password == again[0].spec.security.admin.password
    assert (security.ssl_port, security.sasl_plaintext_port) == (21412, 21413)
    password_file = tmp_path / "secured" / "admin.password"
    assert oct(password_file.stat().st_mode & 0o777) == "0o600"

    plain = LocalKafkaCluster(ClusterSpec("primary", 21410), tmp_path / "kafka" / "primary")
    plain._write_files()
    (tmp_path / "kafka" / "primary" / "data" / "meta.properties").write_text("formatted\n")
    with pytest.raises(ClusterStartError, match="plaintext data .* add --fresh"):
        local_secured_clusters(specs, tmp_path, fresh=False)
    assert local_secured_clusters(specs, tmp_path, fresh=True)
