"""Small builders of storage inputs shared by the storage tests."""

from __future__ import annotations

from typing import Any

from storage import DeviceIn, MeasurementIn, ShapeIn

H100 = DeviceIn(name="NVIDIA H100 80GB HBM3", arch="sm_90", sm_count=132)
A100 = DeviceIn(name="NVIDIA A100-SXM4-80GB", arch="sm_80", sm_count=108)
SQUARE = ShapeIn(4096, 4096, 4096)


def measurement(ms: float | None = 1.0, status: str = "ok", **overrides: Any) -> MeasurementIn:
    """A plausible warptile measurement; ``overrides`` replace any field."""
    fields: dict[str, Any] = {
        "family": "warptile",
        "config_name": "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128",
        "params": {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "TM": 8, "TN": 4},
        "status": status,
        "ms": ms,
        "tflops": None if ms is None else 2 * 4096**3 / (ms * 1e-3) / 1e12,
        "cublas_ms": 2.0,
        "registers": 128,
        "smem_bytes": 16384,
        "occupancy": 0.5,
        "provenance": {"device": H100.name, "cc": "9.0", "cuda_runtime": "12.8", "cupy": "13.4"},
    }
    if status != "ok":
        fields.setdefault("reason", f"{status}: synthetic failure")
    fields.update(overrides)
    return MeasurementIn(**fields)
