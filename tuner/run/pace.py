"""How fast a tune went: shapes and candidates a minute, over the wall time of the command.

Only this command's work counts: a study resumed from an earlier run counts the candidates it
evaluated now (``Progress.evaluated - Progress.earlier``), and a shape whose study had nothing
left to do still counts as a shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tuner.search.study import Progress


@dataclass(frozen=True)
class Pace:
    """``shapes`` studied and ``candidates`` evaluated in ``seconds`` of wall time."""

    shapes: int
    candidates: int
    seconds: float

    @classmethod
    def of(cls, outcomes: Sequence[Progress], seconds: float) -> Pace:
        new = sum(max(0, p.evaluated - p.earlier) for p in outcomes)
        return cls(len(outcomes), new, seconds)

    @property
    def shapes_per_min(self) -> float:
        return 60.0 * self.shapes / self.seconds if self.seconds > 0 else 0.0

    @property
    def candidates_per_min(self) -> float:
        return 60.0 * self.candidates / self.seconds if self.seconds > 0 else 0.0

    @property
    def seconds_per_shape(self) -> float | None:
        return self.seconds / self.shapes if self.shapes else None

    def summary(self) -> str:
        """One line: what was done, in how long, and the two rates."""
        shapes = f"{self.shapes} shape{'' if self.shapes == 1 else 's'}"
        each = self.seconds_per_shape
        per_shape = f", {each:.1f} s a shape" if each is not None else ""
        return (
            f"{shapes}, {self.candidates} candidates evaluated in {self.seconds:.1f} s"
            f"{per_shape}: {self.shapes_per_min:.2f} shapes/min, "
            f"{self.candidates_per_min:.0f} candidates/min"
        )
