"""The ``gemmtune`` command line: commands only (parse, call the library, print).

Bad input (an impossible shape, an unknown family or device, an invalid config, an unusable
database) ends with exit code 2 and one line that names the value and what is allowed; never a
traceback.
"""

from __future__ import annotations

import sys

import typer

from storage import StorageError
from tuner import __version__
from tuner.cli import bench, enqueue, kernels, report, results, serve, sweep, tune, worker
from tuner.core.errors import InputError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Autotune GEMM tile parameters for Jinja-templated CUDA kernels.",
)
app.command("space")(kernels.space)
app.command("render")(kernels.render_cmd)
app.command("compile")(kernels.compile_cmd)
app.command("tune")(tune.tune)
app.command("tune-batch")(tune.tune_batch)
app.command("worker")(worker.worker)
app.command("enqueue")(enqueue.enqueue)
app.command("best")(results.best)
app.command("results")(results.results)
app.command("export")(results.export)
app.command("import")(results.import_)
app.command("bench")(bench.bench)
app.command("sweep")(sweep.sweep)
app.command("report")(report.report)
app.command("serve")(serve.serve)
app.add_typer(results.db_app, name="db")


def _print_version(asked: bool) -> None:
    if asked:
        print(f"gemmtune {__version__}")
        raise typer.Exit(0)


@app.callback()
def _options(
    version: bool = typer.Option(
        False,
        "--version",
        help="print the version and exit",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """Autotune GEMM tile parameters for Jinja-templated CUDA kernels."""


def main(argv: list[str] | None = None) -> None:
    """Console entry point: one-line errors and exit code 2 for bad input."""
    try:
        code = app(args=argv, standalone_mode=False)
    except (InputError, StorageError) as exc:
        print(f"gemmtune: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:
        # Typer's usage errors (missing option, a non-integer for an int option); Typer >= 0.20
        # no longer uses click's classes, so recognise them by shape rather than by class.
        if getattr(exc, "exit_code", None) == 2 and hasattr(exc, "format_message"):
            print(f"gemmtune: error: {exc.format_message()}", file=sys.stderr)
            sys.exit(2)
        raise
    sys.exit(code if isinstance(code, int) else 0)
