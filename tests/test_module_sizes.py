"""Modules stay under about 400 lines and classes under about 250 (docs/architecture.md),
or say at their top why not.

A module or class past the limit holds several concepts more often than not; split it
along them. Where one concept is longer (state that must move in step under one lock,
a loop that every record runs through), it is listed in :data:`LONGER` with its reason,
the size it may reach, and the reason is stated at its top as well: the class's or the
module's docstring says how many lines and why ("about 330 lines: ...") for the next
reader, who does not read this file. "About" is :data:`SLACK` lines.

The test reads the source (ast) of the packages (libs/, services/, the launcher and the
image scripts under deploy/, the bench, and the test harness, tests/harness), not their
tests. A failure names each module or class, its size and what to do.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULE_LINES = 400
CLASS_LINES = 250
SLACK = 10

# Longer than the limit on purpose: "path" or "path:Class" -> (at most lines, why).
LONGER: dict[str, tuple[int, str]] = {
    "services/driver/src/srm_driver/copier/sender.py:Sender": (
        350,
        "the send path and the acknowledgements share the producer and its state and run"
        " for every record; split further, each record would cross one more object",
    ),
    "services/coordinator/src/srm_coordinator/service.py:Coordinator": (
        340,
        "what outlives a term of leading: the log's replay, the election loop, the command"
        " queue and the API's views over the same follower and term",
    ),
    "services/driver/src/srm_driver/copier/unit.py:FlowUnit": (
        310,
        "the copy loop, its stop and its failures share one state under one lock (and the"
        " loop is cut into the steps the batch unit overrides)",
    ),
    "services/driver/src/srm_driver/copier/batch_unit.py:BatchUnit": (
        320,
        "FlowUnit's steps for whole batches (fetch, decide, send, take answers, break,"
        " close) read and write the unit's one state under its one lock, as FlowUnit's do"
        " (the decisions and the memory of refused batches are batch_rebuild's)",
    ),
    "services/driver/src/srm_driver/copier/partition.py:PartitionCopy": (
        300,
        "one partition's copy: the record and the batch paths share the plan's offset"
        " check, the reservation and the offset-sync rule over the same slots",
    ),
    "libs/srm_common/src/srm_common/adapters/event_log_reader.py:EventLogReader": (
        290,
        "reading, the watch of the topic's id and the probe of a lost log share the"
        " consumer's position, the guard and the events held back",
    ),
    "services/metrics-aggregator/src/srm_metrics_aggregator/raw_folder.py:RawFolder": (
        285,
        "folding, closing windows, pacing and resending read and write the same"
        " per-partition index, cells and send times, in step with the store",
    ),
}


def sources() -> list[Path]:
    """Every module of the packages, not their tests."""
    found = [
        *ROOT.glob("libs/*/src/**/*.py"),
        *ROOT.glob("services/*/src/**/*.py"),
        *ROOT.glob("deploy/**/*.py"),
        *ROOT.glob("bench/srm_bench/**/*.py"),
        *ROOT.glob("tests/harness/src/**/*.py"),
    ]
    return sorted(p for p in found if "tests" not in p.relative_to(ROOT).parts[2:])


def sizes(source: str) -> tuple[int, dict[str, tuple[int, str]]]:
    """The module's lines, and each class's (by name, nested ones dotted) with the
    docstring at its top."""
    tree = ast.parse(source)
    classes: dict[str, tuple[int, str]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                name = f"{prefix}{child.name}"
                assert child.end_lineno is not None
                lines = child.end_lineno - child.lineno + 1
                classes[name] = (lines, ast.get_docstring(child) or "")
                visit(child, f"{name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                visit(child, prefix)

    visit(tree, "")
    return source.count("\n"), classes


def _states_its_size(*docstrings: str) -> bool:
    return any(re.search(r"\b\d{3}\s+lines\b", text) for text in docstrings)


def over_the_limits(
    root: Path, paths: list[Path], longer: dict[str, tuple[int, str]]
) -> list[tuple[str, str]]:
    """What breaks the rule: (module or class, what to do); empty when nothing does."""
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()
    for path in paths:
        where = path.relative_to(root).as_posix()
        source = path.read_text()
        module_lines, classes = sizes(source)
        module_doc = ast.get_docstring(ast.parse(source)) or ""
        things = [(where, module_lines, MODULE_LINES, module_doc, "")]
        things += [
            (f"{where}:{name}", lines, CLASS_LINES, doc, module_doc)
            for name, (lines, doc) in classes.items()
        ]
        for key, lines, limit, doc, outer_doc in things:
            if key in longer:
                seen.add(key)
                most, _why = longer[key]
                if lines <= limit + SLACK:
                    problems.append(
                        (key, f"{lines} lines, within the limit now: drop it from LONGER")
                    )
                elif lines > most:
                    problems.append(
                        (
                            key,
                            f"{lines} lines, more than the {most} its reason allows: split it"
                            " along its concepts, or argue the new size in LONGER and at its top",
                        )
                    )
                elif not _states_its_size(doc, outer_doc):
                    problems.append(
                        (key, "its docstring (or its module's) does not say its size and why")
                    )
            elif lines > limit + SLACK:
                problems.append(
                    (
                        key,
                        f"{lines} lines (limit about {limit}): split it along its concepts, or"
                        " state why not at its top and in LONGER (tests/test_module_sizes.py)",
                    )
                )
    problems += [(key, "in LONGER but not found") for key in sorted(longer.keys() - seen)]
    return problems


def test_modules_and_classes_stay_within_the_size_rule() -> None:
    problems = over_the_limits(ROOT, sources(), LONGER)
    assert not problems, "the size rule (docs/architecture.md):\n" + "\n".join(
        f"{key}: {what}" for key, what in problems
    )


def test_the_check_finds_each_kind_of_breach(tmp_path: Path) -> None:
    """So that the test above could fail: a long module, a long class, a long nested
    class, an allowed class that grew, one without its reason at the top, one that
    shrank, one that is gone."""
    body = "    x = 1\n"
    (tmp_path / "long.py").write_text('"""A module."""\n' + "x = 1\n" * 420)
    (tmp_path / "big.py").write_text('"""A class."""\nclass Big:\n' + body * 270)
    (tmp_path / "inner.py").write_text(
        '"""A function."""\ndef f():\n    class Inner:\n' + "        x = 1\n" * 270
    )
    for name, doc, lines in (
        ("Grew", "About 270 lines: why.", 300),
        ("Silent", "No reason.", 270),
        ("Shrank", "About 270 lines: why.", 20),
        ("Fine", "One class of about 270 lines: why.", 268),
    ):
        (tmp_path / f"{name.lower()}.py").write_text(
            f'"""Kept whole."""\nclass {name}:\n    """{doc}"""\n' + body * lines
        )
    longer = {
        f"{name.lower()}.py:{name}": (280, "why")
        for name in ("Grew", "Silent", "Shrank", "Fine", "Gone")
    }
    problems = over_the_limits(tmp_path, sorted(tmp_path.glob("*.py")), longer)
    assert [key for key, _what in problems] == [
        "big.py:Big",
        "grew.py:Grew",
        "inner.py:Inner",
        "long.py",
        "shrank.py:Shrank",
        "silent.py:Silent",
        "gone.py:Gone",
    ]
