"""``gemmtune bench`` without a GPU: roofline arithmetic, the summary and its targets, the
Markdown and SVG renderings, the suite CSV, the no-GPU error, and the reuse-or-tune decision on
the replay table with SQLite (the GPU comparison replaced by a fake)."""

from __future__ import annotations

import importlib.util
import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

import storage
from storage import open_database
from tests.tuner.cli.test_progress import terminal
from tests.tuner.cli.test_tune import cli, one_error_line
from tests.tuner.fakes import Forwarding
from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.result import Comparison
from tuner.core.shape import Shape
from tuner.data import default_suite
from tuner.data.shape_lists import SuiteEntry, read_suite
from tuner.kernels.families import parse_config
from tuner.kernels.resources import DeviceLimits
from tuner.model.roofline import H100_SXM, ceilings_for, min_bytes, roofline
from tuner.report.bench_tables import markdown, ratio_chart
from tuner.run import runner  # `gemmtune bench` imports start_gpu from here when it runs
from tuner.run.bench import (
    BenchRequest,
    Choice,
    Target,
    choose_config,
    device_slug,
    document,
    geomean,
    run_bench,
    shape_row,
    summarize,
    vendor_configs,
)
from tuner.run.multi_gpu import Worker, Workers
from tuner.run.request import TuneRequest
from tuner.run.runner import DEFAULT_FAMILIES, DEFAULT_HALF_FAMILIES, VENDOR_FAMILIES
from tuner.run.tune import tune
from tuner.search.finalists import FINAL_BUDGET_MS, FINAL_MIN_ROUNDS
from tuner.search.replay import ReplayEvaluator
from tuner.search.study import Progress as StudyProgress

BIG, MID, SKINNY = Shape(4096, 4096, 4096), Shape(1000, 1000, 1000), Shape(128, 4096, 4096)
H100 = "NVIDIA H100 80GB HBM3"
SUITE = default_suite()
LAB_RESULTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results"  # ffma_ceiling.py


# 1. Roofline arithmetic, worked by hand.


def test_a_tiny_shape_worked_by_hand() -> None:
    roof = roofline(Shape(2, 3, 4), H100_SXM)
    # flops 2*2*3*4 = 48; bytes 4*(2*4 + 4*3 + 2*3) = 4*26 = 104; 48/104 = 0.4615 flop/B.
    assert (roof.flops, roof.min_bytes) == (48, 104)
    assert roof.intensity == pytest.approx(0.461538, rel=1e-5)
    assert roof.bound_tflops == pytest.approx(0.461538 * 3.35, rel=1e-5)  # 1.546 TFLOP/s
    assert roof.limit == "memory"


def test_16_rows_are_memory_bound_and_4096_cubed_compute_bound() -> None:
    thin = roofline(Shape(16, 4096, 4096), H100_SXM)
    # 2*16*4096*4096 = 536,870,912 flops; 4*(16*4096 + 4096*4096 + 16*4096) = 67,633,152 B
    # (B alone is 64 MiB); 7.938 flop/B x 3.35 TB/s = 26.59 TFLOP/s < 63.7.
    assert (thin.flops, thin.min_bytes) == (536_870_912, 67_633_152)
    assert thin.intensity == pytest.approx(7.93798, rel=1e-5)
    assert thin.bound_tflops == pytest.approx(26.5922, rel=1e-4)
    assert thin.limit == "memory"
    assert thin.percent(5.0) == pytest.approx(100 * 5.0 / 26.5922, rel=1e-4)

    square = roofline(BIG, H100_SXM)
    # 2*4096^3 = 137,438,953,472 flops; 4*3*4096^2 = 201,326,592 B; 682.67 flop/B.
    assert square.min_bytes == 201_326_592
    assert square.intensity == pytest.approx(2048 / 3)
    assert (square.bound_tflops, square.limit) == (63.7, "compute")
    assert square.percent(50.96) == pytest.approx(80.0)


def test_ridge_point_and_a_measured_bandwidth() -> None:
    assert H100_SXM.ridge == pytest.approx(63.7 / 3.35)  # 19.01 flop/B
    # 128x4096x4096: 4*(128*4096*2 + 4096^2) B = 71,303,168 B; 60.2 flop/B: compute-bound.
    assert min_bytes(SKINNY) == 71_303_168
    assert roofline(SKINNY, H100_SXM).limit == "compute"
    slower = H100_SXM.with_bandwidth(2.0, "measured")
    thin = roofline(Shape(16, 4096, 4096), slower)
    assert thin.bound_tflops == pytest.approx(7.93798 * 2.0, rel=1e-5)
    assert roofline(SKINNY, slower).limit == "compute"  # 60.2 x 2 = 120 > 63.7
    doc = slower.as_dict()
    assert doc["bandwidth_source"] == "measured" and "beta = 0" in doc["bytes_model"]
    assert ceilings_for(H100) is H100_SXM and ceilings_for("NVIDIA A100-SXM4-80GB") is None


def test_h200_roofs_come_from_its_committed_measurement() -> None:
    h200 = ceilings_for("NVIDIA H200")
    assert h200 is not None and h200.bandwidth_tb_s == 4.8
    measured = json.loads((LAB_RESULTS / "h200-ffma.json").read_text())
    assert measured["device"] == "NVIDIA H200"
    assert h200.ffma_tflops == round(measured["tflops"], 1)
    assert roofline(Shape(16, 4096, 4096), h200).limit == "memory"


def test_device_slug() -> None:
    assert device_slug(H100) == "h100"
    assert device_slug("NVIDIA GeForce RTX 4090") == "geforce-rtx-4090"
    assert device_slug("NVIDIA A100-SXM4-80GB") == "a100"
    assert device_slug("Some GPU") == "some-gpu"


