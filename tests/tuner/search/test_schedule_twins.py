"""Stream-K twins (``tuner.search.schedule_twins``): which twin a data-parallel finalist has, and
how a study re-measures it and starts from a stored stream-K answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from tests.tuner.fakes import Forwarding, RuleEvaluator, rule_ms
from tuner.core.config import Config
from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape
from tuner.kernels.families import parse_config
from tuner.kernels.render import render
from tuner.kernels.resources import table_device
from tuner.search import study as study_module
from tuner.search.finalists import fastest_first_round, remeasure
from tuner.search.recorder import MemoryRecorder
from tuner.search.schedule_twins import grid_twin, resident_blocks_of, streamk_twin
from tuner.search.study import Study

H100 = table_device("sm_90")
TILE = "bm64_bn128_bk32_wm32_wn64_mk4_s3"
GRID = f"dmma_pipelined_{TILE}_sk1_mb1"


def _screened(config: Config, registers: int | None, smem: int | None) -> Result:
    return Result(
        config.name, config.family, config.as_dict(), "ok", registers=registers, smem_bytes=smem
    )


def test_a_twin_keeps_the_tile_and_runs_as_many_blocks_per_sm_as_its_source_did() -> None:
    """230 registers of 128 threads fit twice in an SM's 65536 (MINBLOCKS=1 asked for one); 64
    registers would fit more blocks than the twin's SMBLOCKS allows (no twin)."""
    grid = parse_config(GRID)
    smem = render(grid).dynamic_smem_bytes
    twin = streamk_twin(grid, _screened(grid, 230, smem), H100)
    assert twin is not None and twin.name == f"dmma_streamk_{TILE}_smb2"
    fewer = streamk_twin(grid, _screened(grid, 255, 3 * smem), H100)
    assert fewer is not None and fewer.name == f"dmma_streamk_{TILE}_smb1"
    assert resident_blocks_of(grid, _screened(grid, 64, 8192), H100) > 4
    assert streamk_twin(grid, _screened(grid, 64, 8192), H100) is None


def test_a_padded_finalist_has_a_padded_twin_and_the_static_estimate_stands_in() -> None:
    padded = parse_config(GRID + "_pad4")
    twin = streamk_twin(padded, None, H100)
    assert twin is not None and twin.pad == 4 and twin.family == "dmma_streamk"
    assert twin.kernel_name.startswith(f"dmma_streamk_{TILE}_smb")


def test_split_k_and_other_families_have_no_twin() -> None:
    assert streamk_twin(parse_config(f"dmma_pipelined_{TILE}_sk4_mb1"), None, H100) is None
    warptile = parse_config("warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128")
    assert streamk_twin(warptile, None, H100) is None
    assert grid_twin(warptile) is None


def test_grid_twin_undoes_streamk_twin() -> None:
    for name in (GRID, GRID + "_pad4", "dmma_pipelined_bm64_bn64_bk16_wm32_wn32_mk16_s4_sk1_mb3"):
        config = parse_config(name)
        twin = streamk_twin(config, None, H100)
        assert twin is not None
        back = grid_twin(twin)
        assert back is not None and back.pad == config.pad
        blocks = twin.as_dict()["SMBLOCKS"]
        assert back.as_dict() == {**config.as_dict(), "MINBLOCKS": blocks}


class _TwinsFaster(Forwarding):
    """The rule's times, except that configs with a stream-K twin screen in half of theirs
    (so that the finalists have twins) and every stream-K config runs in a tenth of its."""

    def evaluate(self, config: Config, shape: Shape) -> Result:
        result = self.inner.evaluate(config, shape)
        if streamk_twin(config, result, self.device) is None or result.ms is None:
            return result
        return replace(result, ms=result.ms / 2)

    def compare(
        self, configs: Sequence[Config], shape: Shape, rounds: int, budget_ms: float | None = None
    ) -> list[Comparison]:
        self.inner.compare(configs, shape, rounds, budget_ms)  # recorded there
        return [
            Comparison(
                c.name,
                "ok",
                None,
                (rule_ms(c.name) / (10 if c.family == "dmma_streamk" else 1),) * rounds,
                (1.5,) * rounds,
                0.0,
            )
            for c in configs
        ]


