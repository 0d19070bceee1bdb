"""benchmarks/odd_shapes.csv covers what issue 20 asks of it; its aligned twin and the report
that pairs the two."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from tests.lab_scripts import LAB, lab_script
from tuner.data import default_suite
from tuner.data.shape_lists import read_suite

ODD = read_suite(LAB / "odd_shapes.csv")
DIMS = [(e.shape.m, e.shape.n, e.shape.k) for e in ODD]


def _report() -> ModuleType:
    return lab_script("odd_report")


def _prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))


def test_odd_suite_is_disjoint_from_the_other_suites() -> None:
    assert len(ODD) >= 10
    for other in (default_suite(), LAB / "heldout.csv"):
        shapes = {(e.shape.m, e.shape.n, e.shape.k) for e in read_suite(other)}
        assert not shapes & set(DIMS), other


def test_held_out_odd_shapes_are_odd_and_in_no_other_suite() -> None:
    held = [(e.shape.m, e.shape.n, e.shape.k) for e in read_suite(LAB / "odd_heldout.csv")]
    assert len(held) >= 5
    assert all(n % 4 or k % 4 for _, n, k in held)  # a ragged row in A (K) or in B and C (N)
    for other in (default_suite(), LAB / "heldout.csv", LAB / "odd_shapes.csv"):
        shapes = {(e.shape.m, e.shape.n, e.shape.k) for e in read_suite(other)}
        assert not shapes & set(held), other


def test_odd_suite_covers_every_residue_and_kind_of_odd_shape() -> None:
    # The row lengths that decide the access width: K (rows of A) and N (rows of B and C).
    assert {n % 4 for _, n, _ in DIMS} | {k % 4 for _, _, k in DIMS} >= {1, 2, 3}
    assert all(any(d % 4 for d in dims) for dims in DIMS)  # every shape has an odd dimension
    assert sum(all(_prime(d) for d in dims) for dims in DIMS) >= 2
    assert any(min(m, n) < 64 and k % 2 for m, n, k in DIMS)
    llm = [(e.shape.m, e.shape.k) for e in ODD if e.label == "llm"]
    assert any(m % 2 for m, _ in llm) and any(k % 2 for _, k in llm)  # odd token counts


def test_aligned_suite_is_the_twin_of_the_odd_one_row_by_row() -> None:
    twin = _report().aligned_twin
    aligned = read_suite(LAB / "odd_shapes_aligned.csv")
    assert [(e.shape.m, e.shape.n, e.shape.k) for e in aligned] == [twin(d) for d in DIMS]
    assert [e.label for e in aligned] == [e.label for e in ODD]


def test_aligned_twin_rounds_to_the_nearest_multiple_of_4_ties_up() -> None:
    assert _report().aligned_twin((4097, 2047, 3070)) == (4096, 2048, 3072)


def _row(dims: tuple[int, int, int], tflops: float, ratio: float) -> dict[str, Any]:
    m, n, k = dims
    return {"class": "x", "m": m, "n": n, "k": k, "tflops": tflops, "ratio": ratio, "config": "c"}


def test_report_pairs_each_odd_shape_with_its_twin_and_checks_the_targets() -> None:
    report = _report()
    first, second = DIMS[0], DIMS[1]
    odd = {"suite": "benchmarks/odd_shapes.csv", "shapes": [_row(first, 48.0, 1.3)]}
    odd["shapes"].append(_row(second, 30.0, 0.9))
    aligned = {"shapes": [_row(report.aligned_twin(first), 50.0, 1.2)]}
    pairs = report.pairs(odd, aligned)
    assert len(pairs) == len(ODD)  # unmeasured suite shapes are listed too
    assert pairs[0][1]["tflops"] == 50.0 and pairs[1][1] is None
    text = report.targets(odd, aligned)
    assert "lowest 96%, 1 of 1 pairs | yes" in text
    assert "lowest 0.90, 1 below | **no**" in text
    assert f"2 of {len(ODD)} odd shapes measured, 1 with their twin" in text
