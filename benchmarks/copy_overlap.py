"""Can a padded launch hide its copies behind its own product? (GPU only; a probe, not a launch
mode of the tuner.)

    python benchmarks/copy_overlap.py --out copy-overlap.json [--rounds 5] \
        --case 2047x2047x2047:dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1 ...

A padded launch (``tuner.gpu.padded_launch``) copies each ragged operand into rows on 128-byte
lines with the copy kernel, then runs the product: on the cubes and primes of the odd suite the
copies cost 4-9 % of the kernel's time (``benchmarks/speed.md``). The product on the FP64 tensor
cores is bound by its math, not by DRAM, and ``cudaMemcpy2DAsync`` on another stream may move
memory while a kernel runs (by the copy engines; which unit the runtime picks is not checked
here), so the copies might run while a product runs. For a config of a family that takes leading
dimensions, on an odd shape, each round times these ways (CUDA events behind a stream gate, L2
flushed before each, beta = 0, medians; each way's C first checked against cuBLAS in strict
FP32):

- ``kernel``: the product alone on operands already in wide rows (no copies: the floor);
- ``padded``: today's ``_pad4`` launch, copies included;
- ``dma``: the same copies by ``cudaMemcpy2DAsync`` alone;
- ``kernel_with_dma``: ``kernel`` while ``dma`` runs on a second stream into other buffers:
  whether the two slow each other (the end is when both are done);
- ``chained_F``: the product cut along K in two, on wide rows: the copy kernel copies A's first
  K1 columns and B's first K1 rows (K1 about F of K, a multiple of 32), the first product
  (K1, beta = 0) runs while ``cudaMemcpy2DAsync`` copies the rest on a second stream, and the second
  product (K - K1, beta = 1) waits for them: only the first part's copies and the second
  product's read of C are added to ``kernel``; ``chained_0.25_wide_c`` is the same with C's rows
  on 128-byte lines (a product that reads C stores it a value at a time at an odd ldc).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from odd_loss import (
    L2_FLUSH_BYTES,
    LAUNCHES,
    in_wider_rows,
    leading_dims_kernel,
    time_cases,
)

from tuner.core.shape import Shape
from tuner.gpu.measure import cublas_gemm, launch, launch_kernel, relative_error, tolerance
from tuner.gpu.pad_copy import copy_rows
from tuner.gpu.stream_gate import held_stream
from tuner.kernels.operand_padding import Copy2D, row_pitch

FRACTIONS = (0.125, 0.25, 0.5)  # K1 / K of the chained ways
# One more chained way writes a C whose rows are on 128-byte lines, as if the caller's were: the
# second product reads C (beta = 1), and at an odd ldc the kernel stores C a value at a time.
WIDE_C, WIDE_C_FRACTION = "_wide_c", 0.25
K_STEP = 32  # K1 is a multiple of this (every BK of the families), so A's views stay on 128 bytes
FLOAT = 4


def first_part(k: int, fraction: float) -> int:
    """K1 of a chained way: about ``fraction`` of ``k``, a multiple of :data:`K_STEP`, at least
    one step and short of ``k``."""
    return min(max(K_STEP, round(fraction * k / K_STEP) * K_STEP), (k - 1) // K_STEP * K_STEP)


class Operands:
    """A and B of one odd shape, packed as a caller gives them, and two sets of wide buffers
    (rows on 128-byte lines) for them to be copied into."""

    def __init__(self, cp: Any, shape: Shape) -> None:
        self.cp, self.shape = cp, shape
        rng = cp.random.default_rng(shape.m * 7 + shape.n)
        self.a = rng.standard_normal((shape.m, shape.k), dtype=cp.float32)
        self.b = rng.standard_normal((shape.k, shape.n), dtype=cp.float32)
        self.wide = [(in_wider_rows(cp, self.a), in_wider_rows(cp, self.b)) for _ in range(2)]
        self.kp, self.np_ = (row_pitch(x) for x in self.wide[0])

    def dma(self, into: int, stream: Any, k_from: int = 0) -> None:
        """A's columns and B's rows from ``k_from`` on, into wide set ``into``, by
        ``cudaMemcpy2DAsync`` on ``stream``."""
        runtime = self.cp.cuda.runtime
        a_wide, b_wide = self.wide[into]
        m, n, k = self.shape.m, self.shape.n, self.shape.k
        pieces = (
            (a_wide[:, k_from:], self.a[:, k_from:], m, (k - k_from) * FLOAT, self.kp, k),
            (b_wide[k_from:], self.b[k_from:], k - k_from, n * FLOAT, self.np_, n),
        )
        for dst, src, rows, width, dst_pitch, src_pitch in pieces:
            runtime.memcpy2DAsync(
                int(dst.data.ptr),
                dst_pitch * FLOAT,
                int(src.data.ptr),
                src_pitch * FLOAT,
                width,
                rows,
                runtime.memcpyDeviceToDevice,
                stream.ptr,
            )

    def copy_first(self, k1: int) -> None:
        """A's first ``k1`` columns and B's first ``k1`` rows into wide set 0, by the copy
        kernel on the current stream."""
        a_wide, b_wide = self.wide[0]
        m, n, k = self.shape.m, self.shape.n, self.shape.k
        copy_rows(a_wide, self.a, Copy2D(m, k1 * FLOAT, k * FLOAT, self.kp * FLOAT), FLOAT)
        copy_rows(b_wide, self.b, Copy2D(k1, n * FLOAT, n * FLOAT, self.np_ * FLOAT), FLOAT)


def _ways(cp: Any, shape: Shape, name: str) -> tuple[dict[str, Callable[[], None]], dict[str, int]]:
    kernel, direct, padded = leading_dims_kernel(name)
    ops = Operands(cp, shape)
    side = cp.cuda.Stream(non_blocking=True)
    outputs: dict[str, Any] = {}

    def out(way: str) -> Any:
        if way not in outputs:
            cols = ops.np_ if way.endswith(WIDE_C) else shape.n
            outputs[way] = cp.full((shape.m, cols), cp.nan, dtype=cp.float32)[:, : shape.n]
        return outputs[way]

    def product(way: str, a: Any, b: Any, k: int, beta: float) -> None:
        launch_kernel(kernel, direct, Shape(shape.m, shape.n, k), 1.0, a, b, beta, out(way))

    def alongside(work: Callable[[], None], before_wait: Callable[[], None]) -> None:
        """``work`` on the side stream after everything queued so far on the current one;
        ``before_wait`` on the current stream; then the current stream waits for the side."""
        began = cp.cuda.Event()
        began.record()
        side.wait_event(began)
        work()
        done = cp.cuda.Event()
        done.record(side)
        before_wait()
        cp.cuda.get_current_stream().wait_event(done)

    a0, b0 = ops.wide[0]
    runs: dict[str, Callable[[], None]] = {
        "kernel": lambda: product("kernel", a0, b0, shape.k, 0.0),
        "padded": lambda: launch(kernel, padded, shape, 1.0, ops.a, ops.b, 0.0, out("padded")),
        "dma": lambda: alongside(lambda: ops.dma(1, side), lambda: None),
        "kernel_with_dma": lambda: alongside(
            lambda: ops.dma(1, side), lambda: product("kernel_with_dma", a0, b0, shape.k, 0.0)
        ),
    }
    parts: dict[str, int] = {}
    chained_ways = [(f"chained_{f:g}", f) for f in FRACTIONS]
    chained_ways.append((f"chained_{WIDE_C_FRACTION:g}{WIDE_C}", WIDE_C_FRACTION))
    for way, fraction in chained_ways:
        k1 = first_part(shape.k, fraction)
        parts[way] = k1

        def chained(way: str = way, k1: int = k1) -> None:
            def first() -> None:
                ops.copy_first(k1)
                product(way, a0[:, :k1], b0[:k1], k1, 0.0)

            alongside(lambda: ops.dma(0, side, k1), first)
            product(way, a0[:, k1:], b0[k1:], shape.k - k1, 1.0)

        runs[way] = chained
    ref = cp.zeros((shape.m, shape.n), dtype=cp.float32)
    cublas_gemm(1.0, ops.a, ops.b, 0.0, ref)
    for way, run in runs.items():
        if way == "dma":
            continue
        for buffers in ops.wide:  # a chained way must fill wide set 0 itself
            buffers[0].fill(cp.nan)
            buffers[1].fill(cp.nan)
        if way in ("kernel", "kernel_with_dma"):
            a0[...], b0[...] = ops.a, ops.b
        run()
        error = relative_error(out(way), ref)
        if not error <= tolerance(shape.k):
            raise SystemExit(f"{name} on {shape.label()}, {way}: relative error {error:.3e}")
    runs["dma"]()
    cp.cuda.Device().synchronize()
    if not (bool((ops.wide[1][0] == ops.a).all()) and bool((ops.wide[1][1] == ops.b).all())):
        raise SystemExit(f"{shape.label()}: cudaMemcpy2DAsync copied wrong values")
    a0[...], b0[...] = ops.a, ops.b
    return runs, parts


def _case(cp: Any, shape: Shape, name: str, rounds: int) -> dict[str, Any]:
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        runs, parts = _ways(cp, shape, name)
        flush = cp.empty(L2_FLUSH_BYTES // 4, dtype=cp.float32)
        times: dict[str, list[float]] = {way: [] for way in runs}
        for _ in range(rounds):
            for way, run in runs.items():
                events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(LAUNCHES)]
                with held_stream():  # the GPU runs them back to back, whatever the host's pace
                    for start, end in events:
                        flush.fill(0)
                        start.record()
                        run()
                        end.record()
                events[-1][1].synchronize()
                times[way] += [cp.cuda.get_elapsed_time(start, end) for start, end in events]
    row: dict[str, Any] = {"shape": shape.label(), "config": name, "k1": parts}
    for way, ts in times.items():
        row[f"{way}_us"] = statistics.median(ts) * 1e3
        if way != "dma":
            row[f"{way}_tflops"] = shape.tflops(statistics.median(ts))
    print(
        f"{shape.label()} {name}: "
        + ", ".join(f"{way} {row[f'{way}_us']:.1f}" for way in runs)
        + " us"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--case", action="append", required=True, help="MxNxK:unpadded config")
    args = parser.parse_args()
    import cupy as cp

    what = "copies of a padded launch beside its product (benchmarks/copy_overlap.py)"
    time_cases(cp, args.case, _case, args.rounds, args.out, what)


if __name__ == "__main__":
    main()
