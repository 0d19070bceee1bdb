"""Studies on the replay table, in process: samplers, failures, warm start, claims."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

import optuna
import pytest

import storage
from storage import open_database
from tests.tuner.fakes import Forwarding
from tuner.answers.default_rule import default_config
from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.phases import Phase
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.data import RESULTS_ENV_VAR
from tuner.run.runner import untuned_answer, warm_starts
from tuner.search.evaluator import Ticket
from tuner.search.finalists import FINAL_KEEP_WITHIN, FINAL_MIN_ROUNDS
from tuner.search.recorder import MemoryRecorder
from tuner.search.replay import ReplayEvaluator
from tuner.search.samplers import make_sampler
from tuner.search.sql_recorder import SqlRecorder
from tuner.search.study import Study

BIG, MID, THIN = Shape(4096, 4096, 4096), Shape(1000, 1000, 1000), Shape(128, 4096, 4096)
WARPTILE = ("warptile",)
FAILURES = ("compile_failed", "wrong_result", "launch_failed", "timeout")


@pytest.fixture(scope="module")
def replay() -> ReplayEvaluator:
    return ReplayEvaluator()


def _names(recorder: MemoryRecorder, study: Study) -> list[str]:
    return list(recorder.results[study.name])  # insertion order = evaluation order


class FailingEvaluator(Forwarding):
    """Replay, except that some configs fail in each way a GPU kernel can; a wrong result
    comes with an impossibly fast time, so it would win if failures could ever be best."""

    @staticmethod
    def fate(config: Config) -> str:
        return ("ok", *FAILURES)[sum(map(ord, config.name)) % 5]

    def evaluate(self, config: Config, shape: Shape) -> Result:
        fate = self.fate(config)
        if fate == "ok":
            return self.inner.evaluate(config, shape)
        extra = {"ms": 1e-3, "tflops": 1e5} if fate == "wrong_result" else {}
        return Result.failed(config, fate, f"fake {fate} for {config.name}", **extra)


def test_failing_candidates_are_stored_with_reasons_and_never_best(
    replay: ReplayEvaluator, tmp_path: Path
) -> None:
    sessions = open_database(f"sqlite:///{tmp_path / 'fail.db'}")
    study = Study(BIG, WARPTILE, FailingEvaluator(replay), SqlRecorder(sessions), "random", seed=3)
    progress = study.run(trials=30)
    assert progress.evaluated == 30
    with sessions() as session:
        screened = storage.measurements_for_study(session, study.name)
        finals = storage.measurements_for_study(session, study.name, phase=Phase.FINAL)
        best = storage.best_for(session, replay.device.name, *(4096, 4096, 4096))
        found = storage.fastest_replayed(session, replay.device.name, *(4096, 4096, 4096))
    assert finals and all(r.phase == Phase.FINAL and r.study == study.name for r in finals)
    statuses = {r.status for r in screened}
    assert len(screened) == 30 and set(FAILURES) <= statuses and "ok" in statuses
    for row in screened:
        assert row.status == FailingEvaluator.fate(study.candidates[row.config_name])
        if row.status != "ok":
            assert row.reason == f"fake {row.status} for {row.config_name}"
    fastest_ok = min((r for r in screened if r.status == "ok"), key=lambda r: r.ms or 0.0)
    # The finalists (the three fastest ok) are re-measured and stored as final measurements;
    # what the study found is the fastest final one, never a failure with its impossible time;
    # replayed, it is no best config of the device (failures never are).
    ok_times = sorted((r.ms or 0.0, r.config_name) for r in screened if r.status == "ok")
    assert sorted(r.config_name for r in finals) == sorted(name for _, name in ok_times[:3])
    # Each gets the minimum rounds, or one where the first round put it beyond FINAL_KEEP_WITHIN
    # of the fastest finalist's time in that round.
    fastest_first = min(r.provenance["ms_rounds"][0] for r in finals)
    for r in finals:
        near = r.provenance["ms_rounds"][0] <= FINAL_KEEP_WITHIN * fastest_first
        assert r.status == "ok" and r.provenance["rounds"] == (FINAL_MIN_ROUNDS if near else 1)
    assert all(r.evaluator == "replay" for r in finals)
    assert best is None
    assert found is not None and found.phase == Phase.FINAL
    assert found.config_name == fastest_ok.config_name
    assert progress.best is not None and progress.best.config_name == fastest_ok.config_name


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_model_samplers_evaluate_distinct_valid_candidates(
    replay: ReplayEvaluator, sampler: str
) -> None:
    recorder = MemoryRecorder()
    study = Study(BIG, WARPTILE, replay, recorder, sampler, seed=1)
    progress = study.run(trials=12)
    names = _names(recorder, study)
    assert progress.evaluated == 12 and len(set(names)) == 12
    assert set(names) <= set(study.candidates)
    assert progress.best is not None and progress.best.status == "ok"
    assert progress.best.ms == min(r.ms for r in progress.history if r.ms is not None)
    trials = study.optuna.trials
    invalid = [t for t in trials if "invalid" in t.user_attrs]
    assert all(t.state.name == "PRUNED" for t in invalid)  # told at once, never evaluated
    assert {t.user_attrs["config"] for t in trials if "config" in t.user_attrs} == set(names)


def test_exhaustive_walks_every_candidate_in_order_then_stops(replay: ReplayEvaluator) -> None:
    recorder = MemoryRecorder()
    study = Study(THIN, WARPTILE, replay, recorder, "exhaustive")
    progress = study.run(trials=None)
    assert _names(recorder, study) == sorted(study.candidates)
    assert progress.evaluated == len(study.candidates) == 435
    assert study.run(trials=None).evaluated == 435  # nothing left: ends at once


@pytest.mark.parametrize("sampler", ["random", "tpe"])
def test_same_seed_same_sequence(replay: ReplayEvaluator, sampler: str) -> None:
    def sequence(seed: int) -> list[str]:
        recorder = MemoryRecorder()
        study = Study(BIG, WARPTILE, replay, recorder, sampler, seed=seed)
        study.run(trials=10)
        return _names(recorder, study)

    first = sequence(7)
    assert sequence(7) == first
    assert sequence(8) != first


def test_gp_runs_with_torch_or_names_the_install() -> None:
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(InputError, match=r"gemmtune\[gp\]") as info:
            make_sampler("gp", 0)
        assert "\n" not in str(info.value)
    else:
        assert make_sampler("gp", 0) is not None


def test_unknown_sampler_and_family_are_input_errors(replay: ReplayEvaluator) -> None:
    with pytest.raises(InputError, match="'annealing'"):
        Study(BIG, WARPTILE, replay, MemoryRecorder(), "annealing")
    with pytest.raises(InputError, match="tiled"):
        Study(BIG, ("tiled",), replay, MemoryRecorder())


def test_warm_start_evaluates_the_nearest_shapes_best_first(
    replay: ReplayEvaluator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No committed results: the committed sweeps hold THIN itself, whose bests would go first.
    monkeypatch.setenv(RESULTS_ENV_VAR, str(tmp_path))
    sessions = open_database(f"sqlite:///{tmp_path / 'warm.db'}")
    recorder = SqlRecorder(sessions)
    first = Study(MID, WARPTILE, replay, recorder, "random", seed=0).run(trials=6)
    assert first.best is not None
    neighbour_best = first.best.config_name
    # The search starts from the nearest replayed shape's fastest config; the answer the API
    # would give is not built on replayed times, so it is the default rule's.
    assert recorder.neighbours(replay.device, THIN, 3) == [neighbour_best]
    answer = untuned_answer(sessions, replay.device, THIN)
    assert answer == default_config(THIN.m, THIN.n)
    starts = warm_starts(recorder, replay.device, THIN, answer, 3)
    assert [c.name for c in starts[:2]] == [answer.name, neighbour_best]
    study = Study(THIN, WARPTILE, replay, recorder, "tpe", seed=0, starts=starts)
    study.prepare()
    assert neighbour_best in study.candidates  # else warm start has nothing to enqueue
    progress = study.run(trials=2)
    first_two = [answer.name, neighbour_best]
    assert [r.config_name for r in progress.history] == first_two
    assert [t.user_attrs["config"] for t in study.optuna.trials[:2]] == first_two


def test_no_warm_start_from_another_device(replay: ReplayEvaluator, tmp_path: Path) -> None:
    recorder = SqlRecorder(open_database(f"sqlite:///{tmp_path / 'other.db'}"))
    Study(MID, WARPTILE, replay, recorder, "random", seed=0).run(trials=3)
    other = replace(replay.device, name="another GPU")
    assert recorder.neighbours(other, THIN, 3) == []


def test_a_candidate_claimed_but_never_recorded_is_skipped(replay: ReplayEvaluator) -> None:
    """A worker killed mid-measurement leaves a claim and no result; a resumed study must not
    wait for it forever (the exhaustive walk, and other samplers' stale fallback, spun on it)."""
    recorder = MemoryRecorder()
    study = Study(Shape(64, 64, 64), WARPTILE, replay, recorder, "exhaustive")  # 12 candidates
    study.prepare()
    orphans = sorted(study.candidates)[:3]
    for name in orphans:
        assert recorder.claim(study.name, name)
    limit = len(study.candidates)
    progress = study.run(trials=limit, timeout_s=120)  # the bound only turns a hang into a failure
    assert progress.evaluated == limit - len(orphans)
    assert not set(orphans) & set(_names(recorder, study))


def test_only_evaluated_candidates_reach_the_optuna_database(
    replay: ReplayEvaluator, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'mirror.db'}"
    recorder = MemoryRecorder()
    study = Study(BIG, WARPTILE, replay, recorder, "tpe", seed=3, optuna_storage=url)
    progress = study.run(trials=10)
    proposals = study.optuna.trials  # in memory: invalid proposals included
    stored = optuna.load_study(study_name=study.name, storage=url).trials
    assert progress.invalid_proposals == sum("invalid" in t.user_attrs for t in proposals) > 0
    assert len(stored) == 10 < len(proposals)
    assert [t.user_attrs["config"] for t in stored] == _names(recorder, study)
    assert all(t.state.name == "COMPLETE" and t.value is not None for t in stored)


def test_a_resumed_study_samples_knowing_the_earlier_results(replay: ReplayEvaluator) -> None:
    recorder = MemoryRecorder()
    Study(BIG, WARPTILE, replay, recorder, "tpe", seed=5).run(trials=8)
    earlier = _names(recorder, Study(BIG, WARPTILE, replay, recorder, "tpe", seed=5))
    resumed = Study(BIG, WARPTILE, replay, recorder, "tpe", seed=5)
    progress = resumed.run(trials=12)
    assert progress.evaluated == 12
    names = _names(recorder, resumed)
    assert names[:8] == earlier and len(set(names)) == 12
    finished = {
        t.user_attrs.get("config") for t in resumed.optuna.trials if t.state.name == "COMPLETE"
    }
    assert set(earlier) <= finished  # the sampler's model was rebuilt from the recorder


def test_the_starts_compile_while_the_space_is_enumerated(monkeypatch: pytest.MonkeyPatch) -> None:
    import tuner.search.study
    from tests.tuner.fakes import RuleEvaluator
    from tuner.kernels.families import parse_config
    from tuner.kernels.resources import table_device

    evaluator = RuleEvaluator(table_device("sm_90"))
    starts = [
        parse_config("warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"),
        parse_config("warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128"),
    ]
    prepared_before_space: list[str] = []
    real_space = tuner.search.study.search_space

    def search_space(*args: object) -> dict[str, Config]:
        prepared_before_space.extend(evaluator.prepared)
        return real_space(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(tuner.search.study, "search_space", search_space)
    study = Study(BIG, WARPTILE, evaluator, MemoryRecorder(), "ranked", starts=starts)
    assert evaluator.prepared == []  # building a study starts nothing
    study.prepare()
    assert prepared_before_space == [c.name for c in starts]
    progress = study.run(trials=4)
    assert [r.config_name for r in progress.history[:2]] == [c.name for c in starts]


class InOrderTickets(Forwarding):
    """Tickets answered strictly in the order they were started, as the GPU worker answers
    them, and the `fail_at`-th start raising as a compile process's CUDA error did (the pool
    re-raises it in the study's thread)."""

    def __init__(self, inner: ReplayEvaluator, fail_at: int | None) -> None:
        super().__init__(inner)
        self.parallelism = 4  # proposals queued ahead, so a second one starts before a finish
        self.fail_at, self.starts = fail_at, 0
        self.outstanding: list[Ticket] = []

    def start(self, config: Config, shape: Shape) -> Ticket:
        self.starts += 1
        if self.starts == self.fail_at:
            raise RuntimeError("out of memory")
        ticket = Ticket(config, shape)
        self.outstanding.append(ticket)
        return ticket

    def finish(self, ticket: Ticket) -> Result:
        if not self.outstanding or self.outstanding[0] is not ticket:
            raise RuntimeError("finish tickets in the order they were started")
        self.outstanding.pop(0)
        return self.inner.evaluate(ticket.config, ticket.shape)


def test_a_study_that_fails_mid_flight_leaves_its_evaluator_fit_for_the_next(
    replay: ReplayEvaluator,
) -> None:
    """A failed study once left a started ticket behind, and every later study of that worker
    failed at its first finish (a four-GPU grid run lost 30 problems so)."""
    evaluator = InOrderTickets(replay, fail_at=5)
    failing = Study(BIG, WARPTILE, evaluator, MemoryRecorder(), "random", seed=2)
    with pytest.raises(RuntimeError, match="out of memory"):
        failing.run(trials=12)
    assert evaluator.outstanding == []  # the tickets started before the failure were finished
    evaluator.fail_at = None
    progress = Study(MID, WARPTILE, evaluator, MemoryRecorder(), "random", seed=2).run(trials=6)
    assert progress.evaluated == 6 and progress.best is not None
