"""Time the copies a padded launch makes (GPU only): ``cudaMemcpy2DAsync`` against the copy
kernel of ``tuner.gpu.pad_copy``, on the operands of odd shapes, alternating, CUDA events, medians.

    python benchmarks/pad_copy.py --out pad-copy.json [--repeats 30]

Each case copies one operand as a padded launch would: A (M x K) or B (K x N) into a buffer
whose rows are whole 16-byte vectors, a view 4 bytes off 16, or a padded C back into rows of
odd length. The copies are checked equal to the source first; L2 is flushed (a 256 MiB fill)
before each timed copy. Bandwidth counts the bytes read plus the bytes written.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
from pathlib import Path

from tuner.gpu.device import live_device
from tuner.gpu.pad_copy import copy_rows
from tuner.gpu.worker import device_provenance
from tuner.kernels.operand_padding import Copy2D

L2_FLUSH_BYTES = 256 << 20

# (what, rows, cols, dtype, source pitch, destination pitch, source offset in elements)
CASES = [
    ("A of 4097^3", 4097, 4097, "float32", 4097, 4100, 0),
    ("A of 2047^3", 2047, 2047, "float32", 2047, 2048, 0),
    ("A of 4097x4097x255", 4097, 255, "float32", 255, 256, 0),
    ("B of 4097x4097x255", 255, 4097, "float32", 4097, 4100, 0),
    ("A of 33x4096x4093", 33, 4093, "float32", 4093, 4096, 0),
    ("B of 2053x3001x1999", 1999, 3001, "float32", 3001, 3004, 0),
    ("4096^2 view 4 bytes off", 4096, 4096, "float32", 4096, 4096, 1),
    ("C of 4097^3 back", 4097, 4097, "float32", 4100, 4097, 0),
    ("A of 4097^3 bf16", 4097, 4097, "bfloat16", 4097, 4104, 0),
    ("B of 1009x1013x1019 bf16", 1019, 1013, "bfloat16", 1013, 1016, 0),
]


def _case(
    what: str, rows: int, cols: int, dtype: str, sp: int, dp: int, off: int, repeats: int
) -> dict[str, object]:
    import cupy

    element = 4 if dtype == "float32" else 2
    store = cupy.float32 if dtype == "float32" else cupy.uint16
    rng = cupy.random.default_rng(7)
    src_all = rng.integers(0, 60000, size=rows * sp + off + 8, dtype=cupy.int64).astype(store)
    src = src_all[off : off + rows * sp]
    dst = cupy.zeros(rows * dp + 8, dtype=store)
    copy = Copy2D(rows, cols * element, sp * element, dp * element)
    runtime = cupy.cuda.runtime
    stream = cupy.cuda.get_current_stream()

    def memcpy2d() -> None:
        runtime.memcpy2DAsync(
            int(dst.data.ptr),
            copy.dst_pitch,
            int(src.data.ptr),
            copy.src_pitch,
            copy.width,
            copy.rows,
            runtime.memcpyDeviceToDevice,
            stream.ptr,
        )

    def kernel() -> None:
        copy_rows(dst, src, copy, element)

    ways = {"memcpy2d": memcpy2d, "kernel": kernel}
    expected = src.reshape(rows, sp)[:, :cols]
    for name, way in ways.items():
        dst.fill(0)
        way()
        got = dst[: rows * dp].reshape(rows, dp)[:, :cols]
        if not bool((got == expected).all()):
            raise SystemExit(f"{what}: {name} copied wrong values")
    times: dict[str, list[float]] = {name: [] for name in ways}
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    flush = cupy.empty(L2_FLUSH_BYTES // 4, dtype=cupy.float32)
    for way in ways.values():  # warm-up
        way()
    for _ in range(repeats):
        for name, way in ways.items():
            flush.fill(0)  # neither copy finds its source in L2
            start.record()
            way()
            end.record()
            end.synchronize()
            times[name].append(cupy.cuda.get_elapsed_time(start, end) * 1e3)
    moved = 2 * rows * cols * element
    row: dict[str, object] = {
        "what": what,
        "rows": rows,
        "cols": cols,
        "dtype": dtype,
        "src_pitch": sp,
        "dst_pitch": dp,
        "src_offset_elements": off,
        "bytes_moved": moved,
    }
    for name, ts in times.items():
        us = statistics.median(ts)
        row[f"{name}_us"] = us
        row[f"{name}_tb_per_s"] = moved / us / 1e6
    print(
        f"{what}: memcpy2d {row['memcpy2d_us']:.1f} us ({row['memcpy2d_tb_per_s']:.2f} TB/s), "
        f"kernel {row['kernel_us']:.1f} us ({row['kernel_tb_per_s']:.2f} TB/s)"
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    rows = [_case(*case, repeats=args.repeats) for case in CASES]
    doc = {
        "what": "padded-operand copies: cudaMemcpy2DAsync against tuner.gpu.pad_copy's kernel",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "provenance": device_provenance(live_device()),
        "repeats": args.repeats,
        "rows": rows,
    }
    args.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
