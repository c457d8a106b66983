"""Config providers (${file:...}, ${env:...}, ${directory:...}) resolved at load, and the
redaction of what they resolved."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from srm_common.config import load_config
from srm_common.errors import ConfigError
from srm_common.redaction import (
    MASK,
    RedactingFilter,
    forget_secrets,
    is_secret_key,
    redact_config,
    redact_text,
)

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
BASE = (
    "clusters = primary, backup\n"
    "primary.bootstrap.servers = p:9092\nbackup.bootstrap.servers = b:9092\n"
)


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def write(tmp_path: Path, body: str, name: str = "mm2.properties") -> Path:
    path = tmp_path / name
    path.write_text(BASE + body)
    return path


def test_a_jaas_config_comes_from_a_properties_file_when_written_as_file_placeholder(
    tmp_path: Path,
) -> None:
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f'primary.jaas = {SCRAM} required username="srm" password="f1le-pw";\n')
    path = write(
        tmp_path,
        "config.providers = file\n"
        "config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n"
        "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = SCRAM-SHA-512\n"
        f"primary.sasl.jaas.config = ${{file:{secrets}:primary.jaas}}\n",
    )
    config = load_config(path)
    jaas = config.clusters["primary"].client["sasl.jaas.config"]
    assert jaas.endswith('password="f1le-pw";')
    assert redact_text(f"error: {jaas} / f1le-pw") == f"error: {MASK} / {MASK}"


def test_env_and_directory_placeholders_resolve_without_a_declaration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pw").write_text("d1r-secret")
    monkeypatch.setenv("SRM_TEST_TRUST_PW", "env-Secret")
    path = write(
        tmp_path,
        "primary.security.protocol = SSL\n"
        "primary.ssl.truststore.location = /t.jks\n"
        "primary.ssl.truststore.password = ${env:SRM_TEST_TRUST_PW}\n"
        "primary.ssl.keystore.location = /k.jks\n"
        f"primary.ssl.keystore.password = pre-${{directory:{tmp_path}:pw}}\n",
    )
    client = load_config(path).clusters["primary"].client
    assert client["ssl.truststore.password"] == "env-Secret"
    assert client["ssl.keystore.password"] == "pre-d1r-secret", "text around is kept"
    assert "env-Secret" not in redact_text("x env-Secret y")


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("${env:SRM_TEST_SURELY_UNSET}", "environment variable SRM_TEST_SURELY_UNSET is not set"),
        ("${file:/nonexistent/s.properties:k}", "properties file /nonexistent/s.properties does"),
        ("${file:SECRETS:absent}", "key 'absent' is not in the properties file"),
        ("${directory:DIR:nope}", "file nope in directory"),
        ("${directory:DIR:../escape}", "must stay inside the directory"),
        ("${vault:/x:y}", "unknown config provider 'vault'"),
        ("${file:k}", "needs a path"),
    ],
)
def test_an_unresolvable_placeholder_is_one_line_naming_the_key(
    tmp_path: Path, value: str, why: str
) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("present = yes-Secret\n")
    value = value.replace("SECRETS", str(secrets)).replace("DIR", str(tmp_path))
    path = write(tmp_path, f"primary.ssl.truststore.password = {value}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message and "key 'primary.ssl.truststore.password'" in message
    assert why in message, message
    assert "yes-Secret" not in message


def test_a_declared_custom_provider_is_refused_when_a_placeholder_uses_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "config.providers = vault\nconfig.providers.vault.class = com.example.VaultProvider\n"
        "primary.ssl.truststore.password = ${vault:/secret:pw}\n",
    )
    with pytest.raises(ConfigError, match="config provider 'vault' cannot be used.*not one of"):
        load_config(path)


def test_only_declared_providers_resolve_when_config_providers_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SRM_TEST_X", "value-x")
    path = write(
        tmp_path, "config.providers = file\nprimary.ssl.truststore.password = ${env:SRM_TEST_X}\n"
    )
    with pytest.raises(ConfigError, match="unknown config provider 'env'.*declared in"):
        load_config(path)


def test_secret_keys_are_masked_when_a_config_is_shown() -> None:
    shown = redact_config(
        {
            "bootstrap.servers": "h:1",
            "sasl.jaas.config": "x",
            "primary.consumer.ssl.key.password": "y",
            "ssl.keystore.key": "z",
            "sasl.password": "w",
            "ssl.truststore.location": "/t.jks",
        }
    )
    assert shown == {
        "bootstrap.servers": "h:1",
        "sasl.jaas.config": MASK,
        "primary.consumer.ssl.key.password": MASK,
        "ssl.keystore.key": MASK,
        "sasl.password": MASK,
        "ssl.truststore.location": "/t.jks",
    }
    assert is_secret_key("srm.http.tokens.secret") and not is_secret_key("ssl.keystore.type")


def test_the_password_inside_a_jaas_config_is_masked_when_logged_alone(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "primary.security.protocol = SASL_PLAINTEXT\nprimary.sasl.mechanism = SCRAM-SHA-256\n"
        f"primary.sasl.jaas.config = {SCRAM} required username=srm-user password='Hunter2-x';\n",
    )
    load_config(path)
    record = logging.LogRecord(
        "t", logging.ERROR, __file__, 1, "auth failed for %s", ("Hunter2-x",), None
    )
    assert RedactingFilter().filter(record)
    assert record.getMessage() == f"auth failed for {MASK}"
    assert redact_text("login as srm-user") == "login as srm-user", "user names stay readable"


def test_short_and_numeric_values_are_not_remembered_when_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SRM_TEST_TASKS", "4")
    load_config(write(tmp_path, "tasks.max = ${env:SRM_TEST_TASKS}\n"))
    assert redact_text("tasks.max 4") == "tasks.max 4", "masking '4' would blank every number"


def test_a_client_config_with_placeholders_put_back_resolves_where_the_client_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy slots' path: the driver hands placeholders over (with_placeholders), the
    slot resolves them itself (resolve_client_keys); no secret crossed in between."""
    from srm_common.config.providers import (
        ProviderError,
        forget_placeholders,
        resolve_client_keys,
        with_placeholders,
    )

    forget_placeholders()
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f'primary.jaas = {SCRAM} required username="srm" password="f1le-pw";\n')
    monkeypatch.setenv("SRM_TRUST_PW", "env-pw-123")
    path = write(
        tmp_path,
        "primary.security.protocol = SASL_SSL\nprimary.sasl.mechanism = SCRAM-SHA-512\n"
        f"primary.sasl.jaas.config = ${{file:{secrets}:primary.jaas}}\n"
        "primary.ssl.truststore.password = ${env:SRM_TRUST_PW}\n",
    )
    client = dict(load_config(path).clusters["primary"].client)
    sent = with_placeholders(client)
    assert "f1le-pw" not in str(sent) and "env-pw-123" not in str(sent)
    assert sent["config.providers"] == "env,file"
    resolved = resolve_client_keys(sent)
    assert resolved == client, "the same keys, resolved, no declarations left"
    assert resolve_client_keys({"a": "${not:a:placeholder}"}) == {"a": "${not:a:placeholder}"}
    monkeypatch.delenv("SRM_TRUST_PW")
    with pytest.raises(ProviderError, match="ssl.truststore.password: environment variable"):
        resolve_client_keys(sent)
    forget_placeholders()
