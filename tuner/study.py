"""One Optuna study per (device, shape, dtype, layout, families): ask, evaluate, record, tell.

Trials that sample an invalid point (a broken rule, a tile larger than the matrix, a resource
limit) are told PRUNED at once and cost no GPU time; so are repeats of an evaluated candidate
(they are told the stored value). ``trials`` counts evaluated candidates, across every worker and
every run of the same study, so re-running a command after a crash resumes where it stopped.

The sampler works on an in-memory Optuna study: a model-based sampler proposes about ten invalid
points per valid one, and writing each to a database would cost more than the search itself.
That study is rebuilt from the recorder's results when a study resumes and is fed the results
other workers store. When a persistent Optuna storage is given, every evaluated candidate (not
the invalid proposals) is also added there as a finished trial, so Optuna's own tools see the
study.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import TrialState

from tuner.config import Config
from tuner.evaluate import Evaluator, Result
from tuner.families import get_family
from tuner.priors import committed_starts
from tuner.recording import Recorder
from tuner.samplers import make_sampler
from tuner.shape import Shape
from tuner.space import Space

optuna.logging.set_verbosity(optuna.logging.WARNING)

# After this many proposals in a row that bring nothing new, evaluate an untried candidate
# instead (a converged sampler keeps proposing its favourite).
STALE_PROPOSALS = 25


def study_name(device: str, shape: Shape, families: tuple[str, ...]) -> str:
    return f"{device}|{shape}|{shape.dtype}|{shape.layout}|{'+'.join(families)}"


@dataclass
class Progress:
    """What a study has done so far (passed to the progress callback after each evaluation)."""

    study: str
    target: int
    evaluated: int = 0
    invalid_proposals: int = 0
    best: Result | None = None
    last: Result | None = None
    history: list[Result] = field(default_factory=list)


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


def search_space(
    shape: Shape, families: tuple[str, ...], evaluator: Evaluator
) -> dict[str, Config]:
    """The candidates a study of ``shape`` searches, by name: every valid config of ``families``
    (``tuner.space``), or, on a replay that holds the shape, those of them it measured."""
    space = {c.name: c for f in families for c in Space(f, shape, evaluator.device).candidates()}
    measured = evaluator.measured_configs(shape)
    if measured:  # a replay of this shape answers only for the configs its tables hold
        return {name: c for name, c in space.items() if name in measured}
    return space


class Study:
    """Tune one shape over some families with one evaluator and one recorder."""

    def __init__(
        self,
        shape: Shape,
        families: tuple[str, ...],
        evaluator: Evaluator,
        recorder: Recorder,
        sampler: str = "tpe",
        seed: int | None = None,
        optuna_storage: str | optuna.storages.BaseStorage | None = None,
        warm_start: int = 3,
    ) -> None:
        for family in families:
            get_family(family)  # unknown names fail here, before anything runs
        self.shape, self.families = shape, tuple(families)
        self.evaluator, self.recorder = evaluator, recorder
        self.sampler_name = sampler
        self.device = evaluator.device
        self.name = study_name(self.device.name, shape, self.families)
        self.candidates = search_space(shape, self.families, evaluator)
        chosen = make_sampler(sampler, seed) or optuna.samplers.RandomSampler(seed=seed)
        bind = getattr(chosen, "bind", None)  # samplers that need the shape's candidates
        if bind is not None:
            bind(shape, self.device, list(self.candidates.values()), self.families)
        # Where the sampler proposes (invalid points included): memory only.
        self.optuna = optuna.create_study(sampler=chosen, direction="minimize")
        # Where evaluated candidates are kept for Optuna's tools, when a storage is given.
        self.stored: optuna.storages.BaseStorage | None = None
        self._stored_id = -1
        if optuna_storage is not None:
            self.stored = optuna.storages.get_storage(optuna_storage)
            optuna.create_study(
                study_name=self.name, storage=self.stored, direction="minimize", load_if_exists=True
            )
            self._stored_id = self.stored.get_study_id_from_name(self.name)
        self._known: set[str] = set()  # candidates the in-memory study has a finished trial of
        self._order = sorted(self.candidates)  # for exhaustive walks and stale fallbacks
        self._warm_start_limit = warm_start
        self.invalid_proposals = 0

    def _learn(self, results: dict[str, Result]) -> None:
        """Give the sampler every result it has not seen (earlier runs, other workers)."""
        for name, result in results.items():
            if name not in self._known and name in self.candidates:
                self.optuna.add_trial(finished_trial(result, self.families))
                self._known.add(name)

    def warm_starts(self, limit: int) -> list[str]:
        """What a new study evaluates first, at most ``limit`` candidates of its space: the
        committed suite's best for this shape on this kind of GPU, then the committed sweep
        tables' fastest configs of this shape (``tuner.priors``), then the best configs of the
        nearest shapes tuned in this database, then the committed bests of the nearest other
        shapes."""
        committed = committed_starts(self.device, self.shape)
        same = [name for distance, name in committed if distance == 0.0]
        others = [name for distance, name in committed if distance > 0.0]
        ordered = same + self.recorder.neighbours(self.device, self.shape, limit) + others
        return [name for name in dict.fromkeys(ordered) if name in self.candidates][:limit]

    def _warm_start(self, limit: int) -> None:
        for name in self.warm_starts(limit):
            self.optuna.enqueue_trial(trial_params(self.candidates[name], self.families))

    def run(
        self,
        trials: int | None = None,
        timeout_s: float | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> Progress:
        """Evaluate candidates until ``trials`` are done in this study (all workers, all runs),
        the space is exhausted, or ``timeout_s`` passes."""
        target = min(trials or len(self.candidates), len(self.candidates))
        progress = Progress(self.name, target)
        done = self.recorder.evaluated(self.name)
        for result in done.values():
            self._account(progress, result)
        if self._warm_start_limit and not done and not self.optuna.trials:
            self._warm_start(self._warm_start_limit)
        self._learn(done)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        stale = 0
        taken: set[str] = set()  # claimed by another worker (or by one killed mid-measurement)
        while progress.evaluated < target:
            if deadline is not None and time.monotonic() > deadline:
                break
            config, trial = self._next(done, stale, taken)
            progress.invalid_proposals = self.invalid_proposals
            if config is None:
                break  # every candidate is evaluated (or claimed by another worker)
            if config.name in done or not self.recorder.claim(self.name, config.name):
                taken.add(config.name)
                self._tell_known(trial, done.get(config.name))
                stale += 1
                if self.sampler_name == "exhaustive":  # another worker is here: count its work
                    self._absorb(done, progress)
                continue
            stale = 0
            result = self.evaluator.evaluate(config, self.shape)
            number = self._store(result)
            self.recorder.record(result, self.device, self.shape, self.name, number)
            done[config.name] = result
            self._tell(trial, result)
            self._account(progress, result)
            progress.last = result
            if on_progress is not None:
                on_progress(progress)
            if self.sampler_name != "exhaustive":
                self._absorb(done, progress)
        return progress

    def _store(self, result: Result) -> int | None:
        """Add an evaluated candidate to the persistent Optuna study; its trial number."""
        if self.stored is None:
            return None
        trial_id = self.stored.create_new_trial(
            self._stored_id, template_trial=finished_trial(result, self.families)
        )
        return self.stored.get_trial_number_from_id(trial_id)

    def _absorb(self, done: dict[str, Result], progress: Progress) -> None:
        """Count results other workers stored meanwhile."""
        for name, other in self.recorder.evaluated(self.name).items():
            if name not in done:
                done[name] = other
                self._account(progress, other)
        self._learn(done)

    def _next(
        self, done: dict[str, Result], stale: int, taken: set[str]
    ) -> tuple[Config | None, optuna.trial.Trial | None]:
        """The next candidate: from the sampler, skipping invalid points at no cost."""
        if self.sampler_name == "exhaustive" or stale >= STALE_PROPOSALS:
            untried = next((n for n in self._order if n not in done and n not in taken), None)
            if untried is None:
                return None, None
            if self.sampler_name == "exhaustive":
                return self.candidates[untried], None
            self.optuna.enqueue_trial(trial_params(self.candidates[untried], self.families))
        for _ in range(10_000):
            trial = self.optuna.ask()
            config = suggest_config(trial, self.families)
            if config.name in self.candidates:
                return config, trial
            reason = (get_family(config.family).broken_rules(config) or ["does not fit"])[0]
            trial.set_user_attr("invalid", reason)
            self.invalid_proposals += 1
            self.optuna.tell(trial, state=TrialState.PRUNED)
        return None, None

    def _tell(self, trial: optuna.trial.Trial | None, result: Result) -> None:
        if trial is None:
            self._learn({result.config_name: result})  # exhaustive walks: keep the model current
            return
        self._known.add(result.config_name)
        trial.set_user_attr("config", result.config_name)
        trial.set_user_attr("status", result.status)
        if result.status == "ok" and result.ms is not None:
            trial.set_user_attr("tflops", result.tflops)
            trial.set_user_attr("ratio", result.ratio)
            self.optuna.tell(trial, result.ms)
        else:
            trial.set_user_attr("reason", result.reason)
            self.optuna.tell(trial, state=TrialState.PRUNED)

    def _tell_known(self, trial: optuna.trial.Trial | None, known: Result | None) -> None:
        if trial is None:
            return
        if known is not None and known.status == "ok" and known.ms is not None:
            self.optuna.tell(trial, known.ms)
        else:  # failed before, or being measured by another worker right now
            self.optuna.tell(trial, state=TrialState.PRUNED)

    @staticmethod
    def _account(progress: Progress, result: Result) -> None:
        progress.evaluated += 1
        progress.history.append(result)
        if (
            result.status == "ok"
            and result.ms is not None
            and (progress.best is None or progress.best.ms is None or result.ms < progress.best.ms)
        ):
            progress.best = result