def _twin_study() -> tuple[RuleEvaluator, MemoryRecorder, Study]:
    """A study of one family with twins, on the rule fake whose twins run faster."""
    rule = RuleEvaluator(H100)
    recorder = MemoryRecorder()
    study = Study(Shape(1000, 1000, 1000), ("dmma_pipelined",), _TwinsFaster(rule), recorder,
                  sampler="random", seed=5)  # fmt: skip
    return rule, recorder, study


def _fastest_and_twins(recorder: MemoryRecorder, study: Study) -> tuple[list[Result], list[str]]:
    """The three fastest screened candidates, and the names of their stream-K twins."""
    screened = recorder.evaluated(study.name)
    fastest = sorted(
        (r for r in screened.values() if r.status == "ok" and r.ms is not None),
        key=lambda r: (r.ms, r.config_name),
    )[:3]
    twins = [streamk_twin(study.candidates[r.config_name], r, H100) for r in fastest]
    return fastest, [t.name for t in twins if t is not None]


def test_a_study_remeasures_the_twins_of_its_fastest_and_may_keep_one() -> None:
    rule, recorder, study = _twin_study()
    progress = study.run(trials=12)
    final = rule.compared[0]  # the finalists' first round: every one of them
    screened = recorder.evaluated(study.name)
    fastest, twins = _fastest_and_twins(recorder, study)
    assert twins and all(name in final for name in twins)
    assert not any(name.startswith("dmma_streamk") for name in screened)  # not screened
    best = progress.best
    assert best is not None and best.family == "dmma_streamk" and best.config_name in twins
    assert best.params == parse_config(best.config_name).as_dict()
    assert best.provenance["twin_of"] in {r.config_name for r in fastest}


