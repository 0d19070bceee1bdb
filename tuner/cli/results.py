"""Commands on stored results: ``best``, ``results``, ``export``, ``import`` and ``db upgrade``."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import storage
from tuner.answers.best import UnknownDeviceError
from tuner.answers.device_kind import DeviceSpec
from tuner.cli._common import AccuracyOpt, DbOpt, DtypeOpt, LayoutOpt, OutDtypeOpt, out
from tuner.cli._progress import StepBar
from tuner.cli._tables import Column, table_lines
from tuner.core.accuracy import DEFAULT_ACCURACY, check_accuracy
from tuner.core.errors import InputError
from tuner.core.shape import Shape, parse_shape
from tuner.data.user_files import check_writable, read_json, write_text

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

RESULT_COLUMNS = (
    Column("shape"),
    Column("ms", numeric=True),
    Column("TFLOP/s", numeric=True),
    Column("cuBLAS", numeric=True),
    Column("ratio", numeric=True),
)


def best(
    shape: Annotated[str, typer.Option("--shape", "-s", help="MxNxK, e.g. 4096x4096x4096")],
    dtype: DtypeOpt = "float32",
    layout: LayoutOpt = "NN",
    out_dtype: OutDtypeOpt = None,
    accuracy: AccuracyOpt = DEFAULT_ACCURACY,
    device: Annotated[
        str | None, typer.Option(help="GPU name as stored; default: the fastest of any device")
    ] = None,
    arch: Annotated[
        str | None,
        typer.Option(help="the GPU's architecture (sm_89): finds GPUs of its kind, needs --device"),
    ] = None,
    sm_count: Annotated[
        int | None, typer.Option("--sm-count", help="the GPU's SM count, with --arch")
    ] = None,
    db: DbOpt = None,
) -> None:
    """The config the API would answer for a shape: exact, nearest or default, and whose data."""
    problem = parse_shape(shape, dtype, layout, out_dtype)
    if device is None and (arch is not None or sm_count is not None):
        raise InputError("--arch and --sm-count describe a GPU: give its name with --device too")
    asked = None if device is None else DeviceSpec(device, arch, sm_count)
    from tuner.answers.index import load_snapshot  # SQLAlchemy: only when a command reads

    with storage.open_existing_database(db)() as session:
        answer = load_snapshot(session).answer(
            problem.m,
            problem.n,
            problem.k,
            problem.dtype,
            problem.layout,
            device=asked,
            accuracy=check_accuracy(accuracy),
            out_dtype=problem.out,
        )
    lines = [answer.name]
    where, shape_ = answer.measured_on_device, answer.measured_on
    if where is not None and shape_ is not None:  # measured, not the default rule
        match = (answer.device_match or "").replace("_", " ")
        lines += [
            f"  source: {answer.source} ({match}), distance {answer.distance:.3f}",
            f"  measured on {'x'.join(map(str, shape_))} on {where.name} "
            f"({where.arch}, {where.sm_count} SMs)",
            f"  {answer.ms:.4f} ms, {answer.tflops or 0:.1f} TFLOP/s, "
            f"cuBLAS {answer.cublas_tflops or 0:.1f} TFLOP/s, ratio {answer.ratio or 0:.2f}",
        ]
    elif answer.distance is not None:  # far: the nearest tuned shape is too far to answer
        lines.append(f"  source: {answer.source}, distance {answer.distance:.3f}")
    else:
        lines.append(f"  source: {answer.source}")
    extra = [f"  accuracy class: {answer.accuracy}", f"  C written as {answer.out_dtype}"]
    for line in [*lines, f"  {answer.note}", *extra]:
        out.print(line, soft_wrap=True, markup=False)


def _best_rows(sessions: sessionmaker[Session], device: str | None) -> list[dict[str, Any]]:
    """Every best config, or ``device``'s; a device the database does not know is an error
    naming the known ones (an empty table would read as "nothing tuned" and hide a typo)."""
    with sessions() as session:
        rows = storage.best_configs(session, device)
        if device is not None and not rows:
            known = [d.name for d in storage.list_devices(session)]
            if device not in known:
                unknown = UnknownDeviceError(DeviceSpec(device), known)
                raise InputError(f"`--device` {unknown.detail}")
    return [
        {
            "device": r.device.name,
            "m": r.shape.m,
            "n": r.shape.n,
            "k": r.shape.k,
            "dtype": r.shape.dtype,
            "layout": r.shape.layout,
            "out_dtype": r.shape.out_dtype,
            "config": r.measurement.config_name,
            "ms": r.measurement.ms,
            "tflops": r.measurement.tflops,
            "cublas_tflops": r.measurement.cublas_tflops,
            "ratio": r.measurement.ratio,
        }
        for r in rows
    ]


def results(
    format: Annotated[
        str,
        typer.Option(
            "--format",
            help="table, json, csv, or suite: a suite file of one GPU (--device) written to --out, "
            "which the server preloads from its results folder",
        ),
    ] = "table",
    device: Annotated[
        str | None, typer.Option(help="only this GPU (its name as stored); default: every GPU")
    ] = None,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="with --format suite: the file to write")
    ] = None,
    suite: Annotated[
        str, typer.Option(help="with --format suite: what was tuned (recorded in the file)")
    ] = "tuned shapes",
    db: DbOpt = None,
) -> None:
    """The best config of every tuned (device, shape)."""
    if format not in ("table", "json", "csv", "suite"):
        raise InputError(f"--format must be table, json, csv or suite, got {format!r}")
    if (format == "suite") != (out_file is not None):
        raise InputError("--format suite writes a file: give --out with it (and only with it)")
    if format == "suite":
        _write_suite(storage.open_existing_database(db), device, out_file, suite)
        return
    rows = _best_rows(storage.open_existing_database(db), device)
    if format == "json":
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
    elif format == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["device"])
        writer.writeheader()
        writer.writerows(rows)
    else:
        _print_table(rows)


def _write_suite(
    sessions: sessionmaker[Session], device: str | None, path: Path | None, suite: str
) -> None:
    """One GPU's best configs as a suite file (:mod:`tuner.report.shipped_bests`)."""
    from tuner.data.suite_file import write_suite_file
    from tuner.report.shipped_bests import shipped_bests_document

    if device is None or path is None:
        raise InputError("--format suite writes one GPU's bests: name it with --device")
    check_writable(path, "suite file")
    with sessions() as session:
        document = shipped_bests_document(session, device, suite)
    write_suite_file(path, document)
    out.print(f"wrote {len(document['shapes'])} best configs of {device} to {path}", markup=False)


