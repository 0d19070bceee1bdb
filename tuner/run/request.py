"""What a tune is asked to do: one frozen request, checked here and nowhere else.

``gemmtune tune``, ``tune-batch`` and ``bench`` (or a script) build a :class:`TuneRequest` once;
everything that runs it (``tuner.run.tune``, the workers of ``tuner.run.multi_gpu``, each study
of ``tuner.run.runner``) reads it as it is. Building one checks every field, in the order the
commands name their options, and an :class:`InputError` names the offending value and what is
allowed. What depends on the machine (which GPUs ``gpus`` names, whether a replay table holds a
shape) is checked when the tune starts, before anything is stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tuner.core.accuracy import DEFAULT_ACCURACY, accepted, check_accuracy
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.families import FAMILIES
from tuner.search.sampler_names import DEFAULT_SAMPLER, check_sampler

WARM_START = 3  # candidates a new study takes from committed results and tuned neighbours
# Evaluated candidates of a study by default: with nothing to start from, this many reached 5 % of
# the best known config on 7 of 12 held-out shapes (docs/tuning.md, "What the search achieves").
DEFAULT_TRIALS = 40
EVALUATORS = ("gpu", "replay")


def check_families(
    families: Sequence[str] | None, accuracy: str = DEFAULT_ACCURACY
) -> tuple[str, ...]:
    """The family names given, checked (empty when none was given): each known, and of an
    accuracy class the floor ``accuracy`` accepts."""
    chosen = tuple(families or ())
    allowed = accepted(accuracy)
    for name in chosen:
        if name not in FAMILIES:
            raise InputError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}")
        if FAMILIES[name].accuracy not in allowed:
            raise InputError(
                f"family {name} computes in accuracy class {FAMILIES[name].accuracy}, less "
                f"exact than the asked `accuracy` {accuracy}; ask for accuracy "
                f"{FAMILIES[name].accuracy} to search it"
            )
    return chosen


def check_evaluator(name: str) -> str:
    if name not in EVALUATORS:
        raise InputError(f"unknown evaluator {name!r}; choose one of {', '.join(EVALUATORS)}")
    return name


@dataclass(frozen=True)
class TuneRequest:
    """Every setting of one tune: the shapes, what each study searches and how, where it runs
    and where its results go. Sequences given as lists are kept as tuples."""

    shapes: tuple[Shape, ...]
    families: tuple[str, ...] = ()  # empty: each shape's default families at ``accuracy``
    accuracy: str = DEFAULT_ACCURACY  # the least exact class accepted (``tuner.core.accuracy``)
    sampler: str = DEFAULT_SAMPLER
    seed: int | None = None  # a study's seed; the n-th worker joining it adds n
    trials: int | None = DEFAULT_TRIALS  # evaluated candidates per study; None: every one
    timeout: float | None = None  # seconds per shape
    warm_start: int = WARM_START  # configs a new study evaluates first (``runner.warm_starts``)
    evaluator: str = "gpu"  # one of EVALUATORS
    replay_tables: tuple[Path, ...] = ()  # a replay's sweep tables; empty: the committed ones
    database_url: str | None = None  # None: $GEMMTUNE_DATABASE_URL or the SQLite default
    gpus: str | None = None  # as ``--gpus`` reads it; None: device 0

    def __post_init__(self) -> None:
        for name in ("shapes", "families", "replay_tables"):
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))
        check_families(self.families, check_accuracy(self.accuracy))
        check_sampler(self.sampler)
        check_evaluator(self.evaluator)
        if not self.shapes:
            raise InputError("a tune needs at least one shape, got none")
        if self.trials is not None and self.trials < 1:
            raise InputError(f"`trials` must be at least 1 (None: all), got {self.trials}")
        if self.timeout is not None and self.timeout < 0:
            raise InputError(f"`timeout` must be at least 0 seconds, got {self.timeout}")
        if self.warm_start < 0:
            raise InputError(f"`warm_start` must be at least 0, got {self.warm_start}")

    def seed_for(self, joined: int) -> int | None:
        """The sampler seed of the worker that joined a study ``joined``-th (from 0): workers
        with a seed each propose their own sequence."""
        return None if self.seed is None else self.seed + joined
