"""CLI commands around tuning and results: tune, tune-batch, best, results, export, import, db.

Registered on the app in ``tuner.cli``. Storage problems (an unreachable or read-only database,
an old schema) and bad input end with exit code 2 and one line.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import optuna
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.errors import InputError
from tuner.evaluate import Evaluator
from tuner.families import FAMILIES
from tuner.samplers import SAMPLERS
from tuner.shape import Shape, parse_shape
from tuner.sql_recorder import SqlRecorder
from tuner.study import Progress as StudyProgress
from tuner.study import Study

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db", help="SQLAlchemy URL; default $GEMMTUNE_DATABASE_URL or sqlite:///gemmtune.db"
    ),
]
# What a study searches without --family: the families whose configs won suite shapes on the H100
# (benchmarks/results/h100-suite.json and the earlier runs under history/: dmma, streamk, skinny,
# warptile), pipelined, the multi-stage ladder rung, and dmma_pipelined (dmma fed by cp.async,
# faster than dmma on every shape of its sweeps). skinny has candidates only for small M;
# elsewhere its proposals are invalid points, which cost nothing.
DEFAULT_FAMILIES = ("warptile", "pipelined", "streamk", "skinny", "dmma", "dmma_pipelined")
FamiliesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--family",
        "-f",
        help=f"repeatable; default {', '.join(DEFAULT_FAMILIES)} (a replay table: its own) "
        f"({', '.join(FAMILIES)})",
    ),
]
EVALUATORS = ("gpu", "replay")
ReplayTablesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        help="JSON lines from benchmarks/sweep.py; repeatable: tables of one device merge, "
        "a later table's row winning (default benchmarks/results/h100-sweep.jsonl)"
    ),
]
WARM_START = 3  # candidates a new study takes from committed results and tuned neighbours
WarmStartOpt = Annotated[
    int,
    typer.Option(
        "--warm-start",
        min=0,
        help="a new study first evaluates up to this many configs: the committed suite's best "
        "for the shape on this GPU, then the bests of the nearest shapes (0: none)",
    ),
]
SETUP_ATTEMPTS = 5


def open_database(url: str | None, *, optuna_tables: bool = False) -> sessionmaker[Session]:
    """Engine + sessions for ``url``; an empty database is migrated, an old one refused.

    Workers started together on a fresh database race to create the same tables (ours and, with
    ``optuna_tables``, Optuna's); the losers' errors are retried once the winner has committed.
    """
    engine = storage.make_engine(url)
    for attempt in range(SETUP_ATTEMPTS):
        try:
            if storage.current_revision(engine) is None:
                storage.upgrade(engine)
            if optuna_tables:
                optuna.storages.RDBStorage(storage.database_url(url)).engine.dispose()
            break
        except (DBAPIError, optuna.exceptions.StorageInternalError):
            if attempt == SETUP_ATTEMPTS - 1:
                raise
            time.sleep(0.2 * (attempt + 1))
    storage.check_schema(engine)
    return storage.make_session_factory(engine)


def make_evaluator(name: str, replay_tables: list[Path] | None) -> Evaluator:
    if name == "replay":
        from tuner.replay import DEFAULT_TABLE, ReplayEvaluator

        return ReplayEvaluator(replay_tables or [DEFAULT_TABLE])
    if name == "gpu":
        from tuner.gpu_worker import GpuEvaluator

        try:
            return GpuEvaluator()
        except (ImportError, RuntimeError) as exc:
            raise InputError(f"--evaluator gpu needs a CUDA GPU and CuPy: {exc}") from None
    raise InputError(f"unknown evaluator {name!r}; choose one of {', '.join(EVALUATORS)}")


def _families(families: list[str] | None) -> tuple[str, ...]:
    """The --family names, checked (empty when none was given)."""
    chosen = tuple(families or ())
    for name in chosen:
        if name not in FAMILIES:
            raise InputError(f"unknown family {name!r}; choose one of {', '.join(FAMILIES)}")
    return chosen


def default_families(evaluator: Evaluator) -> tuple[str, ...]:
    """The families searched without --family: a replay table's own (it has no answer for any
    other), else ``DEFAULT_FAMILIES``."""
    measured: tuple[str, ...] = getattr(evaluator, "families", ())
    return measured or DEFAULT_FAMILIES


def _check_sampler(sampler: str) -> None:
    if sampler not in SAMPLERS:
        raise InputError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")


def run_study(
    shape: Shape,
    families: tuple[str, ...],
    evaluator: Evaluator,
    sessions: sessionmaker[Session],
    url: str | None,
    sampler: str,
    trials: int | None,
    timeout: float | None,
    seed: int | None,
    warm_start: int = WARM_START,
) -> StudyProgress:
    """One study with a live progress line: trials, best so far, TFLOP/s, % of cuBLAS."""
    study = Study(
        shape,
        families,
        evaluator,
        SqlRecorder(sessions),
        sampler=sampler,
        seed=seed,
        optuna_storage=storage.database_url(url),
        warm_start=warm_start,
    )
    target = min(trials or len(study.candidates), len(study.candidates))
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[best]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=False) as bar:
        task = bar.add_task(f"{shape}", total=target, best="")

        def update(p: StudyProgress) -> None:
            best = ""
            if p.best and p.best.tflops:
                pct = f", {100 * p.best.ratio:.0f}% of cuBLAS" if p.best.ratio else ""
                best = f"best {p.best.tflops:.1f} TFLOP/s{pct}"
            bar.update(task, completed=p.evaluated, best=best)

        result = study.run(trials=trials, timeout_s=timeout, on_progress=update)
        bar.update(task, completed=result.evaluated)
    return result


def tune(
    shape: Annotated[str, typer.Option("--shape", "-s", help="MxNxK")],
    family: FamiliesOpt = None,
    trials: Annotated[
        int | None, typer.Option(min=1, help="evaluated candidates in the study")
    ] = 30,
    timeout: Annotated[float | None, typer.Option(help="stop after this many seconds")] = None,
    sampler: Annotated[str, typer.Option(help=", ".join(SAMPLERS))] = "tpe",
    evaluator: Annotated[str, typer.Option(help="gpu or replay")] = "gpu",
    replay_table: ReplayTablesOpt = None,
    seed: Annotated[int | None, typer.Option(help="sampler seed")] = None,
    warm_start: WarmStartOpt = WARM_START,
    db: DbOpt = None,
) -> None:
    """Tune one shape; re-running the same command resumes the study."""
    problem, families = parse_shape(shape), _families(family)
    _check_sampler(sampler)
    sessions = open_database(db, optuna_tables=True)
    ev = make_evaluator(evaluator, replay_table)
    families = families or default_families(ev)
    try:
        p = run_study(
            problem, families, ev, sessions, db, sampler, trials, timeout, seed, warm_start
        )
    finally:
        ev.close()
    _print_outcome(p)


def _print_outcome(p: StudyProgress) -> None:
    statuses: dict[str, int] = {}
    for r in p.history:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    out.print(
        f"{p.study}: {p.evaluated} evaluated "
        f"({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))})"
    )
    if p.best and p.best.ms:
        ratio = f", {p.best.ratio:.2f}x cuBLAS" if p.best.ratio else ""
        out.print(
            f"best {p.best.config_name}: {p.best.ms:.4f} ms, {p.best.tflops:.1f} TFLOP/s{ratio}"
        )


def read_shapes_csv(path: Path) -> list[Shape]:
    """Shapes from a CSV of ``M,N,K`` or ``class,M,N,K`` rows; ``#`` lines are comments.
    Every row is checked before anything runs; a bad one is named by its line number."""
    return [shape for _, shape in read_suite_csv(path)]


def read_suite_csv(path: Path) -> list[tuple[str | None, Shape]]:
    """Like :func:`read_shapes_csv`, keeping each row's class (``None`` for ``M,N,K`` rows)."""
    if not path.is_file():
        raise InputError(f"shape file {str(path)!r} does not exist")
    rows: list[tuple[str | None, Shape]] = []
    with path.open(newline="") as handle:
        for number, row in enumerate(csv.reader(handle), 1):
            if not row or row[0].lstrip().startswith("#") or not "".join(row).strip():
                continue
            cells = [c.strip() for c in row]
            if len(cells) not in (3, 4):
                raise InputError(
                    f"{path.name} line {number}: expected M,N,K or class,M,N,K, "
                    f"got {','.join(cells)!r}"
                )
            try:
                shape = parse_shape("x".join(cells[-3:]))
            except InputError as exc:
                raise InputError(f"{path.name} line {number}: {exc}") from None
            label = (cells[0] or None) if len(cells) == 4 else None
            rows.append((label, shape))
    if not rows:
        raise InputError(f"{path.name} holds no shapes")
    return rows


