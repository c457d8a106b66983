"""The MirrorMaker 2 runner's pure parts: its properties file, logging and command line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from srm_harness import mirrormaker
from srm_harness.mirrormaker import MirrorMaker2, log4j2_properties, properties_text

# Values that a plain "key = value" line would change on the way into MirrorMaker 2.
AWKWARD = {
    "clusters": "primary, backup",
    "topics.exclude": r".*[\-\.]internal, __.*",
    "primary->backup.topics": " leading blank",
    "replication.policy.separator": ":",
    "offset.storage.topic": "=mm2-offsets",
    "primary.group.id": "# not a comment",
    "backup.client.id": "tab\there",
    "groups": "grüppe-€-😀",
    "key with space": "multi\nline",
}

# Load through an InputStream (ISO-8859-1), as MirrorMaker.main does (Utils.loadProps);
# print each entry's UTF-16 units in hex so that the output is plain ASCII.
_JAVA_LOADER = """\
import java.io.FileInputStream;
import java.util.Properties;

public class Load {
    static String hex(String s) {
        StringBuilder out = new StringBuilder();
        for (char c : s.toCharArray()) out.append(String.format("%04x", (int) c));
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(args[0])) { props.load(in); }
        for (String key : props.stringPropertyNames()) {
            System.out.println(hex(key) + " " + hex(props.getProperty(key)));
        }
    }
}
"""


def test_properties_file_is_ascii_with_java_escapes_when_values_are_awkward() -> None:
    text = properties_text(AWKWARD)
    assert text.isascii(), "MirrorMaker reads ISO-8859-1: anything else must be \\uXXXX"
    assert text.splitlines() == [
        "clusters = primary, backup",
        r"topics.exclude = .*[\\-\\.]internal, __.*",
        r"primary->backup.topics = \ leading blank",
        r"replication.policy.separator = \:",
        r"offset.storage.topic = \=mm2-offsets",
        r"primary.group.id = \# not a comment",
        r"backup.client.id = tab\there",
        r"groups = gr\u00fcppe-\u20ac-\ud83d\ude00",
        r"key\ with\ space = multi\nline",
    ]


def test_regex_keeps_its_backslashes_when_written_for_mirrormaker() -> None:
    # The failover test's topic exclude: without doubling, Java would read ".*[-.]internal".
    assert properties_text({"topics.exclude": r".*[\-\.]internal"}) == (
        "topics.exclude = .*[\\\\-\\\\.]internal\n"
    )


@pytest.mark.skipif(shutil.which("java") is None, reason="needs a JDK to run Properties.load")
def test_java_reads_back_every_value_when_loading_the_file_as_mirrormaker_does(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(properties_text(AWKWARD), encoding="ascii")
    loader = tmp_path / "Load.java"
    loader.write_text(_JAVA_LOADER)
    out = subprocess.run(
        ["java", str(loader), str(path)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    read = {}
    for line in out.splitlines():
        key, value = (bytes.fromhex(part).decode("utf-16-be") for part in line.split(" "))
        read[key] = value
    assert read == AWKWARD


def test_client_loggers_are_at_warn_unless_asked_for_their_configuration_dumps() -> None:
    quiet, verbose = log4j2_properties(), log4j2_properties(quiet_clients=False)
    assert "rootLogger.level = INFO" in quiet and "rootLogger.level = INFO" in verbose
    assert "logger.clients.name = org.apache.kafka.clients" in quiet
    assert "logger.clients.level = WARN" in quiet
    assert "logger.config.level = WARN" in quiet
    assert verbose.startswith("status = warn\n") and "logger." not in verbose
    assert quiet.startswith(verbose), "the quiet file only adds logger levels"


def _fake_tool_command(tool: str, args: list[str], *, heap: str) -> list[str]:
    assert tool == "kafka-mirror-maker-2"
    tools_logging = "-Dlog4j2.configurationFile=/checkout/deploy/local/log4j2-tools.properties"
    return ["java", f"-Xmx{heap}", tools_logging, "-cp", "/jars/*", "MirrorMaker", *args]


def test_command_runs_mirrormaker_on_its_file_with_its_own_logging_when_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirrormaker, "tool_command", _fake_tool_command)
    folder = tmp_path / "mm2"
    mm2 = MirrorMaker2(folder, {"clusters": "a, b", "topics": r"x\.y"}, heap="256m")
    assert mm2.command == [
        "java",
        "-Xmx256m",
        f"-Dlog4j2.configurationFile={folder / 'mm2-log4j2.properties'}",
        "-cp",
        "/jars/*",
        "MirrorMaker",
        str(folder / "mm2.properties"),
    ]
    assert mm2.config.read_text() == "clusters = a, b\ntopics = x\\\\.y\n"
    assert (folder / "mm2-log4j2.properties").read_text() == log4j2_properties()
    assert mm2.log_path == folder / "mm2.log"
    assert not mm2.alive() and mm2.returncode is None and mm2.stop() is None, "never started"
    assert mm2.log_tail() == "(no MirrorMaker 2 log)"


def test_log_tail_names_the_log_and_keeps_the_last_lines_when_mirrormaker_wrote_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mirrormaker, "tool_command", _fake_tool_command)
    mm2 = MirrorMaker2(tmp_path, {"clusters": "a, b"})
    mm2.log_path.write_text("".join(f"line {i}\n" for i in range(50)))
    assert mm2.log_tail(3) == (
        f"MirrorMaker 2 log ({tmp_path / 'mm2.log'}), last lines:\nline 47\nline 48\nline 49"
    )
