"""Why the split-K kernels get one loaded module per stream (GPU only).

    python benchmarks/two_streams.py

Runs one ``streamk`` config on 1000^3 (every output tile a stream-K tile, its pieces meeting in C
through the module's ticket counters) 50 times on each of two streams, the launches alternating
with no wait between them, first with a module per stream (what ``tuner.matmul`` does), then
with both streams on one module. Prints how many of the 100 results miss cuBLAS's tolerance.
Mixed tickets can also leave a block waiting for ever: run it under ``timeout``.
"""

from __future__ import annotations

from typing import Any

from tuner.core.shape import Shape
from tuner.gpu.loaded import compiled
from tuner.gpu.measure import launch, random_operands, relative_error, tolerance

CONFIG = "streamk_bm128_bn128_bk16_wm32_wn64_wni2_tm8_tn4_t256_smb2_stg0"
SHAPE = Shape(1000, 1000, 1000)
LAUNCHES = 50


def relative_errors(
    kernels: list[Any], streams: list[Any], launches: int = LAUNCHES
) -> list[float]:
    """Launch ``kernels[s]`` (loaded kernel, source) on ``streams[s]``, alternating, ``launches``
    times each with no wait between them; the relative error of every result against cuBLAS."""
    import cupy

    operands = [random_operands(SHAPE, seed=s)[:2] for s in range(len(streams))]
    refs = [cupy.matmul(a, b) for a, b in operands]
    outs = [
        [cupy.empty((SHAPE.m, SHAPE.n), dtype=cupy.float32) for _ in range(launches)]
        for _ in streams
    ]
    cupy.cuda.Device().synchronize()
    for i in range(launches):
        for s, stream in enumerate(streams):
            with stream:
                kernel, source = kernels[s]
                a, b = operands[s]
                launch(kernel, source, SHAPE, 1.0, a, b, 0.0, outs[s][i])
    cupy.cuda.Device().synchronize()
    return [relative_error(out, refs[s]) for s in range(len(streams)) for out in outs[s]]


def main() -> None:
    import cupy

    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
    layouts = {
        "one module per stream": [("two_streams", s.ptr) for s in streams],
        "one module for both streams": [("two_streams", "shared")] * 2,
    }
    for label, sites in layouts.items():
        errors = relative_errors([compiled(CONFIG, site) for site in sites], streams)
        wrong = sum(e > tolerance(SHAPE.k) for e in errors)
        print(
            f"{label}: {wrong} of {len(errors)} results wrong, worst relative error "
            f"{max(errors):.3g}"
        )


if __name__ == "__main__":
    main()
