"""benchmarks/model_agreement.py: rank statistics, and a table whose times are the model's own."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np

from tests.lab_scripts import lab_script
from tuner.core.shape import parse_shape
from tuner.data import results_dir
from tuner.kernels.families import parse_config
from tuner.kernels.resources import table_device
from tuner.model.cost_model import estimate


def _module() -> ModuleType:
    return lab_script("model_agreement")


def test_ties_share_the_mean_of_their_ranks() -> None:
    ranks = _module().ranks(np.array([3.0, 1.0, 3.0, 2.0]))
    assert ranks.tolist() == [2.5, 0.0, 2.5, 1.0]


def test_agreement_counts_the_model_rank_of_the_first_near_best_config() -> None:
    ma = _module()
    shape = parse_shape("64x64x64")
    estimates = np.arange(1.0, 13.0)
    same = ma.agreement("t", shape, estimates, estimates * 2)
    assert (same.spearman, same.first_within, same.top_share) == (1.0, 1, 1.0)
    # Reversed: the best config is the model's last of 12, outside its first ten.
    reversed_ = ma.agreement("t", shape, estimates, estimates[::-1].copy())
    assert reversed_.spearman == -1.0
    assert reversed_.first_within == 12
    assert reversed_.top_share == 1.0 / 3.0


def _committed_streamk_names(count: int) -> list[str]:
    """The first ``count`` configs measured ok at 8192x8192x256 in the committed streamk sweep."""
    committed = results_dir() / "h100-sweep-streamk.jsonl"
    rows = [json.loads(line) for line in committed.read_text().splitlines()]
    ok = [r for r in rows if r.get("shape") == "8192x8192x256" and r.get("status") == "ok"]
    return [r["config_name"] for r in ok[:count]]


def _table(path: Path, shape: str, names: list[str], ms: list[float]) -> None:
    device = "NVIDIA H100 80GB HBM3"
    header = {"kind": "header", "device": device, "arch": "sm_90", "provenance": {"sm_count": 132}}
    rows = [
        {
            "kind": "result",
            "shape": shape,
            "config_name": n,
            "family": n.split("_")[0],
            "status": "ok",
            "ms": t,
        }
        for n, t in zip(names, ms, strict=True)
    ]
    path.write_text("\n".join(json.dumps(r) for r in [header, *rows]) + "\n")


def test_a_table_timed_as_the_model_predicts_agrees_perfectly(tmp_path: Path) -> None:
    names = _committed_streamk_names(30)
    shape, device = parse_shape("8192x8192x256"), table_device("sm_90")
    cycles = [estimate(parse_config(n), shape, device).cycles for n in names]
    table = tmp_path / "model.jsonl"
    _table(table, "8192x8192x256", names, [c / 1.98e6 for c in cycles])
    out = tmp_path / "agreement.json"

    assert _module().main(["--table", str(table), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    [row] = doc["agreement"]
    assert row["rows"] == 30
    assert row["spearman"] > 0.999
    assert row["first_within"] == 1
    assert row["top_share"] == 1.0
    errors = [v["relative_error"] for v in doc["by_family_and_warps"].values()]
    assert errors and all(abs(e - 1.0) < 1e-9 for e in errors)


def test_slower_few_warp_configs_show_in_the_relative_error(tmp_path: Path) -> None:
    names = _committed_streamk_names(40)
    shape, device = parse_shape("8192x8192x256"), table_device("sm_90")
    ma = _module()
    warps_of = {}
    ms = []
    for n in names:
        config = parse_config(n)
        warps = config["THREADS"] // 32 * config["SMBLOCKS"]
        warps_of[n] = warps
        # Twice the model's time below 8 warps per SM, the model's time otherwise.
        ms.append(estimate(config, shape, device).cycles / 1.98e6 * (2.0 if warps < 8 else 1.0))
    assert any(w < 8 for w in warps_of.values()) and any(w >= 8 for w in warps_of.values())
    table = tmp_path / "slow-few-warps.jsonl"
    _table(table, "8192x8192x256", names, ms)
    out = tmp_path / "agreement.json"
    assert ma.main(["--table", str(table), "--json", str(out)]) == 0
    by = json.loads(out.read_text())["by_family_and_warps"]
    few = [v["relative_error"] for k, v in by.items() if int(k.split()[1]) < 8]
    many = [v["relative_error"] for k, v in by.items() if int(k.split()[1]) >= 8]
    assert all(abs(f / m - 2.0) < 1e-9 for f in few for m in many)


def test_capped_issue_deals_warps_to_schedulers_round_robin() -> None:
    efficiency = _module().capped_issue(0.6)
    # 2 warps: two schedulers at 0.6, two idle; 6 warps: two at 2 warps (1.0), two at 0.6.
    assert [round(efficiency(w), 9) for w in (2, 4, 6, 8, 16)] == [0.3, 0.6, 0.8, 1.0, 1.0]