def tune_batch(
    file: Annotated[Path, typer.Argument(help="CSV of M,N,K or class,M,N,K rows")],
    family: FamiliesOpt = None,
    trials: Annotated[int | None, typer.Option(min=1)] = 30,
    timeout: Annotated[float | None, typer.Option(help="seconds per shape")] = None,
    sampler: Annotated[str, typer.Option()] = "tpe",
    evaluator: Annotated[str, typer.Option()] = "gpu",
    replay_table: ReplayTablesOpt = None,
    seed: Annotated[int | None, typer.Option()] = None,
    warm_start: WarmStartOpt = WARM_START,
    db: DbOpt = None,
) -> None:
    """Tune every shape of a CSV file, one study each (resumable like ``tune``)."""
    shapes, families = read_shapes_csv(file), _families(family)
    _check_sampler(sampler)
    sessions = open_database(db, optuna_tables=True)
    ev = make_evaluator(evaluator, replay_table)
    families = families or default_families(ev)
    try:
        for shape in shapes:
            _print_outcome(
                run_study(
                    shape, families, ev, sessions, db, sampler, trials, timeout, seed, warm_start
                )
            )
    finally:
        ev.close()


def best(
    shape: Annotated[str, typer.Option("--shape", "-s")],
    device: Annotated[str | None, typer.Option(help="device name as stored; default any")] = None,
    db: DbOpt = None,
) -> None:
    """The best stored config for a shape (exit code 1 when nothing is stored for it)."""
    problem = parse_shape(shape)
    sessions = open_database(db)
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
    rows = _best_rows(open_database(db), device)
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
    with open_database(db)() as session:
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
    with open_database(db).begin() as session:
        count = storage.import_json(session, data)
    out.print(f"imported {count} measurements from {file}")


db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade(db: DbOpt = None) -> None:
    """Migrate the database schema to this version of gemmtune."""
    engine = storage.make_engine(db)
    storage.upgrade(engine)
    out.print(f"schema at revision {storage.current_revision(engine)}")
