"""The JVM copier's rules against the golden cases the Python core shares: the origin rule
(its one implementation) and the offset-sync rule (also srm_common's offset_syncs)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "libs" / "srm_common" / "tests" / "golden"
HARNESS = Path(__file__).parent / "java" / "CopierRules.java"


@pytest.fixture(scope="module")
def decided(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    import pyspark
    from srm_local.jars import driver_jars_dir

    javac, java = shutil.which("javac"), shutil.which("java")
    assert javac and java, "a JDK is needed (the copier is built with it)"
    jars = driver_jars_dir()
    classpath = ":".join(
        [str(jar) for jar in sorted(jars.glob("*.jar"))]
        + [str(Path(pyspark.__file__).parent / "jars" / "*")]
    )
    classes = tmp_path_factory.mktemp("copier-rules")
    subprocess.run([javac, "-d", str(classes), "-cp", classpath, str(HARNESS)], check=True)
    result = subprocess.run(
        [
            java,
            "-cp",
            f"{classes}:{classpath}",
            "srm.copier.CopierRules",
            str(GOLDEN / "origin_rule.json"),
            str(GOLDEN / "offset_syncs.json"),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout)


def _cases(name: str) -> list[dict[str, object]]:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", _cases("origin_rule.json"), ids=lambda c: c["name"])
def test_origin_rule_decides_as_the_golden_case(decided, case) -> None:  # type: ignore[no-untyped-def]
    assert decided["origin"][case["name"]] == case["action"]


@pytest.mark.parametrize("case", _cases("offset_syncs.json"), ids=lambda c: c["name"])
def test_offset_syncs_of_acknowledgements_match_the_golden_case(decided, case) -> None:  # type: ignore[no-untyped-def]
    assert decided["syncs"][case["name"]] == case["syncs"]


def test_the_latency_histogram_has_the_raw_metrics_bounds_and_buckets(decided) -> None:  # type: ignore[no-untyped-def]
    from srm_common.metrics.raw import LATENCY_BOUNDS_MS, bucket_of

    latency = decided["latency"]
    assert tuple(latency["bounds"]) == LATENCY_BOUNDS_MS
    assert latency["buckets"] == [bucket_of(probe) for probe in latency["probes"]]


def test_a_plan_reports_the_histogram_of_its_acknowledged_copies(decided) -> None:  # type: ignore[no-untyped-def]
    from srm_common.metrics.raw import Histogram

    latency = decided["latency"]
    report = latency["report"]
    assert tuple(report["latency_hist"]) == Histogram.of(latency["probes"]).counts
    assert sum(report["latency_hist"]) == report["records"] == len(latency["probes"])
    assert (report["latency_min_ms"], report["latency_max_ms"]) == (
        min(latency["probes"]),
        max(latency["probes"]),
    )
    assert report["pending_ts"] == -1  # every copy acknowledged: none pending
