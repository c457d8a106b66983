"""An operator's resume point: one value, valid when built, and where it starts a copy."""

from __future__ import annotations

import pytest
from srm_common.domain.progress import PartitionFacts, Progress, Resume
from srm_common.domain.resume import RESUME_MODES, ResumeMode, ResumePoint, resume_from


def facts(target_end: int, *, log_start: int, source_end: int) -> PartitionFacts:
    return PartitionFacts("S1", log_start, source_end, "T1", target_end)


def test_operator_resumes_from_an_explicit_choice() -> None:
    recorded = Progress(50, 20, 90)
    now = facts(35, log_start=10, source_end=70)
    assert resume_from(ResumePoint.parse("copy-end"), recorded, now) == Resume(50, 35)
    assert resume_from(ResumePoint.parse("source-start"), recorded, now) == Resume(10, 35)
    assert resume_from(ResumePoint.parse("source-end"), recorded, now) == Resume(70, 35)
    assert resume_from(ResumePoint.parse("offset", 12), recorded, now) == Resume(12, 35)
    # A recreated source: the recorded position means nothing, kept within its range.
    assert resume_from(ResumePoint(ResumeMode.COPY_END), Progress(500, 20), now) == Resume(70, 35)
    with pytest.raises(ValueError, match="outside the source partition's retained range"):
        resume_from(ResumePoint.parse("offset", 5), recorded, now)


@pytest.mark.parametrize(
    ("mode", "offset", "message"),
    [
        ("copy_end", None, "unknown resume point 'copy_end'; use one of copy-end, source-start"),
        ("", None, "unknown resume point ''"),
        ("offset", None, "give an offset exactly when resuming from 'offset'"),
        ("source-end", 7, "give an offset exactly when resuming from 'offset'"),
        ("offset", -1, "offset -1 is negative"),
    ],
)
def test_a_bad_point_is_refused_with_what_to_give(
    mode: str, offset: int | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ResumePoint.parse(mode, offset)


def test_a_bare_string_is_not_a_mode() -> None:
    with pytest.raises(ValueError, match="unknown resume point"):
        ResumePoint("copy-end")  # type: ignore[arg-type]


def test_every_mode_parses_and_describes_itself() -> None:
    assert RESUME_MODES == ("copy-end", "source-start", "source-end", "offset")
    assert [
        ResumePoint.parse(m, 3 if m == "offset" else None).describe() for m in RESUME_MODES
    ] == [
        "copy-end",
        "source-start",
        "source-end",
        "offset 3",
    ]
