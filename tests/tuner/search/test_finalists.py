"""Which finalists a study re-measures, which of its candidates it also tries on padded
operands, and in how many rounds (``tuner.search.finalists``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tuner.core.config import Config
from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape
from tuner.kernels.families import CUBLAS, parse_config
from tuner.kernels.resources import table_device
from tuner.search.finalists import (
    DEFAULT_CALL,
    FINAL_KEEP_WITHIN,
    FINAL_MIN_ROUNDS,
    FINAL_ROUNDS,
    choose_finalists,
    padding_candidates,
    remeasure,
    settled,
)


def _result(name: str, family: str, ms: float | None, status: str = "ok") -> Result:
    return Result(name, family, {}, status, ms=ms)


DONE = {
    r.config_name: r
    for r in (
        _result("d1", "dmma", 1.0),
        _result("d2", "dmma", 1.1),
        _result("w1", "warptile", 1.05),
        _result("p1", "dmma_pipelined", 1.3),
        _result("p2", "dmma_pipelined", 1.2),
        _result("p3", "dmma_pipelined", 0.5, status="wrong_result"),
        _result("s1", "streamk", 1.25),
    )
}


def test_finalists_are_the_fastest_that_passed() -> None:
    assert choose_finalists(DONE, None, 3) == ["d1", "w1", "d2"]
    assert choose_finalists(DONE, "s1", 3) == ["d1", "w1", "d2", "s1"]


def test_the_default_call_is_a_finalist_whenever_it_passed() -> None:
    slow_call = {**DONE, "cublas": _result("cublas", "cublas", 1.9)}
    assert choose_finalists(slow_call, None, 3, also=[DEFAULT_CALL]) == ["d1", "w1", "d2", "cublas"]
    assert choose_finalists(slow_call, "s1", 3, also=[DEFAULT_CALL])[-2:] == ["s1", "cublas"]
    fast_call = {**DONE, "cublas": _result("cublas", "cublas", 0.9)}  # once, among the fastest
    assert choose_finalists(fast_call, None, 3, also=[DEFAULT_CALL]) == ["cublas", "d1", "w1"]
    failed = {**DONE, "cublas": _result("cublas", "cublas", None, status="launch_failed")}
    assert "cublas" not in choose_finalists(failed, None, 3, also=[DEFAULT_CALL])
    assert "cublas" not in choose_finalists(DONE, None, 3, also=[DEFAULT_CALL])  # not searched
    assert CUBLAS.config({}).name == DEFAULT_CALL


def test_a_study_re_measures_the_default_call_beside_its_fastest() -> None:
    from tests.tuner.fakes import RuleEvaluator, rule_ms
    from tuner.search.recorder import MemoryRecorder
    from tuner.search.study import Study

    class SlowCall(RuleEvaluator):
        """The default call screens slower than every kernel."""

        def evaluate(self, config: Config, shape: Shape) -> Result:
            result = super().evaluate(config, shape)
            return replace(result, ms=2.5, ratio=1.5 / 2.5) if config.name == "cublas" else result

    evaluator = SlowCall(table_device("sm_90"))
    shape = Shape(2048, 2048, 2048, "bfloat16", "NT")
    study = Study(shape, ("hmma", "cublas"), evaluator, MemoryRecorder(), "random", seed=3)
    study.run(trials=40)
    assert "cublas" in evaluator.asked
    kernels = sorted((n for n in evaluator.asked if n != "cublas"), key=rule_ms)
    # The first round of the finalists holds them all; later rounds only those near its fastest.
    assert set(evaluator.compared[0]) == {*kernels[:3], "cublas"}


def test_padding_adds_the_fastest_of_each_leading_dimension_family() -> None:
    fastest = choose_finalists(DONE, None, 3)
    chosen = padding_candidates(DONE, fastest, ["dmma", "dmma_pipelined"])
    # dmma's fastest is already a finalist; dmma_pipelined's fastest that passed is p2 (p3
    # failed its check); streamk takes no leading dimensions.
    assert chosen == ["d1", "w1", "d2", "p2"]


def test_padding_adds_nothing_without_such_families() -> None:
    assert padding_candidates(DONE, ["d1"], []) == ["d1"]


def _comparison(ours: tuple[float, ...], theirs: tuple[float, ...]) -> Comparison:
    return Comparison("k", "ok", None, ours, theirs, 0.0)


def test_a_finalist_is_settled_once_its_last_round_moves_no_median() -> None:
    assert settled(_comparison((1.0, 1.0, 1.004), (2.0, 2.0, 2.0)))
    # The last round moved our median from 1.0 to 1.5: not settled.
    assert not settled(_comparison((1.0, 2.0), (2.0, 2.0)))
    # cuBLAS's median moved: the ratio would, so not settled either.
    assert not settled(_comparison((1.0, 1.0, 1.0), (2.0, 2.4, 2.4)))
    # One round says nothing about how the next would move it; a failure is final.
    assert not settled(_comparison((1.0,), (2.0,)))
    assert settled(Comparison("k", "wrong_result", "off by 1"))
    # An outlier in the third round leaves the median where the first two put it.
    assert settled(_comparison((1.0, 1.0, 9.0), (2.0, 2.0, 2.0)))


class ScriptedRounds:
    """An evaluator whose re-measurements give each config's scripted times, round after round
    across calls, recording what each call asked for."""

    def __init__(
        self, times: dict[str, list[float]], fails_later: frozenset[str] = frozenset()
    ) -> None:
        self.times = {name: list(values) for name, values in times.items()}
        self.fails_later = fails_later
        self.calls: list[tuple[list[str], int]] = []

    def compare(
        self, configs: Sequence[Config], shape: Shape, rounds: int, budget_ms: float | None = None
    ) -> list[Comparison]:
        self.calls.append(([c.name for c in configs], rounds))
        out = []
        for config in configs:
            if self.calls[1:] and config.name in self.fails_later:
                out.append(Comparison(config.name, "wrong_result", "later check"))
                continue
            ours = tuple(self.times[config.name].pop(0) for _ in range(rounds))
            out.append(Comparison(config.name, "ok", None, ours, (2.0,) * rounds, 0.0))
        return out


A = parse_config("warptile_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128")
B = parse_config("warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128")
C = parse_config("warptile_bm128_bn64_bk8_wm64_wn32_wni1_tm4_tn4_t128")
SHAPE = Shape(256, 256, 256)


def test_steady_finalists_get_the_minimum_rounds_and_no_more() -> None:
    evaluator = ScriptedRounds({A.name: [1.0] * 5, B.name: [1.2] * 5})
    comparisons = remeasure(evaluator, [A, B], SHAPE)  # type: ignore[arg-type]
    assert evaluator.calls == [([A.name, B.name], FINAL_MIN_ROUNDS)]
    assert [len(c.ms_rounds) for c in comparisons] == [FINAL_MIN_ROUNDS] * 2


def test_a_finalist_whose_median_moves_gets_one_round_more_at_a_time() -> None:
    # A is steady; B's third round moves its median (1.0, 1.3 -> 1.3), its fourth settles it.
    evaluator = ScriptedRounds({A.name: [1.0] * 5, B.name: [1.0, 1.3, 1.3, 1.3, 1.3]})
    comparisons = remeasure(evaluator, [A, B], SHAPE)  # type: ignore[arg-type]
    assert evaluator.calls == [([A.name, B.name], FINAL_MIN_ROUNDS), ([B.name], 1)]
    assert comparisons[1].ms_rounds == (1.0, 1.3, 1.3, 1.3)
    assert comparisons[0].ms_rounds == (1.0, 1.0, 1.0)


def test_rounds_stop_at_the_maximum_however_the_medians_move() -> None:
    swinging = [1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0]
    evaluator = ScriptedRounds({A.name: swinging})
    [comparison] = remeasure(evaluator, [A], SHAPE)  # type: ignore[arg-type]
    assert len(comparison.ms_rounds) == FINAL_ROUNDS
    assert sum(rounds for _, rounds in evaluator.calls) == FINAL_ROUNDS


def test_a_finalist_that_fails_a_later_check_is_stored_failed() -> None:
    times = {A.name: [1.0, 1.5, 2.0, 2.0, 2.0], C.name: [1.0] * 5}
    evaluator = ScriptedRounds(times, frozenset({A.name}))
    comparisons = remeasure(evaluator, [A, C], SHAPE)  # type: ignore[arg-type]
    assert [c.status for c in comparisons] == ["wrong_result", "ok"]
    assert evaluator.calls[1:] == [([A.name], 1)]


def remeasure_keeping_near(
    evaluator: ScriptedRounds | FailsFirst, configs: list[Config]
) -> list[Comparison]:
    """``remeasure`` as a study's finalists are: those far behind after one round stop there."""
    return remeasure(evaluator, configs, SHAPE, keep_within=FINAL_KEEP_WITHIN)  # type: ignore[arg-type]


