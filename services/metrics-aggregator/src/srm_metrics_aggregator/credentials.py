"""Faust's broker credentials from the aggregated cluster's security settings (MM2 keys)."""

from __future__ import annotations

from collections.abc import Mapping

import faust
from faust.types.auth import CredentialsT
from srm_common.adapters import kerberos
from srm_common.adapters.kafka_clients import ssl_context
from srm_common.config.security import read_security


def broker_credentials(client: Mapping[str, str]) -> CredentialsT | None:
    """SASL (with TLS under SASL_SSL; GSSAPI from the process's Kerberos login) or TLS
    credentials for ``faust.App``, or None for PLAINTEXT. A store that cannot be read
    raises ConfigError naming the key; a failed Kerberos login, KerberosLoginError."""
    security = read_security(client)
    context = ssl_context(client)
    if security.kerberos is not None:
        kerberos.log_in(security.kerberos)
        return faust.GSSAPICredentials(
            kerberos_service_name=security.kerberos.service_name, ssl_context=context
        )
    if security.uses_sasl:
        return faust.SASLCredentials(
            username=security.username,
            password=security.password,
            ssl_context=context,
            mechanism=security.mechanism,
        )
    if context is not None:
        return faust.SSLCredentials(context)
    return None
