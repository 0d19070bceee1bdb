"""The search strategies a study can use, by name.

``ranked`` proposes only valid candidates, in the order of an analytic cost model
(``tuner.ranking``) corrected online by the study's own measurements. It needs to know the shape
and its candidates: a sampler with a ``bind(shape, device, candidates, families)`` method gets
them from the study.
"""

from __future__ import annotations

import importlib.util
import warnings

import optuna

from tuner.errors import InputError

# TPE's `group` option is marked experimental; it is what conditional (per-family) spaces need.
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

SAMPLERS = ("tpe", "ranked", "random", "cmaes", "gp", "exhaustive")


def make_sampler(name: str, seed: int | None = None) -> optuna.samplers.BaseSampler | None:
    """An Optuna sampler for ``name``; None for ``exhaustive`` (the study walks every candidate).

    TPE is multivariate and grouped (parameters of one family are modelled jointly, families
    apart) with a constant liar, so several workers sharing a study do not propose the same
    point while one is being measured.
    """
    if name == "ranked":
        from tuner.ranking import RankedSampler  # numpy and the cost model, only when asked

        return RankedSampler(seed=seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(
            seed=seed, multivariate=True, group=True, constant_liar=True, n_startup_trials=8
        )
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(
            seed=seed,
            n_startup_trials=8,
            warn_independent_sampling=False,
            independent_sampler=optuna.samplers.RandomSampler(seed=seed),
        )
    if name == "gp":
        if importlib.util.find_spec("torch") is None:  # Optuna's GP sampler runs on PyTorch
            raise InputError("sampler 'gp' needs PyTorch: pip install torch")
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=8)
    if name == "exhaustive":
        return None
    raise InputError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")
