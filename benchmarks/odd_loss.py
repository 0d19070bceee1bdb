"""Where an odd shape's time goes, for configs of the families that take leading dimensions
(GPU only): the same kernel timed seven ways, alternating within each round.

    python benchmarks/odd_loss.py --out odd-loss.json [--rounds 7] \
        --case 2047x2047x2047:dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1 ...
    ncu ... python benchmarks/odd_loss.py --profile prepadded --case ...   # one way, no timing

For an odd shape M x N x K and its aligned twin (each dimension rounded to the nearest multiple
of 4, ties up, as ``benchmarks/odd_report.py`` pairs them):

- ``twin``: the kernel on the twin's packed arrays;
- ``prepadded``: on the odd shape, A, B and C as views into buffers with a padded launch's row
  pitch (whole 128-byte lines since 2026-11-25, whole float4s before; C padded too): the odd
  edges only;
- ``prepadded_ab``: the same with C packed (row pitch N): what a padded launch runs, without
  its copies, so the difference from ``prepadded`` is C's stores at an odd pitch;
- ``prepadded_a`` / ``prepadded_b``: only A (or only B) in wider rows, the other operand and C
  packed: what a launch that copied one operand would run, without the copy;
- ``padded``: the ``_pad4`` launch, copies of the ragged operands included;
- ``direct``: the kernel on the odd shape's packed arrays (4-byte copies of ragged rows).

Each way's C is first checked against cuBLAS (strict FP32); then every round times each way
three times, queued without waiting (CUDA events, L2 flushed before each launch, beta = 0);
medians are reported, with the host's time to enqueue a launch (``*_host_us``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from odd_report import aligned_twin

from tuner.core.shape import Shape, parse_shape
from tuner.gpu.device import live_device
from tuner.gpu.measure import cublas_gemm, launch, launch_kernel, relative_error, tolerance
from tuner.gpu.nvrtc import NvrtcCompiler, load_kernel
from tuner.gpu.worker import device_provenance
from tuner.kernels.compile import compile_many
from tuner.kernels.families import parse_config
from tuner.kernels.operand_padding import round_up, row_pitch_multiple
from tuner.kernels.render import KernelSource, render

WAYS = ("twin", "prepadded", "prepadded_ab", "prepadded_a", "prepadded_b", "padded", "direct")
LAUNCHES = 3  # per way per round
L2_FLUSH_BYTES = 256 * 2**20


def twin_of(shape: Shape) -> Shape:
    """The suite's aligned twin (``benchmarks/odd_report.py``): each dimension rounded to the
    nearest multiple of 4, ties up."""
    m, n, k = aligned_twin((shape.m, shape.n, shape.k))
    return Shape(m, n, k)


def in_wider_rows(cp: Any, values: Any) -> Any:
    """``values`` copied into a zeroed buffer with the row pitch a padded launch gives it (the
    row length rounded up to ``row_pitch_multiple``: 4 floats before 2026-11-25, 32 since),
    returned as the view of its top left."""
    rows, cols = values.shape
    buffer = cp.zeros((rows, round_up(cols, row_pitch_multiple("float32"))), dtype=cp.float32)
    buffer[:, :cols] = values
    return buffer[:, :cols]


def leading_dims_kernel(name: str) -> tuple[Any, KernelSource, KernelSource]:
    """The compiled kernel of ``name`` (an unpadded config of a family that takes leading
    dimensions), its source and its ``_pad4`` twin's source (the same kernel, launched padded)."""
    config = parse_config(name)
    if config.pad:
        raise SystemExit(f"{name}: name the unpadded config; its _pad4 twin is timed too")
    direct, padded = render(config), render(config.padded(4))
    if not direct.leading_dims:
        raise SystemExit(f"{name}: its family does not take leading dimensions")
    compiled = compile_many(NvrtcCompiler(live_device().arch), [direct])[0]
    if isinstance(compiled, Exception):
        raise SystemExit(f"{name}: {compiled}")
    return load_kernel(compiled), direct, padded


