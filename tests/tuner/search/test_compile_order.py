"""Each round of a study's proposals is told to the sampler quickest compiles first: the vendor's
launches (nothing to compile), then the families by their compile times on the H200."""

from __future__ import annotations

from tuner.core.config import Config
from tuner.search.compile_order import (
    EXPECTED_COMPILE_S,
    UNKNOWN_COMPILE_S,
    expected_compile_s,
    quickest_compiles_first,
)


def config(family: str, bm: int = 64) -> Config:
    return Config(family, (("BM", bm),))


def test_the_vendor_compiles_nothing_and_a_family_takes_its_figure():
    assert expected_compile_s(Config("cublas", ())) == 0.0
    assert expected_compile_s(config("streamk")) == EXPECTED_COMPILE_S["streamk"]
    assert expected_compile_s(config("skinny")) == UNKNOWN_COMPILE_S


def test_a_round_is_ordered_by_expected_compile_time_ties_in_their_order():
    batch = [
        (config("streamk"), "t0"),
        (config("dmma_pipelined", 64), "t1"),
        (Config("cublas", ()), "t2"),
        (config("warptile"), "t3"),
        (config("dmma_pipelined", 128), "t4"),
        (config("skinny"), "t5"),
    ]
    ordered = quickest_compiles_first(batch)
    assert [trial for _, trial in ordered] == ["t2", "t1", "t4", "t5", "t3", "t0"]
    assert sorted(ordered, key=lambda item: item[1]) == batch  # nothing lost or added


def test_the_quick_families_are_quicker_than_the_slow_ones():
    quick = max(EXPECTED_COMPILE_S["dmma"], EXPECTED_COMPILE_S["dmma_pipelined"])
    slow = min(EXPECTED_COMPILE_S[f] for f in ("warptile", "pipelined", "streamk"))
    assert quick < UNKNOWN_COMPILE_S < slow
