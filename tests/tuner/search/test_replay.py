"""The replay evaluator answers from the committed H100 sweep, exactly as recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tuner.core.errors import InputError
from tuner.core.shape import Shape, parse_shape
from tuner.core.statuses import STATUSES
from tuner.data import RESULTS_ENV_VAR
from tuner.kernels.families import parse_config
from tuner.search.replay import ReplayEvaluator, default_table

SHAPES = (Shape(4096, 4096, 4096), Shape(1000, 1000, 1000), Shape(128, 4096, 4096))
DEFAULT_TABLE = default_table()


@pytest.fixture(scope="module")
def replay() -> ReplayEvaluator:
    return ReplayEvaluator()


def _table_rows() -> list[dict[str, object]]:
    rows = [json.loads(line) for line in DEFAULT_TABLE.read_text().splitlines()]
    return [r for r in rows if r.get("kind") == "result"]


def test_table_covers_the_three_sweep_shapes(replay: ReplayEvaluator) -> None:
    assert set(replay.shapes()) == set(SHAPES)
    assert replay.device.name == "NVIDIA H100 80GB HBM3" and replay.device.arch == "sm_90"
    for shape in SHAPES:
        families = {c.family for c in replay.configs(shape)}
        assert families == {"warptile", "pipelined"}


def test_answers_every_row_from_the_table(replay: ReplayEvaluator) -> None:
    rows = _table_rows()
    assert len(rows) > 6000
    for row in rows[::97]:  # a spread sample over all shapes and both families
        shape = parse_shape(str(row["shape"]))
        result = replay.evaluate(parse_config(str(row["config_name"])), shape)
        assert result.status == row["status"] and result.status in STATUSES
        assert result.ms == row["ms"] and result.cublas_ms == row["cublas_ms"]
        assert result.registers == row["registers"] and result.occupancy == row["occupancy"]
        if result.status == "ok":
            assert result.ms is not None and result.cublas_ms is not None
            assert result.tflops == pytest.approx(shape.flops / (result.ms * 1e9))
            assert result.ratio == pytest.approx(result.cublas_ms / result.ms)
        else:
            assert result.reason and result.tflops is None
    assert result.provenance["replayed_from"] == DEFAULT_TABLE.name
    assert result.provenance["sm_count"] == 132


def test_unknown_config_is_pruned_as_not_measured(replay: ReplayEvaluator) -> None:
    config = parse_config("warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128")
    result = replay.evaluate(config, Shape(512, 512, 512))  # a shape the sweep did not measure
    assert result.status == "pruned"
    assert result.reason is not None and "not measured" in result.reason
    assert result.ms is None and result.config_name == config.name


def test_counts_its_evaluations() -> None:
    replay = ReplayEvaluator()
    config = replay.configs(SHAPES[0])[0]
    replay.evaluate(config, SHAPES[0])
    replay.evaluate(config, SHAPES[1])
    assert replay.evaluations == 2


def test_missing_table_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        ReplayEvaluator(tmp_path / "nope.jsonl")


def test_the_default_table_is_in_the_results_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RESULTS_ENV_VAR, str(tmp_path))
    with pytest.raises(InputError, match=rf"{tmp_path} \(from \${RESULTS_ENV_VAR}\).*--replay"):
        ReplayEvaluator()
    _table(tmp_path / "h100-sweep.jsonl", "GPU X", [("64x64x64", WARP, 2.0)])
    assert ReplayEvaluator().device.name == "GPU X"


def test_malformed_table_names_the_line(tmp_path: Path) -> None:
    table = tmp_path / "bad.jsonl"
    lines = DEFAULT_TABLE.read_text().splitlines()[:3]
    table.write_text("\n".join([*lines, '{"kind": "result", "shape": ']) + "\n")
    with pytest.raises(InputError, match=r"bad\.jsonl line 4"):
        ReplayEvaluator(table)


@pytest.mark.parametrize(
    "row",
    [
        '{"kind": "result", "config_name": "x"}',
        '{"kind": "result", "shape": "4096x", "config_name": "x"}',
        "[1, 2]",
    ],
    ids=["no-shape", "bad-shape", "not-an-object"],
)
def test_malformed_row_is_input_error(tmp_path: Path, row: str) -> None:
    table = tmp_path / "rows.jsonl"
    table.write_text(DEFAULT_TABLE.read_text().splitlines()[0] + "\n" + row + "\n")
    with pytest.raises(InputError, match=r"rows\.jsonl line 2"):
        ReplayEvaluator(table)


RESULTS = DEFAULT_TABLE.parent


def _table(path: Path, device: str, rows: list[tuple[str, str, float]]) -> Path:
    """A small replay table: a header for ``device``, then (shape, config, ms) rows."""
    provenance = {"device": device, "sm_count": 132}
    lines = [{"kind": "header", "device": device, "arch": "sm_90", "provenance": provenance}]
    for shape, name, ms in rows:
        family = parse_config(name).family
        lines.append(
            {
                "kind": "result",
                "shape": shape,
                "config_name": name,
                "family": family,
                "status": "ok",
                "ms": ms,
                "cublas_ms": 1.0,
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


WARP = "warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128"
SKINNY = "skinny_bm16_bn256_tn8_lk2_ku2_sk4"


def test_several_tables_merge_and_the_later_row_wins(tmp_path: Path) -> None:
    old = _table(tmp_path / "old.jsonl", "GPU X", [("64x64x64", WARP, 2.0)])
    new = _table(
        tmp_path / "new.jsonl", "GPU X", [("64x64x64", WARP, 1.0), ("16x64x64", SKINNY, 3.0)]
    )
    replay = ReplayEvaluator([old, new])
    assert replay.evaluate(parse_config(WARP), Shape(64, 64, 64)).ms == 1.0
    assert replay.evaluate(parse_config(SKINNY), Shape(16, 64, 64)).ms == 3.0
    assert replay.families == ("warptile", "skinny")
    assert replay.measured_configs(Shape(64, 64, 64)) == {WARP}
    assert replay.provenance["replayed_from"] == "old.jsonl + new.jsonl"
    assert ReplayEvaluator([new, old]).evaluate(parse_config(WARP), Shape(64, 64, 64)).ms == 2.0


def test_tables_of_different_devices_do_not_merge(tmp_path: Path) -> None:
    one = _table(tmp_path / "one.jsonl", "GPU X", [("64x64x64", WARP, 2.0)])
    two = _table(tmp_path / "two.jsonl", "GPU Y", [("64x64x64", WARP, 1.0)])
    with pytest.raises(InputError, match=r"different devices.*GPU X, GPU Y"):
        ReplayEvaluator([one, two])
    with pytest.raises(InputError, match="at least one table"):
        ReplayEvaluator([])


def test_a_study_on_a_replay_searches_only_what_the_tables_hold() -> None:
    from tuner.kernels.space import Space
    from tuner.search.recorder import MemoryRecorder
    from tuner.search.study import Study

    replay = ReplayEvaluator(
        [RESULTS / "h100-sweep-streamk.jsonl", RESULTS / "h100-sweep-skinny-128.jsonl"]
    )
    shape, families = Shape(128, 4096, 4096), ("streamk", "skinny")
    study = Study(shape, families, replay, MemoryRecorder(), "exhaustive")
    study.prepare()
    held = replay.measured_configs(shape)
    space = {c.name for f in families for c in Space(f, shape, replay.device).candidates()}
    assert set(study.candidates) == held & space and len(space) > len(study.candidates) > 400
    progress = study.run()
    assert progress.evaluated == len(study.candidates)
    assert not [r for r in progress.history if r.reason and "not measured" in r.reason]
    # A shape the tables do not hold keeps the whole space; each candidate is "not measured".
    other = Study(Shape(64, 64, 64), ("streamk",), replay, MemoryRecorder())
    other.prepare()
    assert set(other.candidates) == {
        c.name for c in Space("streamk", Shape(64, 64, 64), replay.device).candidates()
    }