# 2. Summary and targets.


def row(label: str | None, m: int, n: int, k: int, ratio: float | None) -> dict[str, Any]:
    """A measured (or, with ratio None, failed) result row as ``shape_row`` writes it."""
    entry = SuiteEntry(label, Shape(m, n, k))
    choice = Choice(parse_config(CONFIG), tuned=False, study="s", evaluated=12)
    if ratio is None:
        reply = Comparison(CONFIG, "wrong_result", "relative error 1e-2 > 1e-5")
    else:
        reply = Comparison(CONFIG, "ok", None, (1.0, 1.0, 9.0), (ratio,) * 3)
    return shape_row(entry, choice, reply, H100_SXM)


CONFIG = "warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128"


def suite_rows(skinny: float = 1.5) -> list[dict[str, Any]]:
    return [
        row("square", 4096, 4096, 4096, 0.96),
        row("square", 8192, 8192, 8192, 0.95),
        row("skinny", 128, 4096, 4096, skinny),
        row("skinny", 16, 4096, 4096, 1.0),
        row("odd", 1000, 1000, 1000, 1.3),
        row("small_k", 8192, 8192, 256, 1.2),
        row("large_k", 256, 256, 65536, 1.25),
    ]


def test_geomean() -> None:
    assert geomean([]) is None
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([1.0, 1.0, 1.0]) == pytest.approx(1.0)


def test_rows_take_the_median_of_rounds_and_the_roofline() -> None:
    r = row("square", 4096, 4096, 4096, 2.0)
    assert (r["ms"], r["cublas_ms"], r["ratio"]) == (1.0, 2.0, 2.0)  # medians; 9.0 is an outlier
    assert r["rounds"] == {"ms": [1.0, 1.0, 9.0], "cublas_ms": [2.0, 2.0, 2.0]}
    assert r["tflops"] == pytest.approx(BIG.flops / 1e-3 / 1e12)  # 137.4 TFLOP/s at 1 ms
    assert r["roofline"]["limit"] == "compute"
    assert r["roofline"]["pct_of_bound"] == pytest.approx(100 * r["tflops"] / 63.7)
    assert r["roofline"]["cublas_pct_of_bound"] == pytest.approx(50 * r["tflops"] / 63.7)
    failed = row("odd", 1000, 1000, 1000, None)
    assert failed["status"] == "wrong_result" and "ratio" not in failed
    assert "pct_of_bound" not in failed["roofline"]


def test_summary_meets_every_target() -> None:
    summary = summarize(suite_rows())
    ratios = [0.96, 0.95, 1.5, 1.0, 1.3, 1.2, 1.25]
    assert summary["geomean_ratio"] == pytest.approx(math.prod(ratios) ** (1 / 7))
    assert (summary["shapes"], summary["measured"]) == (7, 7)
    assert summary["by_class"]["skinny"]["geomean_ratio"] == pytest.approx(math.sqrt(1.5))
    assert summary["by_class"]["square"]["shapes"] == 2
    assert [t["met"] for t in summary["targets"]] == [True] * 7
    assert summary["all_targets_met"] is True


def test_summary_names_the_missed_targets() -> None:
    rows = suite_rows(skinny=1.2)  # skinny geomean sqrt(1.2) = 1.095 < 1.2
    rows[0] = row("square", 4096, 4096, 4096, 0.94)
    targets = {t["name"]: t for t in summarize(rows)["targets"]}
    assert targets["4096x4096x4096"]["met"] is False
    assert targets["4096x4096x4096"]["value"] == pytest.approx(0.94)
    assert targets["8192x8192x8192"]["met"] is True  # exactly at the threshold
    assert targets["class skinny (geometric mean)"]["met"] is False
    assert targets["class odd (geometric mean)"]["met"] is True
    assert summarize(rows)["all_targets_met"] is False


def test_a_failed_shape_fails_its_targets_and_a_missing_one_is_unknown() -> None:
    rows = [row("odd", 1000, 1000, 1000, None), row("odd", 3000, 5000, 700, 2.0)]
    summary = summarize(rows)
    targets = {t["name"]: t for t in summary["targets"]}
    odd = targets["class odd (geometric mean)"]
    assert (odd["value"], odd["measured"], odd["shapes"], odd["met"]) == (2.0, 1, 2, False)
    suite = targets["geometric mean over the suite"]
    assert suite["met"] is False and suite["value"] == pytest.approx(2.0)
    assert targets["4096x4096x4096"]["met"] is None  # not in this suite
    assert summary["all_targets_met"] is False
    assert Target("x", "class", "odd", 1.0).rows(rows) == rows


# 3. Markdown and SVG from a hand-made result.


class Stand:
    """What ``document`` reads from the GPU evaluator."""

    device = DeviceLimits(name=H100, arch="sm_90", sm_count=132)
    provenance: ClassVar[dict[str, Any]] = {
        "device": H100,
        "sm_count": 132,
        "compute_capability": "9.0",
        "driver": 13000,
        "cuda_runtime": 13020,
        "nvrtc": "13.0",
        "cupy": "14.2.0",
        "tuner": "0.1.0",
    }


def hand_made_doc() -> dict[str, Any]:
    rows = [*suite_rows(), row("odd", 3000, 5000, 700, None)]
    request = bench_request(("warptile",), rounds=5)
    return document(rows, Stand(), request, H100_SXM, "shapes.csv")  # type: ignore[arg-type]


