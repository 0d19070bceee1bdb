"""What the command modules share: the consoles and the option types."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tuner.core.accuracy import ACCURACY_CLASSES
from tuner.core.shape import SUPPORTED_DTYPES, SUPPORTED_LAYOUTS
from tuner.kernels.families import FAMILIES
from tuner.run.default_families import (
    DEFAULT_EMULATED_FAMILIES,
    DEFAULT_FAMILIES,
    DEFAULT_HALF_FAMILIES,
)
from tuner.search.sampler_names import SAMPLERS

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db", help="SQLAlchemy URL; default $GEMMTUNE_DATABASE_URL or sqlite:///gemmtune.db"
    ),
]
FamiliesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--family",
        "-f",
        help=f"repeatable; default {', '.join(DEFAULT_FAMILIES)} for float32 (with --accuracy "
        f"bf16x3 also {', '.join(DEFAULT_EMULATED_FAMILIES)}), "
        f"{', '.join(DEFAULT_HALF_FAMILIES)} for float16 and bfloat16 (a replay table: its "
        f"own) ({', '.join(FAMILIES)})",
    ),
]
ReplayTablesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        help="sweep tables (JSON lines of gemmtune sweep); repeatable: tables of one device "
        "merge, a later table's row winning (default h100-sweep.jsonl in the results folder: "
        "$GEMMTUNE_RESULTS_DIR, else the one installed with the package)"
    ),
]
WarmStartOpt = Annotated[
    int,
    typer.Option(
        "--warm-start",
        min=0,
        help="a new study first evaluates up to this many configs: the committed suite's best "
        "for the shape on this GPU, then the bests of the nearest shapes (0: none)",
    ),
]
SamplerOpt = Annotated[str, typer.Option(help=", ".join(SAMPLERS))]
DtypeOpt = Annotated[
    str,
    typer.Option(
        "--dtype",
        help=f"type of A and B: {', '.join(SUPPORTED_DTYPES)} (half inputs: FP32 sums)",
    ),
]
OutDtypeOpt = Annotated[
    str | None,
    typer.Option(
        "--out-dtype",
        help="type of C: float32 for float32 inputs; float32 or the input type for half "
        "inputs (default: the input type, as torch.matmul)",
    ),
]
AccuracyOpt = Annotated[
    str,
    typer.Option(
        "--accuracy",
        help="the least exact accuracy class accepted: "
        + "; ".join(f"{c.name}: {c.doc}" for c in ACCURACY_CLASSES.values()),
    ),
]
LayoutOpt = Annotated[
    str,
    typer.Option(
        "--layout",
        help=f"{', '.join(SUPPORTED_LAYOUTS)}: A then B, N as used, T stored transposed "
        "(NT is x @ W.T, nn.Linear); row-major means NN",
    ),
]
GpusOpt = Annotated[
    str | None,
    typer.Option(
        "--gpus",
        help="all, a count N (devices 0..N-1) or device indices such as 0,2 (one alone: 1,), "
        "among those CUDA_VISIBLE_DEVICES leaves visible; a worker per GPU (default: device 0)",
    ),
]
SeedOpt = Annotated[int | None, typer.Option(help="sampler seed")]
