"""benchmarks/odd_loss.py without a GPU: the twin it times against is the one the odd-shape
report pairs, its pre-padded views hold the operand at a padded launch's row pitch, and it
refuses a run that would time without saying where to write."""

from __future__ import annotations

import numpy as np

from tests.lab_scripts import LAB, lab_script, run_lab_script
from tuner.data.shape_lists import read_suite

odd_loss = lab_script("odd_loss")
in_wider_rows, twin_of = odd_loss.in_wider_rows, odd_loss.twin_of


def test_twins_are_the_aligned_suites_rows() -> None:
    odd = read_suite(LAB / "odd_shapes.csv")
    aligned = read_suite(LAB / "odd_shapes_aligned.csv")
    assert [twin_of(e.shape) for e in odd] == [e.shape for e in aligned]


def test_prepadded_views_keep_values_in_rows_of_a_padded_launchs_pitch() -> None:
    values = np.arange(5 * 7, dtype=np.float32).reshape(5, 7)
    view = in_wider_rows(np, values)
    assert view.shape == (5, 7)
    assert view.strides[0] == 32 * 4  # 7 floats in a 128-byte line, as a padded launch copies
    assert np.array_equal(view, values)
    assert not np.shares_memory(view, values)


def test_timing_needs_an_output_file() -> None:
    run = run_lab_script("odd_loss", "--case", "5x5x5:x")
    assert run.returncode == 2
    assert "--out is needed unless --profile is given" in run.stderr
