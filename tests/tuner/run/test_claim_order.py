"""A batch is queued with its ragged shapes first (their finalists are the longest, and only the
worker holding a study can run them), each group in the caller's order."""

from __future__ import annotations

import pytest

from storage.tune_queue import Problem
from tuner.core.shape import Shape
from tuner.run.claim_order import has_ragged_rows, ragged_first
from tuner.run.request import TuneRequest
from tuner.run.worker_processes import problems_of


def problem(m: int, n: int, k: int, dtype: str = "float32", layout: str = "NN") -> Problem:
    return Problem(Shape(m, n, k, dtype, layout), "exact")


@pytest.mark.parametrize(
    ("shape", "ragged"),
    [
        ((4096, 4096, 4096), False),
        ((1000, 1000, 1000), False),  # rows of 1000 floats: 250 whole vectors
        ((1001, 1000, 1000), False),  # M is no stored row length in NN
        ((1000, 1000, 1001), True),  # A's rows (K)
        ((1000, 1001, 1000), True),  # B's and C's rows (N)
    ],
)
def test_a_shape_is_ragged_where_a_stored_row_is_not_whole_vectors(shape, ragged):
    assert has_ragged_rows(problem(*shape)) is ragged


def test_only_cs_rows_ragged_counts_as_ragged():
    # NT: A is M x K and B is N x K, both rows of K; only C's rows (N) are ragged.
    assert has_ragged_rows(problem(128, 4097, 4096, "bfloat16", "NT"))
    # Half rows are whole vectors at multiples of 8 elements.
    assert not has_ragged_rows(problem(128, 4104, 4096, "bfloat16", "NT"))


def test_ragged_shapes_go_first_and_each_group_keeps_its_order():
    given = [
        problem(4096, 4096, 4096),
        problem(1000, 1001, 1000),
        problem(64, 8192, 4096),
        problem(997, 3989, 1021),
        problem(3001, 2999, 3003),
        problem(1536, 1536, 1536),
    ]
    ordered = ragged_first(given)
    assert ordered == [given[1], given[3], given[4], given[0], given[2], given[5]]
    assert sorted(map(str, ordered)) == sorted(map(str, given))  # nothing lost or added


def test_a_batch_is_queued_ragged_first():
    shapes = (Shape(4096, 4096, 4096), Shape(1531, 2053, 997), Shape(128, 4096, 4096))
    problems = problems_of(TuneRequest(shapes=shapes, families=("warptile",), evaluator="gpu"))
    assert [p.shape for p in problems] == [shapes[1], shapes[0], shapes[2]]