def test_document_carries_method_roofs_and_provenance() -> None:
    doc = hand_made_doc()
    json.dumps(doc)  # plain JSON
    assert doc["device"] == H100 and doc["provenance"]["cuda_runtime"] == 13020
    assert doc["provenance"]["date"] == doc["date"]
    assert doc["method"]["rounds"] == 5 and doc["method"]["families"] == ["warptile"]
    assert doc["roofline"]["ffma_tflops"] == 63.7 and doc["roofline"]["bandwidth_tb_s"] == 3.35
    assert "shared/bench/README.md" in doc["roofline"]["ffma_source"]
    assert doc["summary"]["measured"] == 7 and doc["summary"]["shapes"] == 8


def test_markdown_table() -> None:
    text = markdown(hand_made_doc())
    lines = text.splitlines()
    assert lines[0].startswith("| class | MxNxK | config | ms |")
    width = lines[0].count("|")
    table = [line for line in lines[: lines.index("")]]
    assert len(table) == 2 + 8 and all(line.count("|") == width for line in table)
    # No vendor launch was measured beside these rows: the baseline is the default call.
    assert (
        f"| square | 4096x4096x4096 | `{CONFIG}` | 1.000 | 137.4 | `cublas` | 0.960 | 0.96 "
        "| 0.960 | 143.2 | 0.96 |" in text
    )
    assert "| 63.7 (compute) | 216 % | 225 % | 12 |" in text
    assert "| 26.6 (memory) |" in text  # 16x4096x4096
    assert "wrong_result: relative error 1e-2 > 1e-5" in text
    assert "over 7 of 8 shapes" in text and "skinny 1.22" in text
    assert (
        "| class odd (geometric mean) | ≥ 1.20 | 1.30 (1 of 2 shapes measured) | **no** |" in text
    )
    assert "| 4096x4096x4096 | ≥ 0.95 | 0.96 | yes |" in text
    assert "median of 5 alternating rounds" in text
    assert "FFMA ceiling 63.7 TFLOP/s" in text and "3.35 TB/s" in text
    assert "132 SMs, CC 9.0" in text and "CUDA runtime 13020" in text and "CuPy 14.2.0" in text


def test_markdown_of_an_old_suite_file() -> None:
    """benchmarks/suite.py's rows: no summary, roofline or cuBLAS ms."""
    doc = {
        "device": H100,
        "date": "2026-11-22T10:00:00+00:00",
        "provenance": {"cupy": "14.2.0"},
        "shapes": [{"class": "square", "m": 64, "n": 64, "k": 64, "config": CONFIG, "ms": 0.01,
                    "tflops": 0.05, "cublas_tflops": 0.06, "ratio": 1.2}],
    }  # fmt: skip
    text = markdown(doc)
    # Its ratio was to cuBLAS: the cuBLAS column holds it, the vendor columns are empty.
    assert "| 0.010 | 0.1 | - | - | - | - | 0.1 | 1.20 | - | - | - | - |" in text
    assert "**1.20** over 1 of 1 shapes" in text and "2026-11-22" in text
    assert "Geometric mean of cuBLAS time / our time" in text and "Baseline:" not in text


def test_the_baseline_is_the_fastest_vendor_launch_and_cublas_stays_a_column() -> None:
    shape = Shape(4097, 4097, 4097, "bfloat16", "NN")
    entry = SuiteEntry("odd", shape)
    choice = Choice(parse_config(CONFIG), tuned=False, study="s", evaluated=12)
    ours = Comparison(CONFIG, "ok", None, (0.5, 0.5, 0.5), (1.0, 1.0, 1.0))
    algo = [format(word, "016x") for word in range(8)]
    vendor = [
        Comparison("cublaslt_rk0", "ok", None, (0.9,) * 3, (1.0,) * 3),
        Comparison("cublaslt_rk1", "pruned", "the heuristic offers 1 algorithm"),
        Comparison(
            "cublaslt_rk0_pad8", "ok", None, (0.3,) * 3, (1.0,) * 3, 0.0, {"vendor": {"algo": algo}}
        ),
        Comparison("cublaslt_rk1_pad8", "wrong_result", "relative error 1e-1 > 1e-5"),
    ]
    row_ = shape_row(entry, choice, ours, H100_SXM, vendor)
    assert row_["vendor_launch"] == "cublaslt_rk0_pad8" and row_["vendor_algo"] == algo
    assert row_["vendor_ms"] == 0.3 and row_["ratio"] == pytest.approx(0.6)
    assert row_["cublas_ms"] == 1.0 and row_["cublas_ratio"] == pytest.approx(2.0)
    assert row_["vendor_launches"] == {
        "cublaslt_rk0": 0.9,
        "cublaslt_rk1": "pruned",
        "cublaslt_rk0_pad8": 0.3,
        "cublaslt_rk1_pad8": "wrong_result",
    }
    roof = row_["roofline"]
    assert roof["vendor_pct_of_bound"] == pytest.approx(roof["cublas_pct_of_bound"] / 0.3)
    method = {"baseline": "best vendor launch", "vendor_ranks": 2}
    text = markdown({"device": H100, "method": method, "shapes": [row_]})
    assert "| `cublaslt_rk0_pad8` | 0.300 | 0.60 | 1.000 |" in text and "| 2.00 |" in text
    assert "Geometric mean of best vendor time / our time: **0.60**" in text
    assert "cuBLASLt's first 2 heuristic algorithms" in text
    # A slower vendor launch than the default call leaves the default call the baseline.
    slow = [Comparison("cublaslt_rk0", "ok", None, (1.2,) * 3, (1.0,) * 3)]
    assert shape_row(entry, choice, ours, H100_SXM, slow)["vendor_launch"] == "cublas"


