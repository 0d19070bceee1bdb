"""``gemmtune enqueue``: shapes queued for workers elsewhere, each once; bad input is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

import storage
from storage.models import QueueEntry
from tests.tuner.cli.running import cli, one_error_line


def _queued(url: str) -> list[tuple[int, int, int, str, str, int | None]]:
    engine = storage.make_engine(url)
    try:
        with storage.make_session_factory(engine)() as session:
            rows = session.scalars(select(QueueEntry).order_by(QueueEntry.id))
            return [(e.m, e.n, e.k, e.dtype, e.layout, e.trials) for e in rows]
    finally:
        engine.dispose()


def test_a_file_is_queued_once_with_each_rows_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    shapes = tmp_path / "grid.csv"
    shapes.write_text("class,M,N,K,dtype,layout\nllm,16,4096,4096,bfloat16,NT\nsq,512,512,512\n")
    code, out, err = cli(capsys, "enqueue", str(shapes), "--trials", "30", "--db", url)
    assert code == 0, err
    assert out.strip() == "queued 2 shapes"
    assert _queued(url) == [
        (16, 4096, 4096, "bfloat16", "NT", 30),
        (512, 512, 512, "float32", "NN", 30),
    ]
    code, out, _ = cli(capsys, "enqueue", "--shape", "512x512x512", "--shape", "64x64x64",
                       "--trials", "30", "--db", url)  # fmt: skip
    assert code == 0 and out.strip() == "queued 1 shape (1 already queued or tuned there)"
    assert len(_queued(url)) == 3


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        ((), ("a CSV file of shapes or --shape",)),
        (("--shape", "0x4x4"), ("`M`", "got 0")),
        (("--shape", "64x64x64", "--family", "tma_ws"), ("tma_ws",)),
    ],
)
def test_bad_requests_are_one_line_and_queue_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...],
    needles: tuple[str, ...],
) -> None:  # fmt: skip
    url = f"sqlite:///{tmp_path / 'q.db'}"
    storage.open_database(url)
    code, out, err = cli(capsys, "enqueue", *args, "--db", url)
    assert code == 2 and out == ""
    one_error_line(err, *needles)
    assert _queued(url) == []
