"""Parameter importances of a study, by Optuna's PED-ANOVA evaluator.

PED-ANOVA asks how differently each parameter is distributed among the best trials (the top 10 %
by TFLOP/s) than among all of them: a parameter whose good values are few matters. It needs no
fitted model (fANOVA's random forest needs scikit-learn and seconds on thousands of trials), and
it runs on the stored measurements, so sweeps preloaded without an Optuna study get importances
too. ``family`` is a parameter like the tile sizes: in a study over several families it is often
the one that mattered most.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.importance import PedAnovaImportanceEvaluator, get_param_importances

from api.study_data import StudyTrial

# Enough trials for the top 10 % to be a sample; a larger study is thinned evenly.
MAX_TRIALS = 2000


def parameter_names(trials: Sequence[StudyTrial]) -> list[str]:
    """Parameters every ok trial has, in the order the families declare them; ``family`` first
    when there is more than one."""
    ok = [t for t in trials if t.ok]
    if not ok:
        return []
    common = set(ok[0].params).intersection(*(t.params.keys() for t in ok[1:]))
    shared = [p for p in ok[0].params if p in common]
    return (["family"] if len({t.family for t in ok}) > 1 else []) + shared


def importances(trials: Sequence[StudyTrial]) -> dict[str, float]:
    """Importance of each shared parameter (they sum to 1), most important first; empty when
    fewer than two ok trials or no parameter varies. A study page keeps the result per study
    state (:class:`api.study_cache.CachedStudy`)."""
    ok = [t for t in trials if t.ok]
    step = max(1, -(-len(ok) // MAX_TRIALS))
    return _importances(ok[::step])


def _importances(trials: Sequence[StudyTrial]) -> dict[str, float]:
    names = parameter_names(trials)
    values = {name: [_value(t, name) for t in trials] for name in names}
    varied = [name for name in names if len(set(values[name])) > 1]
    if len(trials) < 2 or not varied:
        return {}
    distributions: dict[str, BaseDistribution] = {}
    for name in varied:
        seen = values[name]
        distributions[name] = (
            CategoricalDistribution(sorted(set(map(str, seen))))
            if name == "family"
            else IntDistribution(int(min(seen)), int(max(seen)))
        )
    optuna.logging.set_verbosity(logging.WARNING)
    study = optuna.create_study(direction="maximize")
    study.add_trials(
        optuna.trial.create_trial(
            params={name: _value(t, name) for name in varied},
            distributions=distributions,
            value=t.tflops,
        )
        for t in trials
    )
    found = get_param_importances(study, evaluator=PedAnovaImportanceEvaluator())
    return {name: float(value) for name, value in found.items()}


def _value(trial: StudyTrial, name: str) -> int | str:
    return trial.family if name == "family" else trial.params[name]
