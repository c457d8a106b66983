"""A local MIT KDC for Kerberos clusters and tests: its own realm, database and keytabs.

Debian's ``krb5-kdc`` and ``krb5-admin-server`` (``make kerberos`` installs them) give
``kdb5_util``, ``kadmin.local`` and ``krb5kdc``. Everything lives in one folder::

    krb5.conf     the clients' configuration: realm SRM.LOCAL, its KDC on 127.0.0.1:<port>
                  over TCP, no DNS; KRB5_CONFIG for librdkafka, kinit and python-gssapi,
                  -Djava.security.krb5.conf for the JVMs
    kdc.conf      the KDC's (KRB5_KDC_PROFILE): database, stash, ports, log
    principal*    the database (made with a random master key, kept in the stash)
    keytabs/      one keytab per principal, 0600
    kdc.log, krb5kdc.pid

API (tests use it through the ``kafka_kerberos`` fixture of ``tests/conftest.py``)::

    kdc = Kdc(folder); kdc.start()              # a free loopback port; waits until it answers
    keytab = kdc.add_principal("driver")        # driver@SRM.LOCAL with a random key
    kdc.add_principal("kafka/localhost")        # a service's principal
    kdc.keytab("driver")                        # its keytab's path
    kdc.stale_keytab("driver")                  # a keytab with a key the KDC no longer has
    kdc.env()                                   # {"KRB5_CONFIG": ...}
    kdc.stop()

A realm lives as long as its folder; ``start`` on a folder with a database reuses it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from srm_local.ports import free_ports

REALM = "SRM.LOCAL"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")
DEBIAN_PACKAGES = "krb5-kdc krb5-admin-server krb5-user"


class KdcError(RuntimeError):
    """The KDC could not be set up or started; the message says why and what to install."""


def missing_tools() -> list[str]:
    """The MIT Kerberos programs this module needs that are not installed."""
    return [tool for tool in TOOLS if _which(tool) is None]


class Kdc:
    """One realm's KDC in ``folder``; see the module docstring."""

    def __init__(self, folder: Path, realm: str = REALM) -> None:
        self.folder = folder
        self.realm = realm
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def krb5_conf(self) -> Path:
        return self.folder / "krb5.conf"

    @property
    def pid_file(self) -> Path:
        return self.folder / "krb5kdc.pid"

    def env(self) -> dict[str, str]:
        """What a client process needs to find this realm."""
        return {"KRB5_CONFIG": str(self.krb5_conf)}

    def start(self, timeout: float = 30.0) -> None:
        missing = missing_tools()
        if missing:
            raise KdcError(
                f"{', '.join(missing)} not installed: run `make kerberos` (or apt-get"
                f" install {DEBIAN_PACKAGES})"
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "keytabs").mkdir(mode=0o700, exist_ok=True)
        self.port = free_ports(1)[0]
        self._write_configuration()
        if not (self.folder / "principal").exists():
            master = secrets.token_hex(16)
            self._run(["kdb5_util", "create", "-s", "-r", self.realm, "-P", master], "create")
        log = (self.folder / "console.log").open("ab")
        self._process = subprocess.Popen(
            [_tool("krb5kdc"), "-n", "-r", self.realm, "-P", str(self.pid_file)],
            env=self._kdc_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while not _answers(self.port):
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise KdcError(f"krb5kdc did not start: {self._tail()}")
            time.sleep(0.1)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.pid_file.unlink(missing_ok=True)

    def add_principal(self, name: str) -> Path:
        """``name@REALM`` with a random key, and its keytab (made again if it exists)."""
        self._admin(f"addprinc -randkey {name}")
        return self.export_keytab(name)

    def export_keytab(self, name: str) -> Path:
        """The keytab of ``name``, exported again (``ktadd`` makes a new key: keytabs
        exported before hold a key the KDC no longer accepts)."""
        path = self.keytab(name)
        path.unlink(missing_ok=True)
        self._admin(f"ktadd -k {path} {name}")
        path.chmod(0o600)
        return path

    def keytab(self, name: str) -> Path:
        return self.folder / "keytabs" / f"{name.replace('/', '_')}.keytab"

    def stale_keytab(self, name: str) -> Path:
        """A copy of ``name``'s keytab whose key the KDC no longer has: the current
        keytab is copied, then the principal gets new keys (so its keytab is exported
        again). A "wrong keytab" as an operator meets it after a key rotation."""
        stale = self.folder / "keytabs" / f"{name.replace('/', '_')}.stale.keytab"
        shutil.copyfile(self.keytab(name), stale)
        stale.chmod(0o600)
        self.export_keytab(name)
        return stale

    def principal(self, name: str) -> str:
        return f"{name}@{self.realm}"

    def _write_configuration(self) -> None:
        folder, realm, port = self.folder, self.realm, self.port
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f"    default_realm = {realm}\n"
            "    dns_lookup_kdc = false\n"
            "    dns_lookup_realm = false\n"
            "    dns_canonicalize_hostname = false\n"
            "    rdns = false\n"
            "    udp_preference_limit = 1\n"  # TCP: the port checked free is a TCP one
            "    ticket_lifetime = 1h\n"
            "    renew_lifetime = 2h\n"
            "[realms]\n"
            f"    {realm} = {{\n"
            f"        kdc = 127.0.0.1:{port}\n"
            "    }\n"
            "[domain_realm]\n"
            f"    localhost = {realm}\n"
        )
        (folder / "kdc.conf").write_text(
            "[kdcdefaults]\n"
            f"    kdc_listen = 127.0.0.1:{port}\n"
            f"    kdc_tcp_listen = 127.0.0.1:{port}\n"
            "[realms]\n"
            f"    {realm} = {{\n"
            f"        database_name = {folder / 'principal'}\n"
            f"        key_stash_file = {folder / 'stash'}\n"
            f"        acl_file = {folder / 'kadm5.acl'}\n"
            "        max_life = 1h\n"
            "        max_renewable_life = 2h\n"
            "        supported_enctypes = aes256-cts-hmac-sha1-96:normal"
            " aes128-cts-hmac-sha1-96:normal\n"
            "    }\n"
            "[logging]\n"
            f"    kdc = FILE:{folder / 'kdc.log'}\n"
        )
        (folder / "kadm5.acl").write_text("")

    def _kdc_env(self) -> dict[str, str]:
        return {
            **os.environ,
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.folder / "kdc.conf"),
        }

    def _admin(self, query: str) -> None:
        self._run(["kadmin.local", "-r", self.realm, "-q", query], query.split()[0])

    def _run(self, command: list[str], what: str) -> None:
        done = subprocess.run(
            [_tool(command[0]), *command[1:]],
            env=self._kdc_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0 or "error" in done.stderr.lower():
            raise KdcError(f"{command[0]} {what} failed: {(done.stdout + done.stderr).strip()}")

    def _tail(self) -> str:
        lines = []
        for name in ("console.log", "kdc.log"):
            path = self.folder / name
            if path.exists():
                lines += path.read_text(errors="replace").splitlines()[-10:]
        return "\n".join(lines) or "(no log)"


def _which(tool: str) -> str | None:
    return shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")


def _tool(name: str) -> str:
    return _which(name) or name


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0
