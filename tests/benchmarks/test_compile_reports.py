"""benchmarks/compile_reports.py on the CPU (nvcc, which keeps no cache of its own): each
kernel's report read at both builds, in both sets of fresh processes, and the file says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.lab_scripts import LAB


def test_the_reports_of_each_kernel_are_read_at_both_builds_in_both_sets(tmp_path: Path) -> None:
    out = tmp_path / "reports.json"
    subprocess.run(
        [sys.executable, str(LAB / "compile_reports.py"), "--out", str(out),
         "--compiler", "nvcc", "--limit", "3", "--workers", "2"],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    document = json.loads(out.read_text())
    assert document["kernels"] == 3 and document["compiler"] == "nvcc"
    for label in ("cache_on", "service"):
        result = document["sets"][label]
        names = [r["config"] for r in result["rows"]]
        assert names == [r["config"] for r in document["sets"]["service"]["rows"]]
        assert len(set(names)) == 3 and result["processes"] == 2
        for row in result["rows"]:
            assert row["first_report"] is True and row["again_report"] is True
            assert row["first_log_chars"] > 0
        assert result["without_report"] == {"first": [], "again": []}
        assert result["compile_failed"] == 0
        assert result["processes_with_context"] is None  # no driver on this machine
