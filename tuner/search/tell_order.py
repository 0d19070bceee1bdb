"""The order a study tells its sampler results in: the order the sampler proposed them.

A study measures whichever proposal in flight has finished compiling first (one slow compile no
longer holds up the device), so results arrive out of order. A model-based sampler refits on
what it has been told, and being told results in the order they happened to compile made the
``ranked`` sampler propose worse candidates on held-out shapes. So a result is held until every
earlier proposal's result is in, and the sampler sees the sequence it would have seen had the
proposals been measured oldest first.

Nor does the sampler propose while a result waits for its turn (:attr:`ProposalOrder.lagging`):
proposals asked for then came from a model that lacked results already measured, and on the
held-out shapes that cost as much as telling out of order did. So
every proposal is made knowing every result measured so far, as when measuring oldest first;
the device still measures whatever has compiled while a slow compile holds up the head.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator

import optuna

from tuner.core.config import Config
from tuner.core.result import Result


class ProposalOrder:
    """Claimed proposals, oldest first, and the results waiting for their turn to be told."""

    def __init__(self) -> None:
        self._proposed: deque[tuple[str, optuna.trial.Trial]] = deque()
        self._results: dict[str, Result | None] = {}

    def propose(self, config: Config, trial: optuna.trial.Trial) -> None:
        self._proposed.append((config.name, trial))

    def measured(self, name: str, result: Result | None) -> None:
        """``name``'s result (None: given back unmeasured, to be told failed)."""
        self._results[name] = result

    @property
    def lagging(self) -> bool:
        """True while a measured result waits for an earlier proposal's (after
        :meth:`tellable` is drained)."""
        return bool(self._results)

    @property
    def untold(self) -> set[str]:
        """Proposals whose trial is still open: queued, being measured, or waiting their turn."""
        return {name for name, _ in self._proposed}

    def tellable(self) -> Iterator[tuple[optuna.trial.Trial, Result | None]]:
        """The proposals whose turn has come, oldest first, with their results; each once."""
        while self._proposed and self._proposed[0][0] in self._results:
            name, trial = self._proposed.popleft()
            yield trial, self._results.pop(name)
