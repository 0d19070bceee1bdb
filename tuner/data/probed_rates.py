"""A GPU's probed rates kept beside the kernel cache, so that a later command (with another
database, or none yet) does not probe the same device again.

One small JSON file per device and software stack: the key names the GPU (name, architecture,
SM count) and what could change its rates (driver, CUDA runtime, tuner version), so a new driver
or tuner probes afresh. The database stays the record of a tune (``device_rates`` table): this
file only spares the probe. A file that cannot be read is a miss, never an error: the probe runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tuner import __version__
from tuner.kernels.compile import cache_root
from tuner.kernels.resources import DeviceLimits
from tuner.model.rates import DeviceRates

VERSION = 1
FIELDS = ("ffma_tflops", "fp64_tensor_tflops", "dram_tb_s", "launch_us")


def rates_key(device: DeviceLimits, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """What a kept probe must match: the GPU and the software that ran the probe."""
    return {
        "device": device.name,
        "arch": device.arch,
        "sm_count": device.sm_count,
        "driver": provenance.get("driver"),
        "cuda_runtime": provenance.get("cuda_runtime"),
        "tuner": __version__,
    }


def rates_path(key: Mapping[str, Any], folder: Path | None = None) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return (cache_root() if folder is None else folder) / "rates" / f"{digest}.json"


def read_probed(
    device: DeviceLimits, provenance: Mapping[str, Any], folder: Path | None = None
) -> DeviceRates | None:
    """The rates kept for this GPU and stack, or None (none kept, or a file that does not
    read as one: a torn write, another version's format)."""
    key = rates_key(device, provenance)
    try:
        document = json.loads(rates_path(key, folder).read_text(encoding="utf-8"))
        if document.get("version") != VERSION or document.get("key") != key:
            return None
        rates = document["rates"]
        ffma, fp64, dram, launch = (float(rates[name]) for name in FIELDS)
        return DeviceRates(ffma, fp64, dram, launch, str(rates["source"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_probed(
    device: DeviceLimits,
    provenance: Mapping[str, Any],
    rates: DeviceRates,
    folder: Path | None = None,
) -> None:
    """Keep ``rates`` for this GPU and stack (written whole or not at all); a folder that
    cannot be written only means the next command probes again."""
    key = rates_key(device, provenance)
    path = rates_path(key, folder)
    document = {
        "version": VERSION,
        "key": key,
        "rates": {**{name: getattr(rates, name) for name in FIELDS}, "source": rates.source},
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1)
        os.replace(tmp, path)
    except OSError:
        return
