"""Commands on the kernels themselves: ``space``, ``render`` and ``compile``."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from tuner.cli._common import DtypeOpt, LayoutOpt, OutDtypeOpt, out
from tuner.cli._progress import StepBar
from tuner.cli._tables import Column, table_lines
from tuner.core.errors import InputError
from tuner.core.shape import parse_shape
from tuner.gpu.device import resolve_device
from tuner.gpu.nvrtc import COMPILERS, choose_compiler
from tuner.kernels.compile import CompiledKernel, CompileError
from tuner.kernels.compiled_candidates import compile_candidates
from tuner.kernels.families import FAMILIES, checked_config, get_family
from tuner.kernels.render import KernelSource, render
from tuner.kernels.resources import static_check
from tuner.kernels.space import Space

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
CompilerOpt = Annotated[
    str,
    typer.Option(
        help=f"{', '.join(COMPILERS)}: auto is nvrtc (CuPy) with a GPU, else nvcc (CUDA toolkit)"
    ),
]
ConfigFamilyOpt = Annotated[
    str | None,
    typer.Option("--family", "-f", help="the family of a BM=..,BN=.. --config"),
]
SPACE_COLUMNS = (
    Column("threads", numeric=True),
    Column("smem B", numeric=True),
    Column("est. regs", numeric=True),
    Column("blocks/SM", numeric=True),
    Column("occupancy", numeric=True),
)


def space(
    family: FamilyOpt,
    shape: ShapeOpt,
    dtype: DtypeOpt = "float32",
    layout: LayoutOpt = "NN",
    out_dtype: OutDtypeOpt = None,
    device: DeviceOpt = None,
    limit: Annotated[int, typer.Option(help="how many configs to list (0 or more)")] = 10,
    compile: Annotated[
        bool, typer.Option("--compile", help="also compile and prune on real usage")
    ] = False,
    compiler: CompilerOpt = "auto",
    jobs: Annotated[int | None, typer.Option(help="parallel compiles (default: all cores)")] = None,
) -> None:
    """Count the configs of a family for a shape (raw -> valid -> useful -> fits) and list some."""
    if limit < 0:
        raise InputError(f"`--limit` must be 0 or more, got {limit}")
    fam, dev = get_family(family), resolve_device(device)
    problem = parse_shape(shape, dtype, layout, out_dtype)
    sp = Space(fam, problem, dev)
    checks, counts = sp.evaluate()
    out.print(f"{fam.name} on {dev.name} for {problem.label()}: {counts}")
    for reason, n in sorted(counts.pruned.items(), key=lambda kv: -kv[1]):
        out.print(f"  dropped {n:6d}: {reason}")
    if fam.vendor:  # no kernel of ours: nothing to compile, and no resources to show
        out.print("(the library's heuristic ranks; it picks its own resources)")
        for config in [check.config for check in checks][:limit]:
            out.print(config.name, markup=False)
        if compile:
            out.print(f"{fam.name} is a vendor library: nothing to compile")
        return
    if compile:
        chosen = choose_compiler(dev.arch, compiler)
        with StepBar("compiling", len(checks)) as bar:
            cands, _ = compile_candidates(sp, chosen, jobs=jobs, on_done=lambda *_: bar.advance())
        by_status: dict[str, int] = {}
        for c in cands:
            by_status[c.status] = by_status.get(c.status, 0) + 1
        out.print("after compiling: " + ", ".join(f"{k} {v}" for k, v in sorted(by_status.items())))
        for c in [c for c in cands if c.status != "ok"][:limit]:
            out.print(f"  {c.status}: {c.config.name}: {c.reason}", markup=False)
    shown = checks[:limit]
    rows = [
        [
            str(c.threads),
            str(c.smem_bytes),
            str(c.est_registers),
            str(c.occupancy.blocks_per_sm),
            f"{c.occupancy.occupancy:.0%}",
        ]
        for c in shown
    ]
    names = [c.config.name for c in shown]
    for line in table_lines(SPACE_COLUMNS, rows, out.width, Column("config"), names):
        out.print(line, markup=False)


def render_cmd(config: ConfigOpt, family: ConfigFamilyOpt = None) -> None:
    """Print the CUDA source of one config."""
    sys.stdout.write(render(checked_config(config, family)).code)


def compile_cmd(
    config: ConfigOpt,
    family: ConfigFamilyOpt = None,
    device: DeviceOpt = None,
    compiler: CompilerOpt = "auto",
) -> None:
    """Compile one config; print registers, shared memory, spills and occupancy."""
    cfg, dev = checked_config(config, family), resolve_device(device)
    source: KernelSource = render(cfg)
    try:
        kernel: CompiledKernel = choose_compiler(dev.arch, compiler).compile(source)
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
