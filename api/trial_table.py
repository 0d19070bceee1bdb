"""The study page's trial table: filtered, sorted and cut into pages on the server, so the page
of a 10 000-trial study holds one page of rows, not the whole study."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from api.study_data import StudyTrial

# What each status means, shown beside the failures (tuner.core.statuses.STATUSES is the list).
STATUS_MEANING = {
    "ok": "compiled, verified against cuBLAS and timed",
    "invalid": "breaks a rule of its family: never compiled",
    "pruned": "breaks a resource limit (shared memory, registers, spills, occupancy), "
    "before or after compiling: never run",
    "compile_failed": "the compiler refused the source",
    "launch_failed": "the launch or the worker process failed (e.g. an illegal address)",
    "wrong_result": "differs from cuBLAS beyond the FP32 tolerance: never timed",
    "timeout": "compiling or running took longer than its bound",
}

SortKey = Literal["trial", "tflops", "ms", "status", "family", "registers", "smem", "occupancy"]
PAGE_SIZE = 50


def _missing_last(value: float | None) -> float:
    return math.inf if value is None else value


_SORTS: dict[str, Callable[[StudyTrial], object]] = {
    "trial": lambda t: t.number,
    "tflops": lambda t: _missing_last(None if t.tflops is None else -t.tflops),
    "ms": lambda t: _missing_last(t.ms),
    "status": lambda t: (t.status, t.number),
    "family": lambda t: (t.family, t.number),
    "registers": lambda t: _missing_last(t.registers),
    "smem": lambda t: _missing_last(t.smem_bytes),
    "occupancy": lambda t: _missing_last(None if t.occupancy is None else -t.occupancy),
}


@dataclass(frozen=True)
class TableQuery:
    """Which trials to show: status and family filters, a text that the config name or the
    reason must contain, the sort (``tflops`` and ``occupancy`` start with the highest), the
    page (from 1)."""

    status: str | None = None
    family: str | None = None
    search: str = ""
    sort: str = "trial"
    descending: bool = False
    page: int = 1


@dataclass(frozen=True)
class TablePage:
    rows: Sequence[StudyTrial]
    matching: int  # trials that pass the filters
    page: int
    pages: int


def table_page(trials: Sequence[StudyTrial], query: TableQuery) -> TablePage:
    """One page of the trials that match ``query``; a page past the end shows the last."""
    needle = query.search.strip().lower()
    kept = [
        t
        for t in trials
        if (query.status is None or t.status == query.status)
        and (query.family is None or t.family == query.family)
        and (not needle or needle in t.config_name.lower() or needle in (t.reason or "").lower())
    ]
    kept.sort(key=_SORTS[query.sort], reverse=query.descending)  # type: ignore[arg-type]
    pages = max(1, -(-len(kept) // PAGE_SIZE))
    page = min(max(query.page, 1), pages)
    start = (page - 1) * PAGE_SIZE
    return TablePage(kept[start : start + PAGE_SIZE], len(kept), page, pages)


@dataclass(frozen=True)
class Failure:
    """One status other than ok: how many, what it means, its most frequent reasons."""

    status: str
    count: int
    meaning: str
    reasons: list[tuple[str, int]]


def failures(trials: Sequence[StudyTrial], top: int = 3) -> list[Failure]:
    """The failed trials by status, most frequent first, each with its ``top`` reasons."""
    by_status: dict[str, Counter[str]] = {}
    for t in trials:
        if t.status != "ok":
            by_status.setdefault(t.status, Counter())[t.reason or "(no reason stored)"] += 1
    return sorted(
        (
            Failure(status, sum(reasons.values()), STATUS_MEANING.get(status, ""),
                    reasons.most_common(top))
            for status, reasons in by_status.items()
        ),
        key=lambda f: -f.count,
    )  # fmt: skip
