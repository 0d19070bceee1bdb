"""Rendered answers kept across index updates that cannot change them.

The API caches each rendered answer by its request. A new snapshot of the index (an upload, a
study's new best) used to start with an empty cache, so after every write every distinct request
was answered anew on the event loop: in a profile (py-spy) of a server answering 1000 req/s
while one upload a second arrived, about a sixth of the loop's busy time went there.
:meth:`AnswerCache.carried` instead keeps every cached answer the change cannot reach, by the
rules of :mod:`tuner.answers.best`:

* ``exact`` and ``nearest`` answers come from the tuned shapes of the request's dtype and layout
  at most their ``distance`` away (ties broken by time), so a change farther than that leaves
  them as they are;
* an answer for a device of the same kind (``same_kind``), or with its ``out_dtype`` pinned
  from another type of C, exists because nothing nearer than ``FAR_DISTANCE`` was usable: a
  change within that distance can replace it;
* ``far`` and ``default`` answers name the nearest tuned shape at any distance: any change of
  their dtype and layout can replace them;
* an answer that skipped slow-math configs counts them over every dtype (its note says how
  many), and new devices or rates change how devices resolve: those drop everything they reach.

Conservative by design: a kept answer is one the change provably cannot alter; the rest are
answered again on their next request.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from tuner.answers.answer import FAR_DISTANCE, REPINNED_NOTE, SKIPPED_NOTE, Answer
from tuner.core.dims import log_dims

# Answers cached per snapshot at most: the request mix of a real client is far smaller, and a
# client cycling through random shapes cannot grow the server's memory past this.
MAX_CACHED = 8192

# Distances are sums of logs: two equal distances computed apart may differ in the last bits.
_TIE = 1e-9

Group = tuple[str, str]  # (dtype, layout): the tuned shapes an answer chooses among


@dataclass(frozen=True)
class Reach:
    """Which changed tuned shapes can alter one cached answer: those of ``group`` (None: of any
    dtype and layout) within ``radius`` of the asked shape's ``point`` in log space."""

    group: Group | None
    point: tuple[float, float, float]
    radius: float


def reach_of(answer: Answer) -> Reach:
    """The :class:`Reach` of ``answer`` (see the module's docstring for why)."""
    point = log_dims((answer.m, answer.n, answer.k))
    group: Group | None = (answer.dtype, answer.layout)
    if SKIPPED_NOTE in answer.note:
        group = None
    if answer.source in ("far", "default") or group is None:
        return Reach(group, point, math.inf)
    if answer.device_match == "same_kind" or REPINNED_NOTE in answer.note:
        return Reach(group, point, FAR_DISTANCE + _TIE)
    return Reach(group, point, (answer.distance or 0.0) + _TIE)


@dataclass(frozen=True)
class Change:
    """A tuned shape added, replaced or dropped between two snapshots."""

    group: Group
    point: tuple[float, float, float]


@dataclass(frozen=True)
class Changes:
    """What differs between two snapshots: tuned shapes, or everything (devices, rates)."""

    shapes: tuple[Change, ...] = ()
    everything: bool = False

    def reach(self, reach: Reach) -> bool:
        """Whether these changes can alter an answer of ``reach``."""
        if self.everything:
            return True
        return any(
            (reach.group is None or reach.group == change.group)
            and math.dist(change.point, reach.point) <= reach.radius
            for change in self.shapes
        )


class AnswerCache:
    """Rendered answers by request (opaque keys and values), each with its :class:`Reach`.

    Written by the event loop only; :meth:`carried` may run in another thread at the same time
    (it copies the entries first, a single step under the GIL), so no lock is needed: an answer
    cached during the copy is simply answered again once.
    """

    def __init__(self, entries: Iterable[tuple[Hashable, tuple[bytes, Reach]]] = ()) -> None:
        self._entries: dict[Hashable, tuple[bytes, Reach]] = dict(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> bytes | None:
        found = self._entries.get(key)
        return None if found is None else found[0]

    def put(self, key: Hashable, rendered: bytes, reach: Reach) -> None:
        """Keep ``rendered`` for ``key`` unless the cache is full."""
        if len(self._entries) < MAX_CACHED:
            self._entries[key] = (rendered, reach)

    def carried(self, changes: Changes) -> AnswerCache:
        """A new cache with every entry ``changes`` cannot alter."""
        if changes.everything:
            return AnswerCache()
        entries = self._entries.copy()
        return AnswerCache((k, v) for k, v in entries.items() if not changes.reach(v[1]))