def _ways(cp: Any, shape: Shape, twin: Shape, name: str) -> dict[str, Callable[[], None]]:
    """Each way's launch of ``name`` on ``shape`` (or ``twin``), each checked once."""
    kernel, direct, padded = leading_dims_kernel(name)

    rng = cp.random.default_rng(shape.m * 7 + shape.n)
    a = rng.standard_normal((shape.m, shape.k), dtype=cp.float32)
    b = rng.standard_normal((shape.k, shape.n), dtype=cp.float32)
    ta = rng.standard_normal((twin.m, twin.k), dtype=cp.float32)
    tb = rng.standard_normal((twin.k, twin.n), dtype=cp.float32)
    a_wide, b_wide = in_wider_rows(cp, a), in_wider_rows(cp, b)
    c = {way: cp.full((shape.m, shape.n), cp.nan, dtype=cp.float32) for way in WAYS}
    c["twin"] = cp.full((twin.m, twin.n), cp.nan, dtype=cp.float32)
    c["prepadded"] = in_wider_rows(cp, c["prepadded"])
    runs: dict[str, Callable[[], None]] = {
        "twin": lambda: launch_kernel(kernel, direct, twin, 1.0, ta, tb, 0.0, c["twin"]),
        "prepadded": lambda: launch_kernel(
            kernel, direct, shape, 1.0, a_wide, b_wide, 0.0, c["prepadded"]
        ),
        "prepadded_ab": lambda: launch_kernel(
            kernel, direct, shape, 1.0, a_wide, b_wide, 0.0, c["prepadded_ab"]
        ),
        "prepadded_a": lambda: launch_kernel(
            kernel, direct, shape, 1.0, a_wide, b, 0.0, c["prepadded_a"]
        ),
        "prepadded_b": lambda: launch_kernel(
            kernel, direct, shape, 1.0, a, b_wide, 0.0, c["prepadded_b"]
        ),
        "padded": lambda: launch(kernel, padded, shape, 1.0, a, b, 0.0, c["padded"]),
        "direct": lambda: launch_kernel(kernel, direct, shape, 1.0, a, b, 0.0, c["direct"]),
    }
    ref = cp.zeros((shape.m, shape.n), dtype=cp.float32)
    cublas_gemm(1.0, a, b, 0.0, ref)
    twin_ref = cp.zeros((twin.m, twin.n), dtype=cp.float32)
    cublas_gemm(1.0, ta, tb, 0.0, twin_ref)
    for way, run in runs.items():
        run()
        error = relative_error(c[way], twin_ref if way == "twin" else ref)
        if not error <= tolerance(shape.k):
            raise SystemExit(f"{name} on {shape.label()}, {way}: relative error {error:.3e}")
    return runs


def _case(cp: Any, shape: Shape, name: str, rounds: int) -> dict[str, Any]:
    twin = twin_of(shape)
    runs = _ways(cp, shape, twin, name)
    flush = cp.empty(L2_FLUSH_BYTES // 4, dtype=cp.float32)
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    host: dict[str, list[float]] = {way: [] for way in WAYS}
    for _ in range(rounds):
        for way, run in runs.items():
            # Queued without waiting, as tuner.gpu.measure.time_launches does: the host enqueues a
            # padded launch's copies and kernel while the GPU flushes L2, so host time is not
            # counted unless the host falls behind. The host's own time per launch (the flush
            # and event records included) is kept beside it.
            events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(LAUNCHES)]
            began = time.perf_counter()
            for start, end in events:
                flush.fill(0)
                start.record()
                run()
                end.record()
            host[way].append((time.perf_counter() - began) / LAUNCHES * 1e6)
            events[-1][1].synchronize()
            times[way] += [cp.cuda.get_elapsed_time(start, end) for start, end in events]
    row: dict[str, Any] = {"shape": shape.label(), "twin": twin.label(), "config": name}
    for way in WAYS:
        ms = statistics.median(times[way])
        row[f"{way}_ms"] = ms
        row[f"{way}_tflops"] = (twin if way == "twin" else shape).tflops(ms)
        row[f"{way}_host_us"] = statistics.median(host[way])
    print(
        f"{shape.label()} {name}: "
        + ", ".join(f"{way} {row[f'{way}_tflops']:.1f}" for way in WAYS)
        + " TFLOP/s"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument(
        "--case", action="append", required=True, help="MxNxK:config (unpadded name)"
    )
    parser.add_argument(
        "--profile",
        choices=WAYS,
        help="for a profiler: after the checks, launch only this way, twice, and time nothing",
    )
    args = parser.parse_args()
    if args.profile is None and args.out is None:
        parser.error("--out is needed unless --profile is given")
    import cupy as cp

    if args.profile is not None:
        for case in args.case:
            shape_text, _, name = case.partition(":")
            shape = parse_shape(shape_text)
            run = _ways(cp, shape, twin_of(shape), name)[args.profile]
            run()
            run()
        cp.cuda.Device().synchronize()
        return
    what = "an odd shape's time, each way with the same kernel (benchmarks/odd_loss.py)"
    time_cases(cp, args.case, _case, args.rounds, args.out, what)


def time_cases(
    cp: Any,
    cases: list[str],
    time_case: Callable[[Any, Shape, str, int], dict[str, Any]],
    rounds: int,
    out: Path,
    what: str,
) -> None:
    """``time_case`` on each ``MxNxK:config`` of ``cases``, its rows written to ``out`` with the
    device's provenance."""
    rows = []
    for case in cases:
        shape_text, _, name = case.partition(":")
        rows.append(time_case(cp, parse_shape(shape_text), name, rounds))
    doc = {
        "what": what,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "provenance": device_provenance(live_device()),
        "rounds": rounds,
        "launches_per_way_per_round": LAUNCHES,
        "rows": rows,
    }
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
