"""Parameter importances (Optuna's PED-ANOVA) on stored trials."""

from __future__ import annotations

import random

import pytest

from api.importance import importances, parameter_names
from tests.api.test_trial_table import trial


def test_the_parameter_that_decides_the_speed_is_the_most_important() -> None:
    rng = random.Random(1)
    trials = []
    for number in range(300):
        params = {"BM": rng.choice([32, 64, 128, 256]), "BK": rng.choice([8, 16, 32])}
        speed = params["BM"] / 8 + rng.random()  # BM decides, BK is noise
        trials.append(trial(number, params=params, tflops=speed))
    found = importances(trials)
    assert next(iter(found)) == "BM"
    assert found["BM"] > 5 * found["BK"]
    assert sum(found.values()) == pytest.approx(1.0)


def test_family_counts_as_a_parameter_when_a_study_has_several() -> None:
    trials = [trial(0, params={"BM": 64, "S": 2}), trial(1, family="pipelined")]
    assert parameter_names(trials) == ["family", "BM"]  # only what both have
    assert importances([trial(0)]) == {}  # one trial: nothing to compare