def test_vendor_launches_of_the_baseline_are_padded_only_on_ragged_shapes() -> None:
    square = [c.name for c in vendor_configs(Shape(4096, 4096, 4096, "bfloat16", "NT"), 2)]
    assert square == ["cublaslt_rk0", "cublaslt_rk1"]
    ragged = [c.name for c in vendor_configs(Shape(4097, 4096, 4097, "bfloat16", "NN"), 2)]
    # Ragged: also "pad, then cuBLAS", the default call on the padded copies.
    assert ragged == [*square, "cublaslt_rk0_pad8", "cublaslt_rk1_pad8", "cublas_pad8"]
    assert [c.name for c in vendor_configs(Shape(33, 4096, 4093), 1)][-2:] == [
        "cublaslt_rk0_pad4",
        "cublas_pad4",
    ]
    assert vendor_configs(Shape(33, 4096, 4093), 0) == []
    with pytest.raises(InputError, match="`vendor_ranks` must be 0 to 8, got 9"):
        BenchRequest(TuneRequest((Shape(64, 64, 64),), ("warptile",)), vendor_ranks=9)


def test_svg_chart() -> None:
    rows = [*hand_made_doc()["shapes"], row("x<&>", 64, 64, 64, 1.1)]
    svg = ratio_chart(rows, "ratio <per> shape")
    root = ET.fromstring(svg)  # well-formed, text escaped
    ns = "{http://www.w3.org/2000/svg}"
    bars = root.findall(f"{ns}g/{ns}rect")
    assert len(bars) == 8  # the failed shape has a note, not a bar
    widths = [float(b.get("width", "0")) for b in bars]
    assert widths[2] / widths[3] == pytest.approx(1.5, rel=1e-2)  # bar length is the ratio
    assert [b.get("fill") for b in bars[:3]] == ["#f97316", "#f97316", "#2563eb"]  # < 1 orange
    assert "cuBLAS = 1.0" in svg and "not measured: wrong_result" in svg
    assert "x&lt;&amp;&gt; 64x64x64" in svg and "1.50x" in svg
    assert "% of compute bound" in svg and "% of memory bound" in svg
    # The reference line at 1.0: its x is the left edge plus the width of a 1.0 bar.
    assert f'x1="{190 + widths[3]:.1f}"' in svg


# 4. The suite CSV keeps its classes.


def test_read_suite_keeps_classes(tmp_path: Path) -> None:
    csv = tmp_path / "suite.csv"
    csv.write_text("# class,M,N,K\nsquare, 64,64,64\n\n 128,4096,4096\n,16,16,16\n")
    assert read_suite(csv) == [
        SuiteEntry("square", Shape(64, 64, 64)),
        SuiteEntry(None, SKINNY),
        SuiteEntry(None, Shape(16, 16, 16)),
    ]
    committed = read_suite(SUITE)
    assert len(committed) == 12 and committed[0] == SuiteEntry("square", Shape(1024, 1024, 1024))
    assert {e.label for e in committed} == {"square", "llm", "skinny", "odd", "small_k", "large_k"}


# 5. Without a GPU: one line, exit code 2, nothing written.


def test_without_a_gpu_bench_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def no_cupy(name: str, package: str | None = None) -> Any:
        return None if name == "cupy" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", no_cupy)
    monkeypatch.chdir(tmp_path)
    db = f"sqlite:///{tmp_path / 'b.db'}"
    code, out, err = cli(capsys, "bench", "--db", db, "--suite", str(SUITE))
    assert code == 2 and out == ""
    one_error_line(err, "gemmtune bench needs a CUDA GPU", "CuPy is not installed")
    assert list(tmp_path.iterdir()) == []  # no database, no results


def test_without_a_device_bench_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    code, _, err = cli(capsys, "bench", "--db", f"sqlite:///{tmp_path / 'b.db'}")
    assert code == 2
    one_error_line(err, "gemmtune bench needs a CUDA GPU")


def test_bad_suite_and_family_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "bench", "--suite", str(tmp_path / "none.csv"))
    assert code == 2
    one_error_line(err, "none.csv", "does not exist")
    code, _, err = cli(capsys, "bench", "--family", "tiled", "--suite", str(SUITE))
    assert code == 2
    one_error_line(err, "'tiled'")


# 6. Reuse a stored result or tune: the replay table on SQLite.


class FakeBench(Forwarding):
    """The replay evaluator (its comparison answers with the table's times), counting the
    comparisons the bench asks for."""

    def __init__(self, replay: ReplayEvaluator) -> None:
        super().__init__(replay)
        self.compared: list[tuple[str, Shape, int, float | None]] = []

    def compare(
        self,
        configs: Sequence[Config],
        shape: Shape,
        rounds: int,
        budget_ms: float | None = None,
    ) -> list[Comparison]:
        self.compared += [(config.name, shape, rounds, budget_ms) for config in configs]
        return super().compare(configs, shape, rounds, budget_ms)


@pytest.fixture(scope="module")
def replay() -> ReplayEvaluator:
    return ReplayEvaluator()


def bench_request(
    families: tuple[str, ...],
    sampler: str = "ranked",
    trials: int = 40,
    retune: bool = False,
    rounds: int = 5,
    url: str | None = None,
) -> BenchRequest:
    """A bench of the public suite's first shape (what decides its default families)."""
    tune = TuneRequest((BIG,), families, sampler=sampler, trials=trials, database_url=url)
    return BenchRequest(tune, retune=retune, rounds=rounds)


