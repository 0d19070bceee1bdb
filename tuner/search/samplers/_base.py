"""What every candidate sampler is: the study's candidates and history it is told, and how it
turns Optuna's ask into one of them.

A candidate sampler (``ranked``, ``exhaustive``) proposes only the study's own candidates, which
it learns once through :meth:`CandidateSampler.bind`. Every study makes its own sampler
(``make_sampler``), so what a sampler remembers (what it chose, which trials were enqueued) belongs
to that study alone; what other workers of a shared study measured reaches it through the trials
Optuna passes in.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.distributions import BaseDistribution
from optuna.trial import FrozenTrial, TrialState

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.candidate import Candidate
from tuner.kernels.families import get_family
from tuner.kernels.resources import DeviceLimits
from tuner.model.rates import DeviceRates


@dataclass(frozen=True)
class Observation:
    """One measured time of a config on a shape (this device's history, for transfer)."""

    shape: Shape
    config_name: str
    ms: float


@dataclass(frozen=True)
class SearchContext:
    """What a candidate sampler knows about its study before the first proposal."""

    shape: Shape
    device: DeviceLimits
    candidates: Sequence[Candidate]  # each built once, with its resource check and padding plan
    families: tuple[str, ...]
    rates: DeviceRates | None = None  # the device's probed rates; None: the model's table
    history: Sequence[Observation] = ()  # this device's measurements of other shapes


class CandidateSampler(optuna.samplers.BaseSampler):
    """A sampler that proposes the study's candidates themselves, one config per trial.

    Subclasses order the untried candidates (:meth:`choose`). Candidates proposed but not yet
    told (several are in flight while they compile) count as tried. Trials enqueued by the study
    (warm starts) keep their fixed parameters.
    """

    def __init__(self, seed: int | None = None) -> None:
        self._seed = seed
        self._context: SearchContext | None = None
        self._index: dict[str, int] = {}
        self._chosen: dict[int, Config] = {}
        self._fixed: set[int] = set()  # trials the study enqueued (warm starts)
        self._fallback = optuna.samplers.RandomSampler(seed=seed)

    def bind(self, context: SearchContext) -> None:
        """Learn the study's candidates (``tuner.search.study.Study`` calls this once)."""
        self._context = context
        self._index = {c.name: i for i, c in enumerate(context.candidates)}
        # A trial's parameters name the kernel; a candidate screened padded is that kernel too.
        for i, c in enumerate(context.candidates):
            self._index.setdefault(c.config.direct.name, i)

    @property
    def context(self) -> SearchContext:
        if self._context is None:
            raise RuntimeError(f"{type(self).__name__} was not bound to a study's candidates")
        return self._context

    @abstractmethod
    def choose(self, tried: set[int], measured: dict[int, float]) -> int | None:
        """The index of the next candidate to propose; ``tried``: indices proposed so far,
        ``measured``: index -> measured ms. None when there is nothing left."""

    def likely_first(self, count: int, taken: Sequence[Config] = ()) -> list[Config]:
        """The configs this sampler would propose first, before any result arrives, after the
        trials ``taken`` (warm starts): at most ``count``, and none of ``taken``. A study
        compiles them while it is prepared, so its first proposals are ready when its search
        begins. A guess for samplers that cannot tell (none by default); nothing is chosen."""
        return []

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        return {}

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if "fixed_params" in trial.system_attrs:
            self._fixed.add(trial.number)
            return
        if self._context is None:
            return
        tried, measured = self._state(study)
        choice = self.choose(tried, measured)
        if choice is not None:
            self._chosen[trial.number] = self.context.candidates[choice].config

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        config = self._chosen.get(trial.number)
        if config is None:
            return self._fallback.sample_independent(study, trial, param_name, param_distribution)
        if param_name == "family":
            return config.family
        family, _, name = param_name.partition(".")
        if family != config.family:  # a parameter of another family: not used by this config
            return self._fallback.sample_independent(study, trial, param_name, param_distribution)
        param = next(p for p in get_family(family).params if p.name == name)
        return param.values.index(config[name])

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._chosen.pop(trial.number, None)

    def proposes(self, trial: optuna.trial.Trial) -> bool:
        """Whether ``trial`` (just asked) holds a config: one this sampler chose, or a warm
        start the study enqueued; False when every candidate has been proposed."""
        return trial.number in self._chosen or trial.number in self._fixed

    def _state(self, study: optuna.Study) -> tuple[set[int], dict[int, float]]:
        """Candidates tried (finished, running or chosen by this process) and those measured."""
        tried: set[int] = set()
        measured: dict[int, float] = {}
        for other in study.get_trials(deepcopy=False):
            name = other.user_attrs.get("config") or self._name_of(other.params)
            row = self._index.get(name) if name is not None else None
            if row is None:
                continue
            tried.add(row)
            if other.state == TrialState.COMPLETE and other.value is not None:
                measured[row] = float(other.value)
        tried.update(self._index[c.name] for c in self._chosen.values() if c.name in self._index)
        return tried, measured

    def _name_of(self, params: dict[str, Any]) -> str | None:
        """The config a trial's parameters name (trials proposed and not yet told)."""
        if not params:
            return None
        families = self.context.families
        family = params.get("family", families[0] if families else None)
        if family is None:
            return None
        fam = get_family(str(family))
        try:
            values = {p.name: p.values[int(params[f"{fam.name}.{p.name}"])] for p in fam.params}
        except (KeyError, IndexError, ValueError):
            return None
        return fam.config(values).name
