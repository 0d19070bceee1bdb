"""The trial table: filters, sorts with missing values last, pages; failures grouped and
explained."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from api.study_data import StudyTrial
from api.trial_table import PAGE_SIZE, STATUS_MEANING, TableQuery, failures, table_page
from tuner.core.statuses import STATUSES

BASE = StudyTrial(
    number=0, config_name="warptile_bm64", family="warptile", status="ok", reason=None,
    params={"BM": 64}, ms=1.0, tflops=10.0, ratio=1.0, registers=90, smem_bytes=4096,
    occupancy=0.5, created_at=datetime(2026, 1, 1, tzinfo=UTC), best_so_far=10.0,
)  # fmt: skip


def trial(number: int, **changes: object) -> StudyTrial:
    return replace(BASE, number=number, **changes)  # type: ignore[arg-type]


TRIALS = [
    trial(0, tflops=5.0),
    trial(1, status="pruned", reason="spills 8 bytes", tflops=None, ms=None, registers=None),
    trial(2, tflops=9.0, family="pipelined", config_name="pipelined_bm128"),
    trial(3, status="pruned", reason="spills 8 bytes", tflops=None, ms=None),
    trial(4, status="wrong_result", reason="rel error 0.3", tflops=None, ms=None),
]


def numbers(query: TableQuery) -> list[int]:
    return [t.number for t in table_page(TRIALS, query).rows]


def test_filters_by_status_family_and_text() -> None:
    assert numbers(TableQuery(status="pruned")) == [1, 3]
    assert numbers(TableQuery(family="pipelined")) == [2]
    assert numbers(TableQuery(search="SPILLS")) == [1, 3]  # the reason, any case
    assert numbers(TableQuery(search="bm128")) == [2]  # the config name


def test_sorts_fastest_first_with_unmeasured_trials_last() -> None:
    assert numbers(TableQuery(sort="tflops")) == [2, 0, 1, 3, 4]
    assert numbers(TableQuery(sort="registers"))[-1] == 1  # no registers: last
    assert numbers(TableQuery(sort="trial", descending=True)) == [4, 3, 2, 1, 0]


def test_pages_hold_a_page_size_each_and_a_page_past_the_end_is_the_last() -> None:
    many = [trial(n) for n in range(2 * PAGE_SIZE + 3)]
    second = table_page(many, TableQuery(page=2))
    assert (second.pages, second.page, second.rows[0].number) == (3, 2, PAGE_SIZE)
    last = table_page(many, TableQuery(page=99))
    assert (last.page, len(last.rows), last.matching) == (3, 3, 2 * PAGE_SIZE + 3)


def test_failures_are_counted_by_status_with_reasons_and_meaning() -> None:
    found = failures(TRIALS)
    assert [(f.status, f.count) for f in found] == [("pruned", 2), ("wrong_result", 1)]
    assert found[0].reasons == [("spills 8 bytes", 2)]
    assert found[0].meaning == STATUS_MEANING["pruned"]


def test_every_stored_status_is_explained() -> None:
    assert set(STATUS_MEANING) == set(STATUSES)
