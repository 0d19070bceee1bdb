"""Stored best configs as the answer index holds them, built from a config's name."""

from __future__ import annotations

from tuner.answers.answer import DeviceInfo
from tuner.answers.best import Tuned
from tuner.kernels.families import parse_config

H100 = DeviceInfo("NVIDIA H100 80GB HBM3", "sm_90", 132)


def half_nt_entry(
    name: str,
    shape: tuple[int, int, int],
    ms: float,
    out_dtype: str,
    device: DeviceInfo = H100,
    best_id: int | None = None,
) -> Tuned:
    """``name`` stored as the best BF16 NT config of ``shape`` on ``device``, at ``ms``."""
    config = parse_config(name)
    m, n, k = shape
    return Tuned(
        best_id=int(ms * 1000) if best_id is None else best_id,
        device=device,
        m=m,
        n=n,
        k=k,
        dtype="bfloat16",
        layout="NT",
        family=config.family,
        config_name=config.name,
        params=config.as_dict(),
        ms=ms,
        tflops=None,
        cublas_tflops=None,
        ratio=1.0,
        provenance={},
        out_dtype=out_dtype,
    )
