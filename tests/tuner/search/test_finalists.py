"""Which finalists a study re-measures, and which of its candidates it also tries on padded
operands (``tuner.search.finalists``)."""

from __future__ import annotations

from tuner.core.result import Result
from tuner.search.finalists import choose_finalists, padding_candidates


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


def test_padding_adds_the_fastest_of_each_leading_dimension_family() -> None:
    fastest = choose_finalists(DONE, None, 3)
    chosen = padding_candidates(DONE, fastest, ["dmma", "dmma_pipelined"])
    # dmma's fastest is already a finalist; dmma_pipelined's fastest that passed is p2 (p3
    # failed its check); streamk takes no leading dimensions.
    assert chosen == ["d1", "w1", "d2", "p2"]


def test_padding_adds_nothing_without_such_families() -> None:
    assert padding_candidates(DONE, ["d1"], []) == ["d1"]
