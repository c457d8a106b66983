"""Apache MirrorMaker 2 in dedicated mode, from the cached Kafka jars, as a child process.

``org.apache.kafka.connect.mirror.MirrorMaker mm2.properties`` for tests that compare SRM
with the real thing. One folder per run holds what it needs and leaves behind::

    <folder>/mm2.properties          the properties, escaped for java.util.Properties
    <folder>/mm2-log4j2.properties   INFO to stdout; Kafka client loggers at WARN
    <folder>/mm2.log                 stdout and stderr of the JVM (appended)

MirrorMaker reads its file with ``Properties.load(InputStream)``: ISO-8859-1 with Java
escapes. :func:`properties_text` writes each value so that it reads back as given: a
regex backslash doubled (the regex ``a\\.b`` is the line ``topics = a\\\\.b``), any
non-ASCII character as ``\\uXXXX``.

The process runs in a session of its own: :meth:`MirrorMaker2.stop` sends SIGTERM (Connect
stops its connectors and commits its offsets) and SIGKILLs the whole session if it hangs.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from srm_common.config.properties_file import format_properties
from srm_local.tools import tool_command

_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = stdout
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = stdout
"""
# The producer, consumer and admin clients of every task and worker (a configuration
# dump per client at INFO) and AbstractConfig's unknown-key notes.
_QUIET_CLIENTS = """\
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.config.name = org.apache.kafka.common.config
logger.config.level = WARN
"""


def log4j2_properties(*, quiet_clients: bool = True) -> str:
    """MirrorMaker 2 at INFO on stdout; its Kafka clients at WARN if ``quiet_clients``
    (without, the log shows every client's configuration, as ``connect-mirror-maker.sh``
    logs)."""
    return _LOG4J2 + (_QUIET_CLIENTS if quiet_clients else "")


def properties_text(properties: Mapping[str, str]) -> str:
    """``key = value`` lines that ``java.util.Properties.load`` reads back as ``properties``
    from a byte stream (ISO-8859-1): Java escapes, and ``\\uXXXX`` for non-ASCII."""
    return "".join(
        char if char.isascii() else _utf16_escapes(char)
        for char in format_properties(properties.items())
    )


def with_logging(command: Sequence[str], logging: Path) -> list[str]:
    """A :func:`~srm_local.tools.tool_command` line logging with ``logging`` instead of
    the tools' WARN-to-stderr configuration."""
    return [
        f"-Dlog4j2.configurationFile={logging}" if arg.startswith("-Dlog4j2.") else arg
        for arg in command
    ]


class MirrorMaker2:
    """A dedicated-mode MirrorMaker 2 with its own folder (see the module docstring).

    The files are written at construction; :meth:`start` runs the process.
    """

    def __init__(
        self,
        folder: Path,
        properties: Mapping[str, str],
        *,
        heap: str = "512m",
        quiet_clients: bool = True,
    ) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.config = folder / "mm2.properties"
        self.config.write_text(properties_text(properties), encoding="ascii")
        logging = folder / "mm2-log4j2.properties"
        logging.write_text(log4j2_properties(quiet_clients=quiet_clients))
        self.log_path = folder / "mm2.log"
        self.command = with_logging(
            tool_command("kafka-mirror-maker-2", [str(self.config)], heap=heap), logging
        )
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> MirrorMaker2:
        if self.process is not None:
            raise RuntimeError(f"MirrorMaker 2 of {self.config} was already started")
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        return self

    @property
    def returncode(self) -> int | None:
        """The exit code once the process ended; None while it runs or before start."""
        return None if self.process is None else self.process.poll()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM, then SIGKILL to the session if it has not exited after ``timeout``
        seconds; the exit code (None if never started)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait(30)

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no MirrorMaker 2 log)"
        tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return f"MirrorMaker 2 log ({self.log_path}), last lines:\n" + "\n".join(tail)


def _utf16_escapes(char: str) -> str:
    """``\\uXXXX`` per UTF-16 unit, as Java spells a character (a surrogate pair above
    U+FFFF)."""
    units = char.encode("utf-16-be")
    return "".join(f"\\u{units[i : i + 2].hex()}" for i in range(0, len(units), 2))