def _print_table(rows: list[dict[str, Any]]) -> None:
    """One section per device; a config name too long for the width gets its own line."""
    for device in dict.fromkeys(r["device"] for r in rows):
        mine = [r for r in rows if r["device"] == device]
        cells = [
            [
                Shape(r["m"], r["n"], r["k"], r["dtype"], r["layout"], r["out_dtype"]).label(),
                f"{r['ms']:.4f}",
                f"{r['tflops'] or 0:.1f}",
                f"{r['cublas_tflops'] or 0:.1f}",
                f"{r['ratio'] or 0:.2f}",
            ]
            for r in mine
        ]
        names = [r["config"] for r in mine]
        out.print(device, markup=False)
        for line in table_lines(RESULT_COLUMNS, cells, out.width, Column("config"), names):
            out.print(line, markup=False)
    if not rows:
        out.print("nothing tuned yet")


def export(
    file: Annotated[Path, typer.Argument(help="JSON file to write ('-' for stdout)")],
    db: DbOpt = None,
) -> None:
    """Write every device, shape and measurement as JSON (for ``gemmtune import``)."""
    to_stdout = str(file) == "-"
    if not to_stdout:
        check_writable(file, "export file")  # a bad path fails before the long read
    sessions = storage.open_existing_database(db)
    with StepBar("exporting") as bar, sessions() as session:
        data = storage.export_json(session, bar)
    text = json.dumps(data, indent=1)
    if to_stdout:
        sys.stdout.write(text + "\n")
    else:
        write_text(file, text, "export file")
        out.print(f"exported {len(data.get('measurements', []))} measurements to {file}")


def import_(
    file: Annotated[Path, typer.Argument(help="JSON written by gemmtune export")],
    db: DbOpt = None,
) -> None:
    """Add measurements from an export; already present ones are skipped. All or nothing:
    one record that names no valid config of its family, or has an implausible time, refuses
    the file (the rules of API uploads), and so does any error while writing. The rows are
    staged first and merged in one short transaction, so other writers carry on meanwhile."""
    data = read_json(file, "import file")
    from tuner.data.intake import check_record  # the storage inputs: SQLAlchemy

    sessions = storage.open_database(db)
    with StepBar("importing") as bar:
        count = storage.import_json(sessions, data, bar, check=check_record)
    offered = len(data.get("measurements", [])) if isinstance(data, dict) else count
    held = offered - count
    already = f"; {held} were already stored" if held > 0 else ""
    out.print(f"imported {count} measurements from {file}{already}")


db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(db: DbOpt = None) -> None:
    """Migrate the database schema to this version of gemmtune."""
    engine = storage.make_engine(db)
    storage.upgrade(engine)
    out.print(f"schema at revision {storage.current_revision(engine)}")
