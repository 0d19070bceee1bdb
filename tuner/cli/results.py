"""Commands on stored results: ``best``, ``results``, ``export``, ``import`` and ``db upgrade``."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.cli._common import DbOpt, err, out
from tuner.errors import InputError
from tuner.shape import parse_shape


def best(
    shape: Annotated[str, typer.Option("--shape", "-s")],
    device: Annotated[str | None, typer.Option(help="device name as stored; default any")] = None,
    db: DbOpt = None,
) -> None:
    """The best stored config for a shape (exit code 1 when nothing is stored for it)."""
    problem = parse_shape(shape)
    sessions = storage.open_database(db)
    with sessions() as session:
        found = storage.best_for(session, device, problem.m, problem.n, problem.k)
    if found is None:
        err.print(f"no tuned config for {problem}" + (f" on {device}" if device else ""))
        raise typer.Exit(1)
    _, m = found
    out.print(f"{m.config_name}")
    out.print(
        f"  {m.ms:.4f} ms, {m.tflops:.1f} TFLOP/s, cuBLAS {m.cublas_tflops or 0:.1f} TFLOP/s, "
        f"ratio {m.ratio or 0:.2f} on {m.device.name}"
    )


def _best_rows(sessions: sessionmaker[Session], device: str | None) -> list[dict[str, Any]]:
    with sessions() as session:
        rows = storage.best_configs(session, device)
    return [
        {
            "device": r.device.name,
            "m": r.shape.m,
            "n": r.shape.n,
            "k": r.shape.k,
            "config": r.measurement.config_name,
            "ms": r.measurement.ms,
            "tflops": r.measurement.tflops,
            "cublas_tflops": r.measurement.cublas_tflops,
            "ratio": r.measurement.ratio,
        }
        for r in rows
    ]


def results(
    format: Annotated[str, typer.Option("--format", help="table, json or csv")] = "table",
    device: Annotated[str | None, typer.Option()] = None,
    db: DbOpt = None,
) -> None:
    """The best config of every tuned (device, shape)."""
    if format not in ("table", "json", "csv"):
        raise InputError(f"--format must be table, json or csv, got {format!r}")
    rows = _best_rows(storage.open_database(db), device)
    if format == "json":
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
    elif format == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["device"])
        writer.writeheader()
        writer.writerows(rows)
    else:
        table = Table("device", "shape", "config", "ms", "TFLOP/s", "cuBLAS", "ratio")
        for r in rows:
            table.add_row(
                r["device"],
                f"{r['m']}x{r['n']}x{r['k']}",
                r["config"],
                f"{r['ms']:.4f}",
                f"{r['tflops'] or 0:.1f}",
                f"{r['cublas_tflops'] or 0:.1f}",
                f"{r['ratio'] or 0:.2f}",
            )
        out.print(table)


def export(
    file: Annotated[Path, typer.Argument(help="JSON file to write ('-' for stdout)")],
    db: DbOpt = None,
) -> None:
    """Write every device, shape and measurement as JSON (for ``gemmtune import``)."""
    with storage.open_database(db)() as session:
        data = storage.export_json(session)
    text = json.dumps(data, indent=1)
    if str(file) == "-":
        sys.stdout.write(text + "\n")
    else:
        file.write_text(text)
        out.print(f"exported {len(data.get('measurements', []))} measurements to {file}")


def import_(
    file: Annotated[Path, typer.Argument(help="JSON written by gemmtune export")],
    db: DbOpt = None,
) -> None:
    """Add measurements from an export; already present ones are skipped. All or nothing."""
    if not file.is_file():
        raise InputError(f"import file {str(file)!r} does not exist")
    try:
        data = json.loads(file.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{file.name} is not JSON: {exc}") from None
    with storage.open_database(db).begin() as session:
        count = storage.import_json(session, data)
    out.print(f"imported {count} measurements from {file}")


db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(db: DbOpt = None) -> None:
    """Migrate the database schema to this version of gemmtune."""
    engine = storage.make_engine(db)
    storage.upgrade(engine)
    out.print(f"schema at revision {storage.current_revision(engine)}")
