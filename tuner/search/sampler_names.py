"""The names of the search strategies (``tuner.search.samplers``), apart from the samplers
themselves so that naming them (the CLI's options and help) imports no Optuna."""

from __future__ import annotations

from tuner.core.errors import InputError

SAMPLERS = ("ranked", "tpe", "random", "gp", "exhaustive")
DEFAULT_SAMPLER = "ranked"


def check_sampler(name: str) -> str:
    """``name`` if it names a sampler, else an :class:`InputError` naming it and the choices."""
    if name not in SAMPLERS:
        raise InputError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")
    return name
