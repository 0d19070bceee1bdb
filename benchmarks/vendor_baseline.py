"""The best vendor launch per shape (GPU only): cuBLASLt's heuristic algorithms, the default
cuBLAS call (cublasSgemm for float32 NN, cublasGemmEx otherwise) and, on ragged shapes, "pad
to whole 16-byte vectors, then cuBLAS" with the copies timed, side by side.

    python benchmarks/vendor_baseline.py --out vendor.json --commit HASH [--ranks 8] [--rounds 3]

Every launch is first checked against cuBLAS on the same random normal operands (strict FP32,
FP32 sums for half inputs; relative Frobenius error), then all are timed alternately in
``--rounds`` rounds (CUDA events, L2 flushed before each repeat, median per round); reported:
the median of the rounds. ``--shape MxNxK:dtype:layout[:out]`` replaces the default shape list
(``out``: the type of C, by default the input type). ``--torch`` adds, on ragged shapes, "pad every
dimension to a multiple of 8 with ``torch.nn.functional.pad``, ``torch.matmul``, copy C's M x N
part out" (half C only: what torch.matmul writes), the baseline issue 41 quotes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.core.shape import Shape
from tuner.gpu import cublaslt, half_arrays
from tuner.gpu.device import live_device
from tuner.gpu.measure import (
    CHECKS,
    Operands,
    relative_error,
    shape_gemm,
    time_launches,
    tolerance,
    vendor_half_c_allowance,
)
from tuner.gpu.vendor_launch import VendorKernel, launch_vendor, make_vendor_kernel, vendor_source
from tuner.gpu.worker import device_provenance
from tuner.kernels.families import CUBLAS, CUBLASLT
from tuner.kernels.operand_padding import pad_multiple, padding_refusal

SHAPES = [
    *(
        Shape(size, size, size, dtype, layout)
        for size in (4096, 1024)
        for dtype in ("float32", "bfloat16", "float16")
        for layout in ("NN", "NT")
    ),
    Shape(4097, 4097, 4097, "bfloat16", "NN"),
]
Launch = Callable[[float, Any, Any, float, Any], None]


def _torch_pad_then_matmul(shape: Shape) -> Launch:
    """torch's way to run a ragged half product on aligned kernels: every dimension of each
    stored operand padded to a multiple of 8, one ``torch.matmul``, C's M x N part copied out
    (alpha 1 and beta 0 as timed; other alpha and beta by separate torch operations, for the
    checks only)."""
    import torch
    import torch.nn.functional as functional

    half = {"float16": torch.float16, "bfloat16": torch.bfloat16}[shape.dtype]

    def tensor(array: Any) -> Any:
        return torch.from_dlpack(array).view(half)

    def padded(stored: Any) -> Any:
        rows, cols = stored.shape
        return functional.pad(stored, (0, -cols % 8, 0, -rows % 8))

    def launch(alpha: float, a: Any, b: Any, beta: float, c: Any) -> None:
        a_used = padded(tensor(a))
        b_used = padded(tensor(b))
        product = (a_used.T if shape.a_transposed else a_used) @ (
            b_used.T if shape.b_transposed else b_used
        )
        out = tensor(c)
        if alpha == 1.0 and beta == 0.0:
            out.copy_(product[: shape.m, : shape.n])
            return
        update = alpha * product[: shape.m, : shape.n].float() + beta * out.float()
        out.copy_(update.to(half))

    return launch


def _launches(shape: Shape, ranks: int, with_torch: bool = False) -> dict[str, Launch]:
    """Every vendor launch of ``shape`` by name."""
    launches: dict[str, Launch] = {
        "cublas": lambda alpha, a, b, beta, c: shape_gemm(shape, alpha, a, b, beta, c)
    }
    ragged = padding_refusal(shape, c_rows=True) is None
    pad = pad_multiple(shape.dtype)
    for rank in range(ranks):
        for padded in (False, True) if ragged else (False,):
            config = CUBLASLT.config({"RANK": rank})
            config = config.padded(pad) if padded else config
            kernel, source = VendorKernel(config), vendor_source(config)
            launches[config.name] = lambda alpha, a, b, beta, c, k=kernel, s=source: launch_vendor(
                k, s, shape, alpha, a, b, beta, c
            )
            launches[config.name].kernel = kernel  # type: ignore[attr-defined]
    if ragged:
        # The default call on padded copies (``cublas_pad8``): rows of A, B and C whole vectors.
        padded_call = CUBLAS.config({}).padded(pad)
        kernel, source = make_vendor_kernel(padded_call), vendor_source(padded_call)
        launches["pad_then_cublas"] = lambda alpha, a, b, beta, c: launch_vendor(
            kernel, source, shape, alpha, a, b, beta, c
        )
        if with_torch and shape.dtype != "float32" and shape.out == shape.dtype:
            launches["torch_pad_then_matmul"] = _torch_pad_then_matmul(shape)
    return launches


def _verified(ops: Operands, launch: Launch) -> float | str:
    """The worst relative error of ``launch`` over the two checks, or why it did not run."""
    import cupy as cp

    worst, shape = 0.0, ops.shape
    for index, (alpha, beta) in enumerate(CHECKS):
        c = ops.c0.copy() if beta != 0.0 else half_arrays.nan_filled(shape.m, shape.n, shape.out)
        try:
            launch(alpha, ops.a, ops.b, beta, c)
        except cublaslt.LtUnavailable as exc:
            return str(exc)
        cp.cuda.get_current_stream().synchronize()
        worst = max(worst, relative_error(c, ops.references[index], shape.out))
    return worst


def measure_shape(
    shape: Shape, ranks: int, rounds: int, budget_ms: float, with_torch: bool = False
) -> dict[str, Any]:
    ops = Operands.make(shape, seed=12345)
    limit = tolerance(shape.k, shape.dtype, shape.out)
    if shape.out != "float32":  # cuBLAS's half C is not always the FP32 sums rounded once
        limit += vendor_half_c_allowance(shape.out)
    row: dict[str, Any] = {"m": shape.m, "n": shape.n, "k": shape.k, "dtype": shape.dtype}
    row["layout"], row["out_dtype"] = shape.layout, shape.out
    launches, timed, skipped = _launches(shape, ranks, with_torch), {}, {}
    for name, launch in launches.items():
        error = _verified(ops, launch)
        if isinstance(error, str):
            skipped[name] = error
        elif error > limit:
            skipped[name] = f"relative error {error:.2e} > {limit:.1e}"
        else:
            timed[name] = launch
    rounds_ms: dict[str, list[float]] = {name: [] for name in timed}
    for _ in range(rounds):
        for name, launch in timed.items():
            timing = time_launches(
                lambda launch=launch: launch(1.0, ops.a, ops.b, 0.0, ops.out), budget_ms=budget_ms
            )
            rounds_ms[name].append(timing.median_ms)
    ms = {name: statistics.median(values) for name, values in rounds_ms.items()}
    lt = {
        name: value
        for name, value in ms.items()
        if name.startswith("cublaslt") and "_pad" not in name
    }
    padded_lt = {
        name: value for name, value in ms.items() if name.startswith("cublaslt") and "_pad" in name
    }
    best_lt = min(lt, key=lt.__getitem__) if lt else None
    kernel = launches[best_lt].kernel if best_lt else None  # type: ignore[attr-defined]
    row.update(
        cublas_ms=ms.get("cublas"),
        best_lt=best_lt,
        best_lt_ms=lt.get(best_lt) if best_lt else None,
        best_lt_algo=kernel.identity().get("algo") if kernel else None,
        lt_rank0_ms=lt.get("cublaslt_rk0"),
        pad_then_cublas_ms=ms.get("pad_then_cublas"),
        torch_pad_then_matmul_ms=ms.get("torch_pad_then_matmul"),
        best_padded_lt=min(padded_lt, key=padded_lt.__getitem__) if padded_lt else None,
        best_padded_lt_ms=min(padded_lt.values()) if padded_lt else None,
        all_ms=ms,
        rounds_ms=rounds_ms,
        skipped=skipped,
    )
    vendor = {name: value for name, value in ms.items() if not name.startswith("torch")}
    row["best_vendor"] = min(vendor, key=vendor.__getitem__)
    row["best_vendor_ms"] = vendor[row["best_vendor"]]
    cublas_ms = ms.get("cublas")
    row["cublas_over_best_vendor"] = cublas_ms / row["best_vendor_ms"] if cublas_ms else None
    row["tflops"] = {name: shape.tflops(value) for name, value in ms.items()}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--commit", required=True, help="the gemmtune commit measured")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget-ms", type=float, default=40.0)
    parser.add_argument("--shape", action="append", default=[], help="MxNxK:dtype:layout[:out]")
    parser.add_argument("--torch", action="store_true", help="also torch's pad-then-matmul")
    args = parser.parse_args()
    shapes = SHAPES
    if args.shape:
        shapes = []
        for text in args.shape:
            dims, dtype, layout, *out = text.split(":")
            m, n, k = (int(x) for x in dims.split("x"))
            shapes.append(Shape(m, n, k, dtype, layout, out[0] if out else None))
    device = live_device()
    rows = []
    for shape in shapes:
        rows.append(measure_shape(shape, args.ranks, args.rounds, args.budget_ms, args.torch))
        row = rows[-1]
        print(shape.label(), {name: round(value, 4) for name, value in row["all_ms"].items()})
        print("  skipped:", row["skipped"], flush=True)
    document = {
        "what": "best vendor launch per shape: cuBLASLt heuristic algorithms vs default cuBLAS "
        "vs pad-then-cuBLAS (copies timed)",
        "device": device.name,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": args.commit,
        "provenance": {**device_provenance(device), "cublaslt": cublaslt.version()},
        "method": {
            "ranks": args.ranks,
            "rounds": args.rounds,
            "budget_ms_per_block": args.budget_ms,
            "timing": "each launch verified against cuBLAS first; then all timed alternately "
            "per round (CUDA events, L2 flushed before each repeat, median of repeats); "
            "reported: median of the rounds; alpha = 1, beta = 0; C of each row's out_dtype",
        },
        "shapes": rows,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
