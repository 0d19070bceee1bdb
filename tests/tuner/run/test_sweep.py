"""Sweeps without a GPU: what they select, skip and write, and where the time limit cuts them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tuner.fakes import RuleEvaluator, rule_ms
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.data import read_sweep_table
from tuner.kernels.families import parse_config
from tuner.kernels.resources import DeviceLimits
from tuner.kernels.space import Space
from tuner.run.sweep import SweepRequest, parse_where, run_sweep, selected
from tuner.search.replay import ReplayEvaluator

H100 = DeviceLimits(name="NVIDIA H100 80GB HBM3", arch="sm_90", sm_count=132)
PROVENANCE: dict[str, Any] = {"device": H100.name, "sm_count": 132, "compute_capability": "9.0"}
SMALL, ODD = Shape(256, 256, 256), Shape(1000, 1000, 1000)
BM16 = {"BM": frozenset({16})}  # a slice of smem_tiling's 52 configs


def fake_gpu() -> RuleEvaluator:
    gpu = RuleEvaluator(H100)
    gpu.provenance = dict(PROVENANCE)
    return gpu


def request(out: Path, **fields: Any) -> SweepRequest:
    given: dict[str, Any] = {"families": ("smem_tiling",), "shapes": (SMALL, ODD), "where": BM16}
    return SweepRequest(out=out, **{**given, **fields})


def sliced(shape: Shape) -> list[str]:
    return [
        c.name for c in Space("smem_tiling", shape, H100).candidates() if c.as_dict()["BM"] == 16
    ]


def test_parse_where_reads_names_and_values() -> None:
    assert parse_where(["threads=128,256", " BK =32"]) == {
        "THREADS": frozenset({128, 256}),
        "BK": frozenset({32}),
    }


@pytest.mark.parametrize("item", ["BK", "BK=", "=32", "BK=a,32", "BK=32,"])
def test_parse_where_names_a_malformed_item(item: str) -> None:
    with pytest.raises(InputError, match=rf"--where '{item}' must look like NAME=INT\[,INT...\]"):
        parse_where([item])


def test_selected_ignores_parameters_a_config_does_not_have() -> None:
    config = parse_config("smem_tiling_bm16_bn32_bk8")
    assert selected(config, {"BM": frozenset({16}), "THREADS": frozenset({999})})
    assert not selected(config, {"BN": frozenset({64})})


def test_a_sweep_measures_the_slice_on_every_shape_and_replay_reads_its_table(
    tmp_path: Path,
) -> None:
    gpu, out = fake_gpu(), tmp_path / "h100-sweep-slice.jsonl"
    said: list[str] = []
    outcome = run_sweep(request(out), gpu, said.append)
    wanted = sliced(SMALL) + sliced(ODD)
    assert wanted and gpu.asked == wanted
    assert set(gpu.prepared) == set(wanted)  # compiled ahead, each once
    assert (outcome.rows, outcome.cut_short) == (len(wanted), False)
    assert said == [f"smem_tiling: {len(set(wanted))} configs to compile"]
    table = read_sweep_table(out)
    assert table.header.gpu.name == H100.name and table.header.details["where"] == {"BM": [16]}
    assert [(str(r.shape), r.config_name) for r in table.rows] == [
        *((str(SMALL), name) for name in sliced(SMALL)),
        *((str(ODD), name) for name in sliced(ODD)),
    ]
    replay = ReplayEvaluator(out)
    first = parse_config(sliced(ODD)[0])
    assert replay.evaluate(first, ODD).ms == pytest.approx(rule_ms(first.name))


def test_a_resumed_sweep_measures_only_what_the_earlier_piece_did_not(tmp_path: Path) -> None:
    earlier = tmp_path / "piece-1.jsonl"
    run_sweep(request(earlier, shapes=(SMALL,)), fake_gpu(), lambda _: None)
    gpu = fake_gpu()
    outcome = run_sweep(request(tmp_path / "piece-2.jsonl", resume=(earlier,)), gpu, print)
    assert gpu.asked == sliced(ODD) and outcome.rows == len(sliced(ODD))


def test_the_time_limit_ends_a_sweep_with_a_readable_table(tmp_path: Path) -> None:
    ticks: Iterator[float] = iter(range(0, 10_000, 30))  # each look at the clock: 30 s later
    out = tmp_path / "cut.jsonl"
    said: list[str] = []
    outcome = run_sweep(
        request(out, max_minutes=1.5), fake_gpu(), said.append, lambda: float(next(ticks))
    )
    # The deadline is 90 s: the looks at 30, 60 and 90 s measure, the one at 120 s stops.
    assert (outcome.rows, outcome.cut_short) == (3, True)
    assert said[-1] == "time limit reached"
    assert len(read_sweep_table(out).rows) == 3


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"families": ()}, "at least one --family"),
        ({"families": ("tiled",)}, "unknown family 'tiled'; choose one of"),
        ({"shapes": ()}, "at least one --shape"),
        ({"shapes": (Shape(64, 64, 64, "float16"),)}, "float32 NN shapes only, got float16 NN"),
        ({"budget_ms": 0.0}, "must be > 0, got 0.0 and 9.0"),
    ],
)
def test_a_request_names_the_value_that_cannot_run(
    tmp_path: Path, fields: dict[str, Any], needle: str
) -> None:
    with pytest.raises(InputError, match=needle):
        request(tmp_path / "out.jsonl", **fields).checked()


def test_a_request_never_overwrites_the_table_it_resumes(tmp_path: Path) -> None:
    earlier = tmp_path / "piece.jsonl"
    earlier.write_text("")
    with pytest.raises(InputError, match="also a --resume table"):
        request(earlier, resume=(earlier,)).checked()
    with pytest.raises(InputError, match=r"--resume table .*gone.jsonl does not exist"):
        request(tmp_path / "out.jsonl", resume=(tmp_path / "gone.jsonl",)).checked()
