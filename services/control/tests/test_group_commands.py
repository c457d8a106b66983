"""srm-control offsets/failover --groups: a Java regex, as in the lists, matched by RE2."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest
from srm_control.group_commands import _group_matcher


def matcher(groups: str) -> Callable[[str], bool]:
    return _group_matcher(argparse.Namespace(group=None, groups=groups))


def test_groups_regex_matches_whole_names_in_java_syntax() -> None:
    selected = matcher(r"billing-\p{Digit}+")
    assert selected("billing-42") and not selected("billing-42x"), "whole names only"
    assert not matcher("(a+)+b")("a" * 4000), "a nested quantifier answers at once"


def test_groups_regex_that_needs_backtracking_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        matcher(r"(x)\1")
    assert caught.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("srm-control: --groups: invalid regular expression")
    assert "backreference \\1 needs backtracking" in err[0]
