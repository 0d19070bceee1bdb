"""The search strategies a study can use, by name, and what the candidate-aware ones are told.

Two kinds of sampler:

* Optuna's own (``tpe``, ``random``, ``gp``) propose points of the parameter space;
  the study turns each into a config and answers invalid ones at once, at no cost.
* Candidate samplers (:class:`CandidateSampler`: ``ranked`` and ``exhaustive``) know the
  study's candidates (:class:`SearchContext`, given by :meth:`CandidateSampler.bind`) and propose
  only those: ``ranked`` in the order of the cost model (``tuner.model.cost_model``) corrected by
  measurements (``tuner.search.samplers.correction``), ``exhaustive`` every candidate in name order.
"""

from __future__ import annotations

import importlib.util
import warnings

import optuna

from tuner.core.errors import InputError
from tuner.search.sampler_names import DEFAULT_SAMPLER, SAMPLERS, check_sampler
from tuner.search.samplers._base import CandidateSampler, Observation, SearchContext
from tuner.search.samplers.exhaustive import ExhaustiveSampler

# TPE's `group` option is marked experimental; it is what conditional (per-family) spaces need.
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


__all__ = [
    "DEFAULT_SAMPLER",
    "SAMPLERS",
    "CandidateSampler",
    "ExhaustiveSampler",
    "Observation",
    "SearchContext",
    "check_sampler",
    "make_sampler",
]


def make_sampler(name: str, seed: int | None = None) -> optuna.samplers.BaseSampler:
    """An Optuna sampler for ``name``.

    TPE is multivariate and grouped (parameters of one family are modelled jointly, families
    apart) with a constant liar, so several workers sharing a study do not propose the same
    point while one is being measured.
    """
    if name == "ranked":
        from tuner.search.samplers.ranked import (
            RankedSampler,  # numpy and the cost model, only when asked
        )

        return RankedSampler(seed=seed)
    if name == "exhaustive":
        return ExhaustiveSampler(seed=seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(
            seed=seed, multivariate=True, group=True, constant_liar=True, n_startup_trials=8
        )
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "gp":
        if importlib.util.find_spec("torch") is None:  # Optuna's GP sampler runs on PyTorch
            raise InputError("sampler 'gp' needs PyTorch: pip install 'gemmtune[gp]'")
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=8)
    check_sampler(name)
    raise ValueError(f"sampler {name!r} is in SAMPLERS but nothing makes it")