def test_finalists_that_share_a_twin_remeasure_it_once_as_the_fastest_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finalists that differ only in MINBLOCKS and ran as many blocks per SM have one twin."""
    shared = parse_config(f"dmma_streamk_{TILE}_smb2")

    def one_twin(config: Config, result: Result | None, device: object) -> Config | None:
        return shared if config.family == "dmma_pipelined" else None

    monkeypatch.setattr(study_module, "streamk_twin", one_twin)
    rule, recorder, study = _twin_study()
    progress = study.run(trials=12)
    final = rule.compared[0]
    assert final.count(shared.name) == 1
    fastest = sorted(
        (r for r in recorder.evaluated(study.name).values() if r.ms is not None),
        key=lambda r: (r.ms, r.config_name),
    )
    twin = next(r for r in progress.finalists if r.config_name == shared.name)
    assert twin.provenance["twin_of"] == fastest[0].config_name


def test_the_twins_of_the_fastest_start_compiling_before_the_search_ends() -> None:
    rule, recorder, study = _twin_study()
    study.search(trials=12)
    assert not rule.compared  # the finalists are not measured yet
    _, twins = _fastest_and_twins(recorder, study)
    assert twins and all(name in rule.prepared for name in twins)
    assert len(set(rule.prepared)) == len(rule.prepared)  # each prepared once


def test_the_twins_of_an_early_fastest_compile_beside_the_search() -> None:
    """Once a first wave is measured, the twins of the fastest so far start compiling after
    each result, not only once the search proposes nothing more."""
    rule, recorder, study = _twin_study()
    study.search(trials=24)
    screened = recorder.evaluated(study.name)
    twins = [i for i, name in enumerate(rule.prepared) if name.startswith("dmma_streamk")]
    candidates = [i for i, name in enumerate(rule.prepared) if name in screened]
    assert twins and candidates
    assert twins[0] < candidates[-1]  # a twin was compiling before the last proposal
    assert len(set(rule.prepared)) == len(rule.prepared)  # each prepared once


def test_a_stored_streamk_answer_starts_a_study_of_the_grid_family_from_its_grid_twin() -> None:
    start = parse_config(f"dmma_streamk_{TILE}_smb2")

    def starts_of(families: tuple[str, ...]) -> list[str]:
        evaluator = RuleEvaluator(H100)
        study = Study(
            Shape(1000, 1000, 1000), families, evaluator, MemoryRecorder(), starts=[start]
        )
        study.prepare()
        return [c.name for c in study.starts]

    assert starts_of(("dmma_pipelined",)) == [f"dmma_pipelined_{TILE}_sk1_mb2"]
    assert starts_of(("dmma_streamk",)) == [start.name]
    assert starts_of(("warptile",)) == []


def test_a_finalist_another_worker_measured_is_fetched_during_the_search() -> None:
    """The fastest result so far came from another worker (recorded under the study's name):
    this worker never compiled it, so it asks for its kernel once a first wave is in, not at
    the finish; the candidates it measured itself are not asked for again."""
    rule, recorder, study = _twin_study()
    study.prepare()
    theirs = next(c for c in study.candidates.values() if c not in study.starts)
    fastest = replace(rule.evaluate(theirs, study.shape), ms=1e-4)
    recorder.record(fastest, H100, study.shape, study.name, None)
    rule.prepared.clear()
    study.search(trials=12)
    assert not rule.compared  # the finish has not begun
    assert theirs.name in rule.prepared
    own = [name for name in rule.prepared if name != theirs.name and name.startswith("dmma_p")]
    assert len(set(own)) == len(own)  # each of its own prepared once


class _LateTwins(_TwinsFaster):
    """As :class:`_TwinsFaster`, with every stream-K twin still compiling until a first
    re-measurement has run or it was asked about 200 times (a twin begun in the search's last
    results; the study polls every 2 ms)."""

    def __init__(self, inner: RuleEvaluator) -> None:
        super().__init__(inner)
        self.polls = 0

    def ready(self, config: Config) -> bool:
        if config.family != "dmma_streamk":
            return True
        self.polls += 1
        return bool(self.inner.compared) or self.polls > 200


def test_a_late_twin_is_remeasured_after_the_finalists_that_are_ready() -> None:
    """The device re-measures the finalists whose kernels are ready while a twin compiles,
    then the twin, which still becomes the best."""
    rule = RuleEvaluator(H100)
    recorder = MemoryRecorder()
    study = Study(Shape(1000, 1000, 1000), ("dmma_pipelined",), _LateTwins(rule), recorder,
                  sampler="random", seed=5)  # fmt: skip
    progress = study.run(trials=12)
    _, twins = _fastest_and_twins(recorder, study)
    assert twins
    first = rule.compared[0]
    assert first and not any(name.startswith("dmma_streamk") for name in first)
    later = [name for call in rule.compared[1:] for name in call]
    assert all(name in later for name in twins)
    best = progress.best
    assert best is not None and best.config_name in twins
    assert {r.config_name for r in progress.finalists} >= set(first) | set(twins)


def test_a_late_finalist_far_behind_the_others_gets_one_round() -> None:
    """The late finalists are kept or dropped after their first round by the fastest time of
    every finalist, those measured before them included."""
    rule = RuleEvaluator(H100)
    ready = [parse_config(GRID)]
    late = [parse_config(GRID.replace("_mb1", "_mb2"))]
    before = remeasure(rule, ready, Shape(1000, 1000, 1000), keep_within=1.10)
    assert fastest_first_round(before) == rule_ms(ready[0].name)
    slow = rule_ms(late[0].name)
    after = remeasure(rule, late, Shape(1000, 1000, 1000), keep_within=1.10, beside_ms=slow / 2)
    alone = remeasure(rule, late, Shape(1000, 1000, 1000), keep_within=1.10)
    assert len(after[0].ms_rounds) == 1  # twice as slow as the fastest before it
    assert len(alone[0].ms_rounds) > 1  # the fastest of its own group
