"""benchmarks/compile_reports.py on the CPU (nvcc): each kernel's report read with the service's
options and without the warning suppression, in fresh processes, and the file says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.lab_scripts import LAB


def test_the_reports_of_a_kernel_are_read_under_both_option_sets(tmp_path: Path) -> None:
    out = tmp_path / "reports.json"
    subprocess.run(
        [sys.executable, str(LAB / "compile_reports.py"), "--out", str(out),
         "--compiler", "nvcc", "--limit", "2"],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    document = json.loads(out.read_text())
    assert document["kernels"] == 2 and document["compiler"] == "nvcc"
    for label in ("service", "without_suppression"):
        rows = document["sets"][label]["rows"]
        assert [r["config"] for r in rows] == [
            r["config"] for r in document["sets"]["service"]["rows"]
        ]
        assert all(r["report"] is True and r["log_chars"] > 0 for r in rows)
        assert document["summary"][label]["without_report"] == []
    # The warnings the service suppresses are in the other set's logs, which are longer.
    quiet, loud = (document["sets"][k]["rows"] for k in ("service", "without_suppression"))
    assert all(a["log_chars"] < b["log_chars"] for a, b in zip(quiet, loud, strict=True))
