"""What ptxas makes of the FP64 tensor-core configs whose ``__launch_bounds__`` register cap is
under the pre-compile estimate: registers and spills from nvcc for sm_90 (no GPU needed).

    python benchmarks/spill_probe.py --out benchmarks/results/nvcc-launch-bound-spills.json \
        [--per-family 60] [--seed 1] [--shape 4096x4096x4096] [CONFIG ...]

The configs are the named ones plus, per family (``dmma``, ``dmma_pipelined``), a seeded sample of
the shape's candidates whose estimate exceeds 1.15 times the cap that MINBLOCKS leaves
(``tuner.kernels.resources.launch_bound_registers``). Each row holds the estimate, the cap, their
ratio, and what nvcc reported; the summary counts, per ratio band, the configs that spilled. This is
the evidence behind ``launch_bound_slack`` of ``dmma_pipelined`` (``tuner.kernels.families.dmma``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import random
from pathlib import Path
from typing import Any

from tuner.core.shape import parse_shape
from tuner.kernels.compile import CompiledKernel, CompileError, NvccCompiler, compile_many
from tuner.kernels.families import parse_config
from tuner.kernels.render import KernelSource, render
from tuner.kernels.resources import (
    ResourceCheck,
    launch_bound_registers,
    static_check,
    table_device,
)
from tuner.kernels.space import Space

ARCH = "sm_90"
FAMILIES = ("dmma", "dmma_pipelined")
LOWEST_RATIO = 1.15


def cap_of(check: ResourceCheck) -> int | None:
    """The register cap MINBLOCKS sets for a config (None without one)."""
    blocks = check.config.as_dict().get("MINBLOCKS", 0)
    return launch_bound_registers(check.threads, blocks, table_device(ARCH)) if blocks else None


def sampled(shape: str, per_family: int, seed: int) -> list[str]:
    """Per family, ``per_family`` candidates of ``shape`` with estimate > LOWEST_RATIO x cap."""
    rng = random.Random(seed)
    names: list[str] = []
    for family in FAMILIES:
        checks, _ = Space(family, parse_shape(shape), table_device(ARCH)).evaluate()
        squeezed = [
            c.config.name
            for c in checks
            if (cap := cap_of(c)) is not None and c.est_registers > LOWEST_RATIO * cap
        ]
        names += rng.sample(squeezed, min(per_family, len(squeezed)))
    return names


def row(source: KernelSource, result: CompiledKernel | CompileError) -> dict[str, Any]:
    check = static_check(source.config, table_device(ARCH))
    cap = cap_of(check)
    entry: dict[str, Any] = {
        "config": source.config.name,
        "estimate": check.est_registers,
        "cap": cap,
        "ratio": None if cap is None else check.est_registers / cap,
    }
    if isinstance(result, CompileError):
        entry["error"] = str(result).splitlines()[0][:200]
        return entry
    usage = result.usage
    entry.update(
        registers=usage.registers,
        spill_store_bytes=usage.spill_store_bytes,
        spill_load_bytes=usage.spill_load_bytes,
        spills=bool(usage.spills),
    )
    return entry


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per band of estimate/cap (0.05 wide), configs compiled and configs that spilled."""
    bands: dict[float, list[int]] = {}
    for entry in rows:
        if entry["ratio"] is None or "spills" not in entry:
            continue
        band = round(int(entry["ratio"] * 20) / 20, 2)
        counts = bands.setdefault(band, [0, 0])
        counts[0] += 1
        counts[1] += int(entry["spills"])
    return [{"ratio_from": b, "compiled": c, "spilled": s} for b, (c, s) in sorted(bands.items())]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--per-family", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--shape", default="4096x4096x4096")
    parser.add_argument("configs", nargs="*")
    args = parser.parse_args(argv)
    names = list(dict.fromkeys([*args.configs, *sampled(args.shape, args.per_family, args.seed)]))
    compiler = NvccCompiler(ARCH)
    sources = [render(parse_config(name)) for name in names]
    rows = [row(s, r) for s, r in zip(sources, compile_many(compiler, sources), strict=True)]
    document = {
        "what": "nvcc register use and spills of FP64 tensor-core configs under launch bounds",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "arch": ARCH,
        "compiler": compiler.version,
        "machine": f"{platform.machine()} {platform.system()}, no GPU used",
        "python": platform.python_version(),
        "shape_sampled": args.shape,
        "seed": args.seed,
        "summary": summary(rows),
        "rows": rows,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    for band in document["summary"]:
        print(f"estimate/cap >= {band['ratio_from']:.2f}: {band['spilled']}/{band['compiled']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
