"""The ``gemmtune`` command line.

Bad input (an impossible shape, an unknown family or device, an invalid config) ends with exit
code 2 and one line that names the value and what is allowed; never a traceback.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from storage import StorageError
from tuner import bench_cli, tune_cli
from tuner.candidates import compile_candidates
from tuner.compile import CompiledKernel, CompileError, Compiler, NvccCompiler, NvrtcCompiler
from tuner.config import Config
from tuner.errors import InputError
from tuner.families import FAMILIES, get_family, parse_config
from tuner.render import KernelSource, render
from tuner.resources import DeviceLimits, resolve_device, static_check
from tuner.shape import parse_shape
from tuner.space import Space

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Autotune GEMM tile parameters for Jinja-templated CUDA kernels.",
)
out = Console(highlight=False)

FamilyOpt = Annotated[str, typer.Option("--family", "-f", help=f"one of {', '.join(FAMILIES)}")]
ShapeOpt = Annotated[str, typer.Option("--shape", "-s", help="MxNxK, e.g. 4096x4096x4096")]
DeviceOpt = Annotated[
    str | None,
    typer.Option(
        "--device", "-d", help="sm_80, sm_86, sm_89 or sm_90; default: the GPU, else sm_90"
    ),
]
ConfigOpt = Annotated[
    str, typer.Option("--config", "-c", help="a procedural name, or BM=..,BN=.. with --family")
]


def _config(text: str, family: str | None) -> Config:
    config = parse_config(text, family)
    broken = get_family(config.family).broken_rules(config)
    if broken:
        raise InputError(f"config {config.name} is invalid: {broken[0]}")
    return config


def _compiler(device: DeviceLimits, name: str) -> Compiler:
    if name == "auto":
        name = "nvrtc" if _gpu_present() else "nvcc"
    if name == "nvcc":
        return NvccCompiler(device.arch)
    if name == "nvrtc":
        return NvrtcCompiler(device.arch)
    raise InputError(f"--compiler must be auto, nvcc or nvrtc, got {name!r}")


def _gpu_present() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount() > 0)
    except Exception:
        return False


@app.command()
def space(
    family: FamilyOpt,
    shape: ShapeOpt,
    device: DeviceOpt = None,
    limit: Annotated[int, typer.Option(help="how many configs to list")] = 10,
    compile: Annotated[
        bool, typer.Option("--compile", help="also compile and prune on real usage")
    ] = False,
    compiler: Annotated[str, typer.Option(help="auto, nvcc or nvrtc")] = "auto",
    jobs: Annotated[int | None, typer.Option(help="parallel compiles (default: all cores)")] = None,
) -> None:
    """Count the configs of a family for a shape (raw -> valid -> useful -> fits) and list some."""
    fam, problem, dev = get_family(family), parse_shape(shape), resolve_device(device)
    sp = Space(fam, problem, dev)
    checks, counts = sp.evaluate()
    out.print(f"{fam.name} on {dev.name} for {problem}: {counts}")
    for reason, n in sorted(counts.pruned.items(), key=lambda kv: -kv[1]):
        out.print(f"  dropped {n:6d}: {reason}")
    if compile:
        cands, _ = compile_candidates(sp, _compiler(dev, compiler), jobs=jobs)
        by_status: dict[str, int] = {}
        for c in cands:
            by_status[c.status] = by_status.get(c.status, 0) + 1
        out.print("after compiling: " + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())))
        for c in [c for c in cands if c.status != "ok"][:limit]:
            out.print(f"  {c.status}: {c.config.name}: {c.reason}")
    table = Table("config", "threads", "smem B", "est. regs", "blocks/SM", "occupancy")
    for check in checks[:limit]:
        table.add_row(
            check.config.name,
            str(check.threads),
            str(check.smem_bytes),
            str(check.est_registers),
            str(check.occupancy.blocks_per_sm),
            f"{check.occupancy.occupancy:.0%}",
        )
    out.print(table)


@app.command("render")
def render_cmd(
    config: ConfigOpt,
    family: Annotated[str | None, typer.Option("--family", "-f")] = None,
) -> None:
    """Print the CUDA source of one config."""
    sys.stdout.write(render(_config(config, family)).code)


@app.command("compile")
def compile_cmd(
    config: ConfigOpt,
    family: Annotated[str | None, typer.Option("--family", "-f")] = None,
    device: DeviceOpt = None,
    compiler: Annotated[str, typer.Option(help="auto, nvcc or nvrtc")] = "auto",
) -> None:
    """Compile one config; print registers, shared memory, spills and occupancy."""
    cfg, dev = _config(config, family), resolve_device(device)
    source: KernelSource = render(cfg)
    try:
        kernel: CompiledKernel = _compiler(dev, compiler).compile(source)
    except CompileError as exc:
        out.print(f"{cfg.name}: compile failed: {exc}")
        raise typer.Exit(1) from exc
    u, occ, est = kernel.usage, kernel.occupancy(dev), static_check(cfg, dev)
    out.print(
        f"{cfg.name}  ({kernel.compiler}, {kernel.arch}{', cached' if kernel.cached else ''})"
    )
    out.print(f"  registers/thread   {u.registers} (estimated {est.est_registers})")
    out.print(
        f"  shared memory      {u.smem_static_bytes} B static + "
        f"{source.dynamic_smem_bytes} B dynamic"
    )
    out.print(
        f"  spills             {u.spill_store_bytes} B stores, {u.spill_load_bytes} B loads, "
        f"{u.stack_bytes} B stack"
    )
    out.print(f"  threads/block      {source.threads}")
    out.print(
        f"  occupancy on {dev.arch}  {occ.blocks_per_sm} blocks/SM, {occ.occupancy:.0%} "
        f"(limited by {occ.limited_by})"
    )
    verdict = kernel.rejection(dev)
    out.print(f"  verdict            {'pruned: ' + verdict if verdict else 'ok'}")


@app.command("serve")
def serve(
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8000,
    db: tune_cli.DbOpt = None,
    preload: Annotated[
        bool,
        typer.Option(help="fill an empty database with the committed H100 results first"),
    ] = True,
) -> None:
    """Run the HTTP API and dashboard (FastAPI + uvicorn) on a results database."""
    from api.serve import serve as run_server  # FastAPI only when serving

    run_server(host, port, db, preload)


app.command("tune")(tune_cli.tune)
app.command("tune-batch")(tune_cli.tune_batch)
app.command("best")(tune_cli.best)
app.command("results")(tune_cli.results)
app.command("export")(tune_cli.export)
app.command("import")(tune_cli.import_)
app.command("bench")(bench_cli.bench)
app.add_typer(tune_cli.db_app, name="db")


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


if __name__ == "__main__":
    main()
