"""The runner's warm-start policy and device rates: what a study starts from and knows."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from storage import open_database
from tests.tuner.fake_gpu import RATES
from tests.tuner.fakes import AsMeasured, Forwarding
from tests.tuner.search.test_priors import GPU, STREAMK, TABLE, WT_A, WT_B, WT_C, _row, _suite
from tuner.core.shape import Shape
from tuner.data import RESULTS_ENV_VAR
from tuner.gpu.requests import Probe
from tuner.gpu.worker import GpuEvaluator
from tuner.kernels.families import parse_config
from tuner.model.rates import DeviceRates
from tuner.run.runner import device_rates, untuned_answer, warm_starts
from tuner.search.recorder import MemoryRecorder
from tuner.search.replay import ReplayEvaluator
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.study import Study

MID = Shape(1000, 1000, 1000)
FIRST = parse_config("warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128")


@pytest.fixture
def committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A results folder of this test's own in place of the repository's."""
    folder = tmp_path / "results"
    monkeypatch.setenv(RESULTS_ENV_VAR, str(folder))
    return folder


def names(configs: list) -> list[str]:  # type: ignore[type-arg]
    return [c.name for c in configs]


def test_a_fresh_study_evaluates_its_first_answer_then_the_committed_best(
    committed: Path,
) -> None:
    replay = ReplayEvaluator(TABLE)
    _suite(committed, "h100", GPU, [_row(1000, 1000, 1000, WT_B), _row(4096, 4096, 4096, WT_A)])
    starts = warm_starts(MemoryRecorder(), replay.device, MID, FIRST, 3)
    assert names(starts) == [FIRST.name, WT_B, WT_A]
    study = Study(MID, ("warptile",), replay, MemoryRecorder(), "tpe", seed=3, starts=starts)
    progress = study.run(trials=3)
    assert [r.config_name for r in progress.history] == [FIRST.name, WT_B, WT_A]


def test_committed_starts_outside_the_families_or_turned_off_are_skipped(committed: Path) -> None:
    replay = ReplayEvaluator(TABLE)
    _suite(committed, "h100", GPU, [_row(1000, 1000, 1000, STREAMK), _row(4096, 4096, 4096, WT_A)])
    starts = warm_starts(MemoryRecorder(), replay.device, MID, FIRST, 3, ("warptile",))
    assert names(starts) == [FIRST.name, WT_A]  # STREAMK is not warptile
    assert names(warm_starts(MemoryRecorder(), replay.device, MID, FIRST, 1, ("warptile",))) == [
        FIRST.name,
        WT_A,
    ]  # the limit counts configs of the study's families only
    # With no warm start the first answer is still measured first: it is the baseline.
    assert names(warm_starts(MemoryRecorder(), replay.device, MID, FIRST, 0)) == [FIRST.name]


def test_the_shape_own_committed_best_goes_before_tuned_neighbours(
    committed: Path, tmp_path: Path
) -> None:
    replay = ReplayEvaluator(TABLE)
    recorder = SqlRecorder(open_database(f"sqlite:///{tmp_path / 'warm.db'}"))
    tuned = Study(Shape(4096, 4096, 4096), ("warptile",), replay, recorder, "random", seed=0)
    neighbour = tuned.run(trials=4).best
    assert neighbour is not None
    _suite(committed, "h100", GPU, [_row(8192, 8192, 8192, WT_C), _row(1000, 1000, 1000, WT_B)])
    expected = [FIRST.name, *dict.fromkeys([WT_B, neighbour.config_name, WT_C])]
    assert names(warm_starts(recorder, replay.device, MID, FIRST, 3)) == expected
    assert names(warm_starts(recorder, replay.device, MID, FIRST, 1)) == [FIRST.name, WT_B]


def test_the_untuned_answer_is_the_stored_best_else_the_nearest_else_the_rule(
    tmp_path: Path,
) -> None:
    replay = ReplayEvaluator(TABLE)
    sessions = open_database(f"sqlite:///{tmp_path / 'answer.db'}")
    big, small = Shape(4096, 4096, 4096), Shape(64, 64, 64)
    rule_big, rule_small = (
        untuned_answer(sessions, replay.device, big),
        untuned_answer(sessions, replay.device, small),
    )
    assert rule_big != rule_small  # the default rule picks by the number of output tiles
    # A replayed study's times are no answer (tuner.core.evaluators): still the rule's.
    replayed = open_database(f"sqlite:///{tmp_path / 'replayed.db'}")
    Study(big, ("warptile",), replay, SqlRecorder(replayed), "random", seed=1).run(6)
    assert untuned_answer(replayed, replay.device, big) == rule_big
    measured = AsMeasured(replay)
    best = Study(big, ("warptile",), measured, SqlRecorder(sessions), "random", seed=1).run(6)
    assert best.best is not None
    assert untuned_answer(sessions, replay.device, big).name == best.best.config_name
    near = Shape(4000, 4096, 4096)
    assert untuned_answer(sessions, replay.device, near).name == best.best.config_name
    same_kind = replace(replay.device, name="another GPU")  # sm_90 with 132 SMs too
    assert untuned_answer(sessions, same_kind, big).name == best.best.config_name
    other_kind = replace(replay.device, name="a smaller GPU", arch="sm_86", sm_count=84)
    assert untuned_answer(sessions, other_kind, big) == rule_big