def quick(url: str) -> BenchRequest:
    return bench_request(("warptile",), sampler="exhaustive", trials=3, rounds=2, url=url)


def stored_best(url: str, shape: Shape) -> storage.Measurement:
    """What the replayed studies found for ``shape``: a bench on a replay reuses it, though it
    is no best config of the device (only measured times are)."""
    sessions = open_database(url)
    with sessions() as session:
        assert storage.best_for(session, H100, shape.m, shape.n, shape.k) is None
        found = storage.fastest_replayed(session, H100, shape.m, shape.n, shape.k)
    assert found is not None
    return found


@pytest.fixture
def tuned_db(tmp_path: Path, replay: ReplayEvaluator) -> str:
    """SQLite holding a 4-candidate study of 4096^3 (warptile) and nothing else."""
    url = f"sqlite:///{tmp_path / 'bench.db'}"
    sessions = open_database(url, optuna_tables=True)
    request = TuneRequest((BIG,), ("warptile",), sampler="exhaustive", trials=4,
                          evaluator="replay", database_url=url)  # fmt: skip
    tune(request, workers=Workers([Worker(0, replay)]), sessions=sessions)
    return url


def test_stored_shapes_are_reused_and_missing_ones_tuned(
    tuned_db: str, replay: ReplayEvaluator
) -> None:
    sessions = open_database(tuned_db, optuna_tables=True)
    before = replay.evaluations
    reused = choose_config(BIG, replay, sessions, quick(tuned_db))
    assert replay.evaluations == before  # nothing evaluated
    best = stored_best(tuned_db, BIG)
    assert reused.config is not None and reused.config.name == best.config_name
    assert best.study is not None and best.phase == "final"
    assert (reused.tuned, reused.evaluated, reused.study) == (False, 4, best.study)
    assert reused.stored_ms == best.ms

    fresh = choose_config(MID, replay, sessions, quick(tuned_db))
    assert replay.evaluations == before + 3
    assert fresh.tuned and fresh.evaluated == 3 and fresh.config is not None
    assert fresh.config.name == stored_best(tuned_db, MID).config_name


def test_retune_runs_more_trials_in_the_same_study(tuned_db: str, replay: ReplayEvaluator) -> None:
    sessions = open_database(tuned_db, optuna_tables=True)
    retune = bench_request(("warptile",), "exhaustive", trials=3, retune=True, url=tuned_db)
    again = choose_config(BIG, replay, sessions, retune)
    assert again.tuned and again.evaluated == 7
    assert again.config is not None and again.config.name == stored_best(tuned_db, BIG).config_name


def test_a_stored_best_of_an_older_tuner_is_named_not_used(
    tmp_path: Path, replay: ReplayEvaluator
) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    sessions = open_database(url, optuna_tables=True)
    with sessions.begin() as session:
        storage.record_measurement(
            session,
            storage.DeviceIn(H100, "sm_90", 132),
            storage.ShapeIn(64, 64, 64),
            storage.MeasurementIn(
                "oldtile",
                "oldtile_bm64",
                {"BM": 64},
                ms=0.01,
                cublas_ms=0.01,
                evaluator="replay",  # what a bench on a replay reuses
            ),
        )
    choice = choose_config(Shape(64, 64, 64), replay, sessions, quick(url))
    assert choice.config is None and not choice.tuned
    assert choice.reason is not None and "oldtile_bm64" in choice.reason
    entry = SuiteEntry("tiny", Shape(64, 64, 64))
    assert shape_row(entry, choice, None, H100_SXM)["status"] == "no_config"


def test_run_bench_reuses_tunes_and_compares(tuned_db: str, replay: ReplayEvaluator) -> None:
    sessions = open_database(tuned_db, optuna_tables=True)
    bench = FakeBench(replay)
    suite = [SuiteEntry("square", BIG), SuiteEntry("odd", MID), SuiteEntry("skinny", SKINNY)]
    seen: list[int] = []
    request = quick(tuned_db)
    rows = run_bench(suite, bench, sessions, request, H100_SXM, lambda r: seen.append(len(r)))
    assert seen == [1, 2, 3]
    assert [r["tuned"] for r in rows] == [False, True, True]
    assert [r["candidates_evaluated"] for r in rows] == [4, 3, 3]
    # Tuning a shape re-measures its finalists in their short blocks (one round, then the rest
    # of FINAL_MIN_ROUNDS for those near the fastest: replayed times never move, so the
    # fidelity rule asks no more); the bench then compares the chosen config in its own rounds
    # and the evaluator's own blocks, with the baseline's vendor launches in the same request.
    benched = [c[:3] for c in bench.compared if c[3] is None]
    assert [c for c in benched if not c[0].startswith("cublas")] == [
        (r["config"], Shape(r["m"], r["n"], r["k"]), 2) for r in rows
    ]
    for r in rows:
        shape = Shape(r["m"], r["n"], r["k"])
        vendor = [c[0] for c in benched if c[0].startswith("cublas") and c[1] == shape]
        assert vendor == [c.name for c in vendor_configs(shape, request.vendor_ranks)]
        # The replay table holds no vendor rows: the baseline is the default call.
        assert r["vendor_launch"] == "cublas" and r["vendor_ms"] == r["cublas_ms"]
    finals = [c for c in bench.compared if c[3] == FINAL_BUDGET_MS]
    assert {c[2] for c in finals} == {1, FINAL_MIN_ROUNDS - 1}
    assert {c[3] for c in bench.compared} == {None, FINAL_BUDGET_MS}
    for r in rows:
        recorded = replay.rows[(Shape(r["m"], r["n"], r["k"]), r["config"])]
        assert recorded.ms is not None and recorded.cublas_ms is not None
        assert r["status"] == "ok" and r["ms"] == recorded.ms
        assert r["ratio"] == pytest.approx(recorded.cublas_ms / recorded.ms)
        assert r["roofline"]["limit"] == "compute" and r["roofline"]["pct_of_bound"] > 0


