"""Configs as Optuna trials: how a trial's parameters name a config, and back.

Each parameter is suggested as an index into its family's ordered values (ordinal, so
model-based samplers see that 64 lies between 32 and 128); with several families, the family
is a categorical parameter first and each family's parameters are named ``family.PARAM``.
"""

from __future__ import annotations

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import TrialState

from tuner.core.config import Config
from tuner.core.result import Result
from tuner.kernels.families import get_family


def suggest_config(trial: optuna.trial.BaseTrial, families: tuple[str, ...]) -> Config:
    """Sample a config: the family, then each parameter as an index into its ordered values
    (ordinal, so model-based samplers see that 64 lies between 32 and 128)."""
    family = families[0] if len(families) == 1 else trial.suggest_categorical("family", families)
    fam = get_family(str(family))
    params = {
        p.name: p.values[trial.suggest_int(f"{fam.name}.{p.name}", 0, len(p.values) - 1)]
        for p in fam.params
    }
    return fam.config(params)


def distributions(families: tuple[str, ...]) -> dict[str, BaseDistribution]:
    """The Optuna distributions ``suggest_config`` draws from, by parameter name."""
    dists: dict[str, BaseDistribution] = {}
    if len(families) > 1:
        dists["family"] = CategoricalDistribution(families)
    for family in families:
        for p in get_family(family).params:
            dists[f"{family}.{p.name}"] = IntDistribution(0, len(p.values) - 1)
    return dists


def finished_trial(result: Result, families: tuple[str, ...]) -> optuna.trial.FrozenTrial:
    """An evaluated candidate as a finished Optuna trial: COMPLETE with its time, else PRUNED."""
    config = get_family(result.family).config(result.params)
    params = trial_params(config, families)
    every = distributions(families)
    attrs: dict[str, object] = {"config": result.config_name, "status": result.status}
    ok = result.status == "ok" and result.ms is not None
    if ok:
        attrs.update(tflops=result.tflops, ratio=result.ratio)
    else:
        attrs["reason"] = result.reason
    return optuna.trial.create_trial(
        params=params,
        distributions={name: every[name] for name in params},
        value=result.ms if ok else None,
        state=TrialState.COMPLETE if ok else TrialState.PRUNED,
        user_attrs=attrs,
    )


def trial_params(config: Config, families: tuple[str, ...]) -> dict[str, object]:
    """The Optuna parameters that make ``suggest_config`` return ``config`` (for enqueueing)."""
    fam = get_family(config.family)
    params: dict[str, object] = {} if len(families) == 1 else {"family": config.family}
    for p in fam.params:
        params[f"{fam.name}.{p.name}"] = p.values.index(config[p.name])
    return params
