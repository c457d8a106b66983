"""The process's Kerberos login: one principal, from its keytab, for every Python client.

librdkafka (through cyrus-sasl), aiokafka and Faust (through python-gssapi) all take
their Kerberos tickets from MIT's GSSAPI library in this process, which reads the
credential cache named by ``KRB5CCNAME`` and, when the tickets there run out, gets new
ones from the client keytab named by ``KRB5_CLIENT_KTNAME``. So the login is per process:

* on first use (the start-up probe of the clusters, or the first client built),
  :func:`log_in` points ``KRB5CCNAME`` at a credential cache in this process's memory
  (``MEMORY:``: no ticket is ever written to disk, none survives a ``kill -9``) and
  ``KRB5_CLIENT_KTNAME`` at the keytab, and gets the first tickets from the KDC. A wrong
  keytab, an unknown principal or an unreachable KDC is then one line, before any client
  tries (:class:`KerberosLoginError`), in the KDC's words: ``kinit`` tries the keytab
  first (into a cache of its own memory), since GSSAPI would only say "No credentials
  cache found";
* afterwards GSSAPI renews the tickets from the keytab by itself. librdkafka's own
  ``kinit`` timer is switched off (``sasl.kerberos.min.time.before.relogin=0``, in
  :mod:`srm_common.adapters.kafka_clients`): it would write a file cache the clients do
  not read, one ``kinit`` per client a minute.

A process logs in as one principal: the configuration check refuses GSSAPI clusters with
different logins (:mod:`srm_common.config.security_check`). The Java clients of the
copier log in by themselves from the same keytab (``Krb5LoginModule``), reading the
krb5.conf named by ``KRB5_CONFIG`` through :func:`jvm_options`.

:func:`missing_support` says why this installation cannot do GSSAPI at all: the
confluent-kafka wheel's librdkafka has no GSSAPI; ``make kerberos`` builds one that has,
and installs python-gssapi for aiokafka and Faust.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import threading

from srm_common.config.security import KerberosLogin
from srm_common.errors import SrmError

BUILD_HINT = "run `make kerberos` (docs/security.md, Kerberos)"
KINIT_TIMEOUT_S = 20.0

_lock = threading.Lock()
_current: KerberosLogin | None = None
_SILENT = logging.getLogger("srm.kafka.kerberos-check")
_SILENT.setLevel(logging.CRITICAL + 1)
_SILENT.propagate = False


class KerberosLoginError(SrmError):
    """The first Kerberos login of the process failed; ``str()`` is the whole line."""


@functools.cache
def missing_support() -> str | None:
    """Why GSSAPI cannot work in this installation, or None when it can."""
    from confluent_kafka import KafkaException, Producer

    try:
        Producer(
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "GSSAPI",
                "sasl.kerberos.min.time.before.relogin": 0,
                "logger": _SILENT,
            }
        )
    except KafkaException:
        return (
            "the librdkafka inside this confluent-kafka is built without GSSAPI (the wheel"
            f" is); {BUILD_HINT} to build one with cyrus-sasl"
        )
    try:
        import gssapi  # noqa: F401 - aiokafka and Faust need it for GSSAPI
    except ImportError:
        return f"python-gssapi is not installed (aiokafka and Faust need it); {BUILD_HINT}"
    if shutil.which("kinit") is None:
        return f"MIT's kinit is not installed (Debian's krb5-user); {BUILD_HINT}"
    return None


def log_in(login: KerberosLogin) -> None:
    """Log this process in as ``login`` once; later calls with the same login return at
    once. Raises :class:`KerberosLoginError` (one line) when the KDC refuses the keytab or
    the principal or cannot be reached, or when the process already logged in as another
    principal."""
    global _current
    with _lock:
        if _current == login:
            return
        if _current is not None:
            raise KerberosLoginError(
                f"this process already logs in to Kerberos as {_current.principal} (keytab"
                f" {_current.keytab}), so it cannot also log in as {login.principal}"
                f" (keytab {login.keytab}); give every cluster the same Kerberos login"
            )
        problem = missing_support()
        if problem is not None:
            raise KerberosLoginError(f"GSSAPI (Kerberos) cannot be used: {problem}")
        _first_tickets(login)
        _current = login


def librdkafka_keys(login: KerberosLogin) -> dict[str, str]:
    """librdkafka's keys for ``login`` (the process logs in by :func:`log_in`): its own
    ``kinit`` timer off, the principal and keytab for its logs."""
    return {
        "sasl.kerberos.service.name": login.service_name,
        "sasl.kerberos.principal": login.principal,
        "sasl.kerberos.keytab": login.keytab,
        "sasl.kerberos.min.time.before.relogin": "0",
    }


def jvm_options() -> list[str]:
    """JVM options that make Java's Kerberos read the krb5.conf the Python clients read
    (``KRB5_CONFIG``; Java ignores that variable); none when it is not set (then both
    read /etc/krb5.conf)."""
    path = os.environ.get("KRB5_CONFIG", "").strip()
    return [f"-Djava.security.krb5.conf={path}"] if path else []


def _first_tickets(login: KerberosLogin) -> None:
    import gssapi

    # GSSAPI says only "No credentials cache found" when the keytab does not fit; kinit,
    # into a cache of its own process's memory, says what is wrong (the KDC's answer).
    problem = _kinit_problem(login)
    if problem is not None:
        raise KerberosLoginError(_explain(login, problem))
    cache = f"MEMORY:srm-{os.getpid()}"
    os.environ["KRB5CCNAME"] = cache
    os.environ["KRB5_CLIENT_KTNAME"] = f"FILE:{login.keytab}"
    name = gssapi.Name(login.principal, gssapi.NameType.kerberos_principal)
    store = {b"client_keytab": login.keytab.encode(), b"ccache": cache.encode()}
    try:
        gssapi.Credentials(name=name, usage="initiate", store=store).inquire()
    except gssapi.exceptions.GSSError as exc:
        reason = " ".join(str(exc).split())
        raise KerberosLoginError(_explain(login, reason)) from None


def _kinit_problem(login: KerberosLogin) -> str | None:
    """What kinit says when it cannot log in as ``login`` (nothing is kept), or None."""
    command = [shutil.which("kinit") or "kinit", "-k", "-t", login.keytab]
    try:
        done = subprocess.run(
            [*command, "-c", "MEMORY:srm-check", login.principal],
            capture_output=True,
            text=True,
            timeout=KINIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"the KDC did not answer within {KINIT_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return f"kinit cannot run ({exc.strerror}); {BUILD_HINT}"
    if done.returncode == 0:
        return None
    lines = (done.stderr or done.stdout).strip().splitlines() or [f"exit {done.returncode}"]
    return lines[-1].removeprefix("kinit: ").removesuffix(" while getting initial credentials")


_HINTS = (
    (
        ("password incorrect", "no suitable keys", "key version", "preauthentication failed"),
        "the keytab does not hold this principal's current key: export it again"
        " (kadmin ktadd) or check keyTab= and principal= in sasl.jaas.config",
    ),
    (
        ("not found in kerberos database",),
        "the KDC does not know this principal: check principal= in sasl.jaas.config",
    ),
    (
        ("cannot contact any kdc", "cannot find kdc", "did not answer", "network address"),
        "check that the KDC is running and that the krb5.conf in KRB5_CONFIG (else"
        " /etc/krb5.conf) names it for this realm",
    ),
    (("key table",), "check keyTab= in sasl.jaas.config"),
)


def _explain(login: KerberosLogin, reason: str) -> str:
    lowered = reason.lower()
    hint = next(
        (hint for words, hint in _HINTS if any(w in lowered for w in words)),
        "check principal= and keyTab= in sasl.jaas.config and the krb5.conf in KRB5_CONFIG",
    )
    return f"Kerberos login as {login.principal} (keytab {login.keytab}) failed: {reason}; {hint}"
