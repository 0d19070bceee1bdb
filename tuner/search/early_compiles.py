"""A study's likely first candidates, handed to the compile pool while the device is probed.

The first study of a command on a GPU nobody has probed waits for the probe (a few kernels
compiled and timed in the measuring process) before it can rank its space: the ranking runs on
the probed rates. Meanwhile the compile pool's processes, started at once, have nothing to do,
and with an empty kernel cache every candidate the search measures first waits for its NVRTC
compile. So, beside the probe, the space is ranked on the architecture's table rates
(``tuner.model.rates.table_rates``) and the best few of each family, then the best overall, are
submitted to the pool. The study itself still ranks on the probed rates: this changes what is
compiled early, never what is proposed or measured. A pick the study does not propose soon is
a compile spent in a minute the pool was idle; the kernel cache keeps it for later.
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.candidate import Candidate
from tuner.kernels.resources import DeviceLimits
from tuner.model.cost_model import estimate
from tuner.model.rates import table_rates
from tuner.search.evaluator import Evaluator
from tuner.search.study import search_space

# Per family, its best estimates first: the ranked sampler opens with each competitive family's
# best and a second one near it (``tuner.search.samplers.ranked.FAMILY_TRIES``).
PER_FAMILY = 2


def likely_first(
    candidates: Sequence[Candidate],
    shape: Shape,
    device: DeviceLimits,
    count: int,
) -> list[Config]:
    """At most ``count`` of ``candidates``, in the order to compile them: the ``PER_FAMILY``
    best estimates of each family (families by their best), then the best estimates of all, on
    the table rates of ``device``'s architecture (the model's own defaults without a table)."""
    rates = table_rates(device)
    ranked = sorted((estimate(c, shape, device, rates).ms, c.name, c.config) for c in candidates)
    per_family: dict[str, list[Config]] = {}
    for _, _, config in ranked:
        chosen = per_family.setdefault(config.family, [])
        if len(chosen) < PER_FAMILY:
            chosen.append(config)
    picks = [config for chosen in per_family.values() for config in chosen][:count]
    taken = {config.name for config in picks}
    for _, name, config in ranked:
        if len(picks) >= count:
            break
        if name not in taken:
            picks.append(config)
    return picks


def compile_early(
    shape: Shape, families: tuple[str, ...], evaluator: Evaluator, count: int
) -> list[Config]:
    """Submit the :func:`likely_first` ``count`` candidates of ``shape``'s study over
    ``families`` to ``evaluator``'s compile pool (:meth:`Evaluator.prepare`); what was
    submitted."""
    space = search_space(shape, families, evaluator)
    picks = likely_first(list(space.values()), shape, evaluator.device, count)
    for config in picks:
        evaluator.prepare(config)
    return picks
