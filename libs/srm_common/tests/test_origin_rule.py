"""The origin rule (srm_common.domain.origin), which the Python copy slot applies to every
record copied into a shared (identity policy) target, against its golden cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from srm_common.domain.origin import MalformedOrigin, decide
from srm_common.domain.policy import ORIGIN_HEADER

GOLDEN = json.loads(
    (Path(__file__).parent / "golden" / "origin_rule.json").read_text(encoding="utf-8")
)


def _value(value: object) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, dict):
        return bytes.fromhex(value["hex"])
    return str(value).encode()


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: c["name"])
def test_the_origin_rule_decides_as_the_golden_case(case: dict[str, object]) -> None:
    assert GOLDEN["header"] == ORIGIN_HEADER
    headers = [(str(key), _value(value)) for key, value in case["headers"]]  # type: ignore[attr-defined]
    try:
        action = decide(headers, ORIGIN_HEADER, str(case["target"]))
    except MalformedOrigin as exc:
        assert ORIGIN_HEADER in str(exc)
        action = "malformed"
    assert action == case["action"]


def test_a_record_without_headers_is_stamped() -> None:
    assert decide(None, ORIGIN_HEADER, "backup") == "stamp"
