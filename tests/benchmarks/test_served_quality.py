"""benchmarks/served_quality.py on the CPU: the answers it would time, before and after a
results file is added to the installed ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.lab_scripts import LAB, lab_script
from tuner.data import results_dir

H100 = "NVIDIA H100 80GB HBM3"


def _added(tmp_path: Path) -> tuple[Path, str]:
    """A suite file holding one shape no installed file holds, answered by a config of the
    committed FP32 suite."""
    committed = json.loads((results_dir() / "h100.json").read_text())
    row = next(r for r in committed["shapes"] if r["status"] == "ok")
    scale = 2560**3 / (row["m"] * row["n"] * row["k"])  # the same TFLOP/s: a plausible time
    row = {
        **row,
        "class": "tuned",
        "m": 2560,
        "n": 2560,
        "k": 2560,
        "ms": row["ms"] * scale,
        "cublas_ms": row["cublas_ms"] * scale,
        "tflops": None,
        "cublas_tflops": None,
    }
    document = {"device": H100, "provenance": committed["provenance"], "shapes": [row]}
    path = tmp_path / "h100-extra-suite.json"
    path.write_text(json.dumps(document))
    return path, row["config"]


def test_answers_only_shows_the_added_shape_answered_exact(tmp_path: Path) -> None:
    added, config = _added(tmp_path)
    heldout = tmp_path / "heldout.csv"
    heldout.write_text(
        "class,M,N,K,dtype,layout\nsquare,2560,2560,2560,float32,NN\nllm,300,5120,5120,float32,NN\n"
    )
    out = tmp_path / "served.json"
    subprocess.run(
        [
            sys.executable,
            str(LAB / "served_quality.py"),
            "--added",
            str(added),
            "--heldout",
            str(heldout),
            "--answers-only",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    rows = json.loads(out.read_text())["rows"]
    assert rows[0]["before"]["source"] != "exact"
    assert rows[0]["after"] == {"config": config, "source": "exact"}
    # A shape the added file does not hold keeps a measured neighbour's or the rule's answer.
    assert rows[1]["after"]["source"] != "exact"


def test_before_holds_none_of_the_added_files_and_after_all_of_them(tmp_path: Path) -> None:
    served_quality = lab_script("served_quality")
    shipped = sorted(p for p in served_quality.results_dir().glob("*-suite.json"))[:2]
    added = []
    for path in shipped:  # copies from elsewhere, as a new file to ship would be
        (tmp_path / "new").mkdir(exist_ok=True)
        added.append(tmp_path / "new" / path.name)
        added[-1].write_bytes(path.read_bytes())
    before, after = served_quality.folders(added, tmp_path / "work")
    names = {path.name for path in added}
    assert len(names) == 2
    assert not names & {p.name for p in before.iterdir()}
    assert names <= {p.name for p in after.iterdir()}
    assert {p.name for p in after.iterdir()} - names == {p.name for p in before.iterdir()}