class Probing(Forwarding):
    def __init__(self, inner: ReplayEvaluator, rates: DeviceRates | None) -> None:
        super().__init__(inner)
        self.rates, self.probes = rates, 0

    def probe(self) -> DeviceRates | None:
        self.probes += 1
        return self.rates


def test_rates_are_probed_once_then_read_back_and_the_notes_say_so() -> None:
    rates = DeviceRates(60.0, 61.0, 3.0, 2.0, "probed on the fake GPU")
    evaluator, recorder = Probing(ReplayEvaluator(TABLE), rates), MemoryRecorder()
    notes: list[str] = []
    assert device_rates(recorder, evaluator, notes) == rates
    assert device_rates(recorder, evaluator, notes) == rates
    assert evaluator.probes == 1 and all("probed on the fake GPU" in n for n in notes)


def test_a_failed_probe_falls_back_to_the_table_or_to_measurements_and_says_so() -> None:
    evaluator = Probing(ReplayEvaluator(TABLE), None)
    notes: list[str] = []
    assert device_rates(MemoryRecorder(), evaluator, notes) is None
    assert "no probed rates" in notes[0] and "table for sm_90" in notes[0]
    evaluator.device = replace(evaluator.device, arch="sm_100")
    notes.clear()
    assert device_rates(MemoryRecorder(), evaluator, notes) is None
    assert "no table for sm_100" in notes[0] and "its own measurements" in notes[0]


def test_starts_measured_for_another_type_of_c_are_pinned_for_the_study(committed: Path) -> None:
    """A suite from before C had a type (float32 C) starts a study of bfloat16 C with the same
    tiles writing bfloat16; its split-K config, which writes float32 C only, is left out."""
    replay = ReplayEvaluator(TABLE)
    hmma = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly1"
    split = "hmma_splitk_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_sk4_dt1_ly1"
    row = {**_row(1000, 1000, 1000, hmma), "dtype": "bfloat16", "layout": "NT"}
    other = {**_row(1000, 1000, 1001, split), "dtype": "bfloat16", "layout": "NT"}
    _suite(committed, "h100", GPU, [row, other])
    half = Shape(1000, 1000, 1000, "bfloat16", "NT")
    first = parse_config("hmma_bm64_bn64_bk32_wpm2_wpn2_s3_sw1_dt1_ly1_out2")
    starts = warm_starts(MemoryRecorder(), replay.device, half, first, 3)
    assert names(starts) == [first.name, hmma + "_out2"]
    wide = warm_starts(MemoryRecorder(), replay.device, half.with_out("float32"), first, 3)
    assert hmma in names(wide) and split in names(wide)


def test_a_gpu_is_probed_once_per_command_and_later_commands_read_its_rates(
    fake_gpu_evaluator: GpuEvaluator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first command probes (once, however many studies ask) and keeps the rates in its
    database and beside the kernel cache; a later command on the same database reads them
    there, and one on a new database from the kept file: neither asks its worker to probe."""
    monkeypatch.setenv("GEMMTUNE_CACHE_DIR", str(tmp_path / "cache"))
    asked: list[object] = []
    ask = fake_gpu_evaluator._ask

    def counting(request: object, timeout_s: float) -> object:
        asked.append(request)
        return ask(request, timeout_s)

    monkeypatch.setattr(fake_gpu_evaluator, "_ask", counting)
    first_db = SqlRecorder(open_database(f"sqlite:///{tmp_path / 'first.db'}"))
    notes: list[str] = []
    for _ in range(3):  # three studies of one command
        assert device_rates(first_db, fake_gpu_evaluator, notes) == RATES
    assert fake_gpu_evaluator.probe() == RATES
    assert [type(r) for r in asked] == [Probe]
    assert first_db.rates(fake_gpu_evaluator.device) == RATES

    asked.clear()
    same_db = SqlRecorder(open_database(f"sqlite:///{tmp_path / 'first.db'}"))
    assert device_rates(same_db, fake_gpu_evaluator, notes) == RATES
    new_db = SqlRecorder(open_database(f"sqlite:///{tmp_path / 'second.db'}"))
    assert new_db.rates(fake_gpu_evaluator.device) is None
    monkeypatch.setattr(fake_gpu_evaluator, "_probed", False)  # as a new command's evaluator
    assert device_rates(new_db, fake_gpu_evaluator, notes) == RATES
    assert asked == []
    assert new_db.rates(fake_gpu_evaluator.device) == RATES  # stored in the new database too


def test_a_failed_probe_is_not_asked_again_by_the_next_study(
    fake_gpu_evaluator: GpuEvaluator, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[object] = []

    def failing(request: object, timeout_s: float) -> object:
        asked.append(request)
        return {"status": "launch_failed", "reason": "no probe today"}

    monkeypatch.setattr(fake_gpu_evaluator, "_ask", failing)
    assert fake_gpu_evaluator.probe() is None
    assert fake_gpu_evaluator.probe() is None
    assert len(asked) == 1
