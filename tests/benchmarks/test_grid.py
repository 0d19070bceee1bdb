"""The shipped H100 grid (benchmarks/grid/h100-grid.csv): what benchmarks/llm_grid.py writes,
at least 400 distinct problems of the kinds issue 44 names, none of them held out."""

from __future__ import annotations

from collections import Counter

from tests.lab_scripts import LAB, lab_script
from tuner.data.shape_lists import read_suite

GRID = LAB / "grid" / "h100-grid.csv"


def test_the_committed_grid_is_what_the_script_writes() -> None:
    assert GRID.read_text() == lab_script("llm_grid").grid_csv()


def test_the_grid_holds_400_distinct_problems_of_every_asked_kind() -> None:
    entries = read_suite(GRID)
    problems = Counter(
        (e.shape.m, e.shape.n, e.shape.k, e.shape.dtype, e.shape.layout) for e in entries
    )
    assert len(entries) >= 400 and max(problems.values()) == 1
    kinds = Counter((e.shape.dtype, e.shape.layout) for e in entries)
    assert {("float32", "NN"), ("bfloat16", "NT"), ("bfloat16", "NN")} <= set(kinds)
    tokens = {e.shape.m for e in entries if e.label and e.label.endswith("_qkv")}
    assert {1, 16, 128, 512, 1000, 2048, 4096, 8192} <= tokens
    hidden = {e.shape.k for e in entries if e.label and e.label.endswith("_qkv")}
    assert min(hidden) == 2048 and max(hidden) == 8192


def test_no_held_out_shape_is_in_the_grid() -> None:
    grid = {(e.shape.m, e.shape.n, e.shape.k) for e in read_suite(GRID)}
    for name in ("heldout.csv", "hopper_heldout.csv", "grid_heldout.csv", "odd_heldout.csv"):
        held = {(e.shape.m, e.shape.n, e.shape.k) for e in read_suite(LAB / name)}
        assert held and not held & grid, name