@pytest.fixture
def fake_gpu(replay: ReplayEvaluator, monkeypatch: pytest.MonkeyPatch) -> None:
    """``gemmtune bench`` measures through the replay table instead of a GPU."""
    monkeypatch.setattr(runner, "start_gpu", lambda purpose, budget_ms: FakeBench(replay))


def test_the_command_end_to_end_with_a_fake_gpu(
    tuned_db: str,
    fake_gpu: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suite = tmp_path / "suite.csv"
    suite.write_text("# class,M,N,K\nsquare,4096,4096,4096\nodd,1000,1000,1000\n")
    folder = tmp_path / "work"  # the working directory: by default, output goes there
    folder.mkdir()
    monkeypatch.chdir(folder)
    args = ("--family", "warptile", "--sampler", "exhaustive", "--trials", "3", "--rounds", "2")
    code, out, err = cli(capsys, "bench", "--suite", str(suite), "--db", tuned_db, *args)
    assert code == 0, err
    doc = json.loads((folder / "h100-suite.json").read_text())
    assert doc["suite"] == str(suite)
    assert [(r["class"], r["tuned"]) for r in doc["shapes"]] == [("square", False), ("odd", True)]
    assert doc["method"]["rounds"] == 2 and doc["method"]["trials_per_tuned_shape"] == 3
    assert doc["summary"]["measured"] == 2 and doc["roofline"]["bandwidth_tb_s"] == 3.35
    assert out == (folder / "h100-suite.md").read_text() == markdown(doc)
    ET.fromstring((folder / "h100-suite.svg").read_text())
    assert "4096x4096x4096 [square]" in err and "h100-suite.svg" in err

    code, _, err = cli(capsys, "bench", "--suite", str(suite), "--db", tuned_db, *args,
                       "--out", str(tmp_path / "x.json"), "--markdown", str(tmp_path / "t.md"),
                       "--chart", str(tmp_path / "c.svg"), "--bandwidth", "3.0")  # fmt: skip
    assert code == 0, err
    doc = json.loads((tmp_path / "x.json").read_text())
    assert [r["tuned"] for r in doc["shapes"]] == [False, False]  # both stored now
    assert doc["roofline"]["bandwidth_tb_s"] == 3.0
    assert "--bandwidth" in doc["roofline"]["bandwidth_source"]
    assert (tmp_path / "t.md").is_file() and (tmp_path / "c.svg").is_file()


def test_bench_on_a_terminal_counts_shapes_and_the_candidates_of_each_study(
    tuned_db: str,
    fake_gpu: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    screen = terminal(monkeypatch)
    suite = tmp_path / "suite.csv"
    suite.write_text("square,4096,4096,4096\nodd,1000,1000,1000\n")
    args = ("--family", "warptile", "--sampler", "exhaustive", "--trials", "3", "--rounds", "1")
    code, _, err = cli(capsys, "bench", "--suite", str(suite), "--db", tuned_db, *args,
                       "--out", str(tmp_path / "s.json"))  # fmt: skip
    assert code == 0, err
    drawn = screen.getvalue()
    assert "suite shapes" in drawn and "2/2" in drawn
    assert "tuning 1000x1000x1000" in drawn and "3/3" in drawn  # the tuned shape's candidates
    assert "tuning 4096x4096x4096" not in drawn  # stored: re-measured, not tuned


def test_run_bench_reports_every_candidate_of_the_shapes_it_tunes(
    tuned_db: str, replay: ReplayEvaluator
) -> None:
    sessions = open_database(tuned_db, optuna_tables=True)
    report = Reported()
    suite = [SuiteEntry("square", BIG), SuiteEntry("odd", MID)]
    run_bench(suite, FakeBench(replay), sessions, quick(tuned_db), None, report=report)
    assert report.started == [(str(MID), 3)]  # BIG is stored: no study
    assert report.evaluated == [1, 2, 3]


class Reported:
    def __init__(self) -> None:
        self.started: list[tuple[str, int]] = []
        self.evaluated: list[int] = []

    def start(self, label: str, total: int) -> None:
        self.started.append((label, total))

    def update(self, progress: StudyProgress) -> None:
        self.evaluated.append(progress.evaluated)


def test_without_family_bench_searches_the_default_families(
    tuned_db: str, fake_gpu: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.csv"
    suite.write_text("square,4096,4096,4096\n")
    out = tmp_path / "defaults.json"
    code, _, err = cli(capsys, "bench", "--suite", str(suite), "--db", tuned_db, "--rounds", "1",
                       "--warm-start", "0", "--out", str(out))  # fmt: skip
    assert code == 0, err
    method = json.loads(out.read_text())["method"]
    assert method["families"] == [*DEFAULT_FAMILIES, *VENDOR_FAMILIES]
    assert "streamk" in DEFAULT_FAMILIES and method["baseline"] == "best vendor launch"
    assert method["warm_start"] == 0


def test_a_miss_that_rounds_to_its_threshold_shows_more_digits() -> None:
    from tuner.report.bench_tables import targets_table

    rows = suite_rows()
    rows[-2] = row("small_k", 8192, 8192, 256, 1.1992)
    text = targets_table(summarize(rows))
    line = next(x for x in text.splitlines() if "small_k" in x)
    assert "| 1.1992 | **no** |" in line
    assert "| 1.25 | yes |" in next(x for x in text.splitlines() if "large_k" in x)


# 7. Half inputs: their roof, traffic and targets, and the command end to end.


def test_half_inputs_are_bound_by_the_tensor_cores_and_move_half_the_bytes() -> None:
    half = roofline(Shape(4096, 4096, 4096, "bfloat16", "NT", "float32"), H100_SXM)
    # 2*(2*4096^2) + 4*4096^2 = 8*4096^2 = 134,217,728 B; 2*4096^3 / that = 1024 flop/B.
    assert half.min_bytes == 134_217_728 and half.intensity == pytest.approx(1024.0)
    assert (half.bound_tflops, half.limit) == (989.5, "compute")
    # A bfloat16 C: 2*(2*4096^2) + 2*4096^2 = 6*4096^2 = 100,663,296 B.
    half_c = roofline(Shape(4096, 4096, 4096, "bfloat16", "NT"), H100_SXM)
    assert half_c.min_bytes == 100_663_296
    # 16x4096x4096 fp16, float32 C: 2*(65,536 + 16,777,216) + 4*65,536 = 33,947,648 B; 15.81
    # flop/B.
    thin = roofline(Shape(16, 4096, 4096, "float16", "NN", "float32"), H100_SXM)
    assert thin.min_bytes == 33_947_648
    assert thin.intensity == pytest.approx(15.81467, rel=1e-6) and thin.limit == "memory"
    assert thin.bound_tflops == pytest.approx(15.81467 * 3.35, rel=1e-6)
    assert H100_SXM.with_bandwidth(3.0, "measured").half_tflops == 989.5  # roofs kept
    from dataclasses import replace

    unknown = replace(H100_SXM, half_tflops=None)
    with pytest.raises(ValueError, match="no compute roof for float16"):
        roofline(Shape(64, 64, 64, "float16"), unknown)
    entry = SuiteEntry("x", Shape(64, 64, 64, "float16"))
    assert shape_row(entry, Choice(None, tuned=False), None, unknown)["roofline"] is None


def half_row(label: str, m: int, n: int, k: int, ratio: float) -> dict[str, Any]:
    entry = SuiteEntry(label, Shape(m, n, k, "bfloat16", "NT"))
    name = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly1"
    choice = Choice(parse_config(name), tuned=True, study="s", evaluated=8)
    reply = Comparison(name, "ok", None, (1.0,) * 3, (ratio,) * 3, 0.0)
    return shape_row(entry, choice, reply, H100_SXM)


def test_half_targets_depend_on_the_suite_file() -> None:
    rows = [half_row("square", 4096, 4096, 4096, 0.5), half_row("odd", 1000, 1000, 1000, 0.8)]
    public = summarize(rows, "benchmarks/shapes.csv")["targets"]
    assert [(t["threshold"], t["met"]) for t in public] == [(0.6, True)]  # sqrt(0.4) = 0.632
    assert public[0]["value"] == pytest.approx(math.sqrt(0.4))
    assert summarize(rows)["targets"] == public  # the default suite is the public one
    odd = summarize(rows, "/x/odd_shapes.csv")["targets"]
    assert [(t["threshold"], t["met"]) for t in odd] == [(1.5, False)]
    assert summarize(rows, "mine.csv")["targets"] == []
    assert len(summarize(suite_rows(), "odd_shapes.csv")["targets"]) == 7  # float32: issue 5's


def test_markdown_and_chart_of_a_half_bench() -> None:
    rows = [half_row("square", 4096, 4096, 4096, 0.5)]
    half = Shape(4096, 4096, 4096, "bfloat16", "NT")
    request = BenchRequest(TuneRequest((half,), ("hmma",)), rounds=3)
    doc = document(rows, Stand(), request, H100_SXM, "benchmarks/odd_shapes.csv")  # type: ignore[arg-type]
    assert (doc["method"]["dtype"], doc["method"]["layout"]) == ("bfloat16", "NT")
    text = markdown(doc)
    assert "| 989.5 (compute) | 14 % | 28 % |" in text  # 137.4 and 274.9 TFLOP/s of 989.5
    assert "| geometric mean over the odd-shape suite | ≥ 1.50 | 0.50 | **no** |" in text
    assert "Inputs: bfloat16 A and B in layout NT" in text and "bfloat16 C; never TF32" in text
    assert "against cuBLAS in bfloat16 with FP32 sums" in text and "strict FP32" not in text
    assert "FP16/BF16 tensor-core ceiling 989.5 TFLOP/s" in text and "2(MK + KN) + cMN" in text
    from tuner.report.bench_tables import chart_title

    assert chart_title(doc).startswith("gemmtune vs best vendor BF16 NT on NVIDIA H100 80GB HBM3")
    assert chart_title(hand_made_doc()).startswith("gemmtune vs best vendor FP32 on")
    older = {**hand_made_doc(), "method": {"rounds": 5}}  # written before the vendor baseline
    assert chart_title(older).startswith("gemmtune vs cuBLAS FP32 on")


def test_the_command_end_to_end_for_bfloat16_nt_writing_float32_c(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.tuner.fakes import RuleEvaluator

    bench = RuleEvaluator(DeviceLimits(name=H100, arch="sm_90", sm_count=132))
    bench.provenance = dict(Stand.provenance)
    monkeypatch.setattr(runner, "start_gpu", lambda purpose, budget_ms: bench)
    suite = tmp_path / "shapes.csv"
    suite.write_text("square,4096,4096,4096\nodd,1000,1000,1000\n")
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    db = f"sqlite:///{tmp_path / 'half.db'}"
    code, out, err = cli(capsys, "bench", "--suite", str(suite), "--db", db, "--dtype",
                         "bfloat16", "--layout", "NT", "--out-dtype", "float32", "--trials", "4",
                         "--rounds", "2", "--warm-start", "0")  # fmt: skip
    assert code == 0, err
    path = folder / "h100-suite-bfloat16-nt.json"
    doc = json.loads(path.read_text())
    assert doc["method"]["families"] == [*DEFAULT_HALF_FAMILIES, *VENDOR_FAMILIES]
    assert doc["method"]["dtype"] == "bfloat16"
    assert {(r["dtype"], r["layout"]) for r in doc["shapes"]} == {("bfloat16", "NT")}
    ours = ("hmma", "wgmma", "tma_ws")
    assert all(r["config"].startswith("cublas") or (r["config"].startswith(ours)
               and "_dt1_ly1" in r["config"]) for r in doc["shapes"])  # fmt: skip
    roofs = [(r["roofline"]["bound_tflops"], r["roofline"]["limit"]) for r in doc["shapes"]]
    # 1000^3: 2e9 flop / (2*2e6 + 4e6) B = 250 flop/B x 3.35 TB/s = 837.5 < 989.5 TFLOP/s.
    assert roofs == [(989.5, "compute"), (pytest.approx(837.5), "memory")]
    assert [t["name"] for t in doc["summary"]["targets"]] == [
        "geometric mean over the public suite"
    ]
    assert out == path.with_suffix(".md").read_text() == markdown(doc)
    assert "best vendor BF16 NT" in path.with_suffix(".svg").read_text()
    # The stored results are keyed by dtype and layout: a float32 best is not this one.
    sessions = open_database(db)
    with sessions() as session:
        assert storage.best_for(session, H100, 4096, 4096, 4096) is None
        assert storage.best_for(session, H100, 4096, 4096, 4096, "bfloat16", "NT") is not None


def test_a_bfloat16_bench_writes_bfloat16_c_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --out-dtype C is the input type: its own file, configs pinned to OUT=2, no
    split-K family, C's bytes halved in the roofline, rows stored apart from float32 C's."""
    from tests.tuner.fakes import RuleEvaluator

    bench = RuleEvaluator(DeviceLimits(name=H100, arch="sm_90", sm_count=132))
    bench.provenance = dict(Stand.provenance)
    monkeypatch.setattr(runner, "start_gpu", lambda purpose, budget_ms: bench)
    suite = tmp_path / "shapes.csv"
    suite.write_text("square,4096,4096,4096\nodd,1000,1000,1000\n")
    monkeypatch.chdir(tmp_path)
    db = f"sqlite:///{tmp_path / 'half.db'}"
    code, _, err = cli(capsys, "bench", "--suite", str(suite), "--db", db, "--dtype",
                       "bfloat16", "--layout", "NT", "--trials", "4", "--rounds", "2",
                       "--warm-start", "0")  # fmt: skip
    assert code == 0, err
    doc = json.loads((tmp_path / "h100-suite-bfloat16-nt-out-bfloat16.json").read_text())
    kernels = [f for f in DEFAULT_HALF_FAMILIES if not f.endswith("_splitk")]
    assert doc["method"]["families"] == [*kernels, *VENDOR_FAMILIES]
    assert doc["method"]["out_dtype"] == "bfloat16"
    assert {r["out_dtype"] for r in doc["shapes"]} == {"bfloat16"}
    # Ours pinned to OUT 2; the vendor library's C type is the shape's, named by no parameter.
    assert all(
        r["config"].endswith("_dt1_ly1_out2") or r["config"].startswith("cublas")
        for r in doc["shapes"]
    )
    # 1000^3: 2e9 flop / (2*2e6 + 2e6) B = 333 flop/B x 3.35 TB/s = 1117 > 989.5: compute.
    roofs = [(r["roofline"]["bound_tflops"], r["roofline"]["limit"]) for r in doc["shapes"]]
    assert roofs == [(989.5, "compute"), (989.5, "compute")]
    with open_database(db)() as session:
        args = (session, H100, 4096, 4096, 4096, "bfloat16", "NT")
        assert storage.best_for(*args) is None  # float32 C: nothing measured
        assert storage.best_for(*args, out_dtype="bfloat16") is not None


def test_a_half_bench_on_an_a100_runs_without_the_hopper_families(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default half families include wgmma, which has no configs before sm_90: on an sm_80
    device the study searches hmma and hmma_splitk alone and never compiles a wgmma config."""
    from tests.tuner.fakes import RuleEvaluator

    bench = RuleEvaluator(DeviceLimits(name="NVIDIA A100-SXM4-80GB", arch="sm_80", sm_count=108))
    bench.provenance = dict(Stand.provenance)
    monkeypatch.setattr(runner, "start_gpu", lambda purpose, budget_ms: bench)
    suite = tmp_path / "shapes.csv"
    suite.write_text("square,2048,2048,2048\nodd,1001,999,1003\n")
    monkeypatch.chdir(tmp_path)
    db = f"sqlite:///{tmp_path / 'a100.db'}"
    code, _out, err = cli(capsys, "bench", "--suite", str(suite), "--db", db, "--dtype",
                         "float16", "--trials", "6", "--rounds", "2",
                         "--warm-start", "0")  # fmt: skip
    assert code == 0, err
    asked = bench.asked + bench.prepared
    # The vendor library is measured beside the kernels (``cublaslt``: no compile).
    assert asked and all(name.startswith(("hmma", "cublas")) for name in asked), asked