def test_a_finalist_far_behind_in_the_first_round_gets_no_more_rounds() -> None:
    # C's first round is 1.25x A's, beyond FINAL_KEEP_WITHIN; B's 1.05x is within it.
    times = {A.name: [1.0] * 5, B.name: [1.05] * 5, C.name: [1.25] * 5}
    evaluator = ScriptedRounds(times)
    comparisons = remeasure_keeping_near(evaluator, [A, B, C])
    assert evaluator.calls == [
        ([A.name, B.name, C.name], 1),
        ([A.name, B.name], FINAL_MIN_ROUNDS - 1),
    ]
    assert [len(c.ms_rounds) for c in comparisons] == [FINAL_MIN_ROUNDS, FINAL_MIN_ROUNDS, 1]


def test_after_the_first_round_only_the_near_ones_may_get_more() -> None:
    # B's median moves in its third round and settles in its fourth; C, far behind, is never
    # asked again however its one round would have moved.
    times = {A.name: [1.0] * 5, B.name: [1.0, 1.08, 1.08, 1.08, 1.08], C.name: [2.0, 9.0]}
    evaluator = ScriptedRounds(times)
    comparisons = remeasure_keeping_near(evaluator, [A, B, C])
    assert evaluator.calls[2:] == [([B.name], 1)]
    assert comparisons[1].ms_rounds == (1.0, 1.08, 1.08, 1.08)
    assert comparisons[2].ms_rounds == (2.0,)


def test_a_finalist_that_fails_its_first_round_goes_no_further() -> None:
    # A fails its check in the first request; the fastest that passed leads.
    evaluator = ScriptedRounds({A.name: [1.0] * 5, B.name: [1.5] * 5, C.name: [1.6] * 5})
    failing = FailsFirst(evaluator, A.name)
    comparisons = remeasure_keeping_near(failing, [A, B, C])
    assert [c.status for c in comparisons] == ["wrong_result", "ok", "ok"]
    assert evaluator.calls[1:] == [([B.name, C.name], FINAL_MIN_ROUNDS - 1)]


class FailsFirst:
    """``inner``, except that ``name`` fails its check in the first request."""

    def __init__(self, inner: ScriptedRounds, name: str) -> None:
        self.inner, self.name, self.first = inner, name, True

    def compare(
        self, configs: Sequence[Config], shape: Shape, rounds: int, budget_ms: float | None = None
    ) -> list[Comparison]:
        out = self.inner.compare(configs, shape, rounds, budget_ms)
        if self.first:
            self.first = False
            return [
                Comparison(c.config_name, "wrong_result", "off")
                if c.config_name == self.name
                else c
                for c in out
            ]
        return out
