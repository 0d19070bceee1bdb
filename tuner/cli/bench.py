"""``gemmtune bench`` (logic in ``tuner.run.bench``, rendering in ``tuner.report.bench_tables``).

It needs a CUDA GPU: without one it ends with exit code 2 and one line, before it touches the
database.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from tuner.cli._common import (
    AccuracyOpt,
    DbOpt,
    DtypeOpt,
    FamiliesOpt,
    LayoutOpt,
    OutDtypeOpt,
    SamplerOpt,
    SeedOpt,
    WarmStartOpt,
    err,
)
from tuner.cli._progress import SuiteBar
from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.data import default_suite, output_dir, write_suite_file
from tuner.data.location import DEFAULT_SUITE_NAME
from tuner.data.shape_lists import read_suite
from tuner.kernels.families.vendor import BASELINE_RANKS, HEURISTIC_RANKS
from tuner.run.request import DEFAULT_TRIALS, WARM_START, TuneRequest
from tuner.search.sampler_names import DEFAULT_SAMPLER


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _suite_label(suite: Path | None) -> str:
    """The suite as the written file records it: as given, or the default's repository path."""
    return str(suite) if suite is not None else f"tuner/data/suites/{DEFAULT_SUITE_NAME}"


def _progress_line(row: dict[str, Any]) -> str:
    shape = f"{row['m']}x{row['n']}x{row['k']} [{row.get('class') or '-'}]"
    if row.get("ratio") is None:
        return f"{shape}: {row['status']}: {row.get('reason')} ({row.get('config')})"
    where = "tuned" if row["tuned"] else "stored"
    roof = row.get("roofline") or {}
    pct = roof.get("pct_of_bound")
    position = f", {pct:.0f}% of the {roof['limit']} bound" if pct is not None else ""
    return (
        f"{shape}: {row['tflops']:.1f} TFLOP/s vs cuBLAS {row['cublas_tflops']:.1f} "
        f"(x{row['ratio']:.2f}){position}; {row['config']} ({where}, "
        f"{row.get('candidates_evaluated')} evaluated)"
    )


def bench(
    suite: Annotated[
        Path | None,
        typer.Option(
            "--suite",
            help="CSV of class,M,N,K rows ('#' comments, an optional header row); default "
            "the public suite installed with the package (tuner/data/suites/shapes.csv)",
        ),
    ] = None,
    dtype: DtypeOpt = "float32",
    layout: LayoutOpt = "NN",
    out_dtype: OutDtypeOpt = None,
    accuracy: AccuracyOpt = DEFAULT_ACCURACY,
    db: DbOpt = None,
    family: FamiliesOpt = None,
    trials: Annotated[
        int, typer.Option(min=1, help="candidates to evaluate when a shape must be tuned")
    ] = DEFAULT_TRIALS,
    retune: Annotated[
        bool, typer.Option("--retune", help="run --trials more candidates even when stored")
    ] = False,
    sampler: SamplerOpt = DEFAULT_SAMPLER,
    seed: SeedOpt = None,
    warm_start: WarmStartOpt = WARM_START,
    rounds: Annotated[
        int, typer.Option(min=1, help="alternating rounds of ours and cuBLAS per shape")
    ] = 5,
    budget_ms: Annotated[
        float, typer.Option(min=1.0, help="kernel time per timed block (repeats until spent)")
    ] = 100.0,
    vendor_ranks: Annotated[
        int,
        typer.Option(
            min=0,
            max=HEURISTIC_RANKS,
            help="cuBLASLt heuristic algorithms timed for the baseline (the best vendor launch)",
        ),
    ] = BASELINE_RANKS,
    bandwidth: Annotated[
        float | None,
        typer.Option(min=0.001, help="measured HBM TB/s for the roofline (default: datasheet)"),
    ] = None,
    out_json: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="default <device>-suite.json (float32 NN) or <device>-suite-<dtype>-<layout>.json "
            "(-out-<out_dtype> before .json for a half C) in the working directory",
        ),
    ] = None,
    markdown_file: Annotated[
        Path | None, typer.Option("--markdown", help="default: --out with .md")
    ] = None,
    chart: Annotated[Path | None, typer.Option("--chart", help="default: --out with .svg")] = None,
) -> None:
    """Tune or reuse every suite shape, re-measure it side by side with the best vendor launch
    (cuBLASLt's top algorithms, padded on ragged shapes) and the default cuBLAS call, write JSON,
    a Markdown table (also printed) and an SVG chart."""
    # The bench's machinery (the study loop, SQLAlchemy, CuPy) only when it runs: `gemmtune
    # --help` and the quick commands start without it.
    from storage import open_database
    from tuner.model.roofline import ceilings_for
    from tuner.report.bench_tables import baseline_name, chart_title, markdown, ratio_chart
    from tuner.run import bench as logic
    from tuner.run.runner import start_gpu

    entries = read_suite(suite if suite is not None else default_suite(), dtype, layout, out_dtype)
    request = logic.BenchRequest(
        TuneRequest(
            shapes=tuple(entry.shape for entry in entries),
            families=tuple(family or ()),
            accuracy=accuracy,
            sampler=sampler,
            seed=seed,
            trials=trials,
            warm_start=warm_start,
            database_url=db,
        ),
        retune=retune,
        rounds=rounds,
        budget_ms=budget_ms,
        vendor_ranks=vendor_ranks,
    )
    gpu = start_gpu("gemmtune bench", request.budget_ms)
    try:
        sessions = open_database(db, optuna_tables=True)
        ceilings = ceilings_for(gpu.device.name)
        if ceilings is None:
            err.print(f"no roofline figures for {gpu.device.name}: the roofline is left out")
        elif bandwidth is not None:
            ceilings = ceilings.with_bandwidth(bandwidth, "measured, given with --bandwidth")
        slug = logic.device_slug(gpu.device.name)
        name = logic.suite_file_name(slug, entries[0].shape, request.tune.accuracy)
        json_path = out_json or output_dir() / name

        with SuiteBar(len(entries)) as bar:

            def save(rows: list[dict[str, Any]]) -> None:
                doc = logic.document(rows, gpu, request, ceilings, _suite_label(suite))
                write_suite_file(json_path, doc)
                err.print(_progress_line(rows[-1]), markup=False, soft_wrap=True)
                bar.shape_done()

            rows = logic.run_bench(entries, gpu, sessions, request, ceilings, save, bar)
    finally:
        gpu.close()
    doc = logic.document(rows, gpu, request, ceilings, _suite_label(suite))
    write_suite_file(json_path, doc)
    text = markdown(doc)
    md_path = markdown_file or json_path.with_suffix(".md")
    svg_path = chart or json_path.with_suffix(".svg")
    _write(md_path, text)
    _write(svg_path, ratio_chart(rows, chart_title(doc), baseline_name(doc)))
    sys.stdout.write(text)
    err.print(f"wrote {json_path}, {md_path}, {svg_path}", markup=False, soft_wrap=True)
