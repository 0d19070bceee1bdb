"""A tuning database's best configs of one GPU as a suite file the server preloads.

``gemmtune results --format suite --device NAME --out FILE`` writes it: one ``ok`` row per tuned
problem (shape, dtype, layout, type of C and accuracy class) with the best config, its time and
cuBLAS's as the study's finalists measured them, and the file's provenance taken from those
measurements (device, SM count, compute capability, driver and library versions; a field the
measurements disagree on keeps its most common value, and the file lists every value seen under
``provenance.seen``). Named ``<device>-<name>-suite.json`` in the results folder, it is preloaded
like the ``gemmtune bench`` files (:mod:`api.preload`), so a fresh server answers those problems
``exact``. This is how the shipped grid of tuned shapes is made from the workers' database.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from tuner.core.errors import InputError
from tuner.data import suite_document
from tuner.kernels.resources import arch_number
from tuner.run.bench import geomean

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

# The versions a file keeps from its measurements' provenance (the device row gives the rest).
VERSION_FIELDS = ("driver", "cuda_runtime", "nvrtc", "cupy", "tuner", "python")
WHAT = (
    "gemmtune results --format suite: the best config of every problem tuned on this GPU, "
    "as the study's finalists measured it beside cuBLAS (ratio = cuBLAS time / our time)"
)


def shipped_bests_document(session: Session, device: str, suite: str) -> dict[str, Any]:
    """The suite document of ``device``'s best configs; ``suite`` names the shape list tuned.

    Raises:
        InputError: the database knows no trusted GPU of that name, knows several (name, arch,
            SM count) of it, or holds no best config for it.
    """
    import storage

    known = storage.list_devices(session, trusted_only=True)
    mine = [d for d in known if d.name == device]
    if not mine:
        names = ", ".join(sorted({d.name for d in known})) or "none"
        raise InputError(
            f"`--device` {device!r} is not a trusted GPU of the database (known: {names})"
        )
    if len(mine) > 1:
        kinds = ", ".join(f"{d.arch} with {d.sm_count} SMs" for d in mine)
        raise InputError(f"`--device` {device!r} names several GPUs ({kinds}): one file is one GPU")
    bests = storage.best_configs(session, device)
    if not bests:
        raise InputError(f"nothing is tuned on {device!r}: no best config to write")
    provenance = _provenance([b.measurement.provenance or {} for b in bests])
    provenance["sm_count"] = mine[0].sm_count  # the device row is the authority on these two
    provenance["compute_capability"] = _capability(mine[0].arch)
    rows = [_row(b) for b in bests]
    return suite_document(
        device=device,
        provenance=provenance,
        suite=suite,
        method={"source": "tuning database", "rows": "one per tuned problem"},
        roofline=None,
        summary={
            "problems": len(rows),
            "geomean_ratio": geomean(r["ratio"] for r in rows if r["ratio"]),
            "first_measured": min(b.measurement.created_at for b in bests).isoformat(),
            "last_measured": max(b.measurement.created_at for b in bests).isoformat(),
        },
        rows=rows,
        what=WHAT,
    )


def _row(best: Any) -> dict[str, Any]:
    import storage

    m = best.measurement
    return {
        "class": "tuned",
        **storage.shape_values(best.shape),
        "accuracy": best.accuracy,
        "status": "ok",
        "config": m.config_name,
        "ms": m.ms,
        "tflops": m.tflops,
        "cublas_ms": m.cublas_ms,
        "cublas_tflops": m.cublas_tflops,
        "ratio": m.ratio,
        "rel_error": m.rel_error,
    }


def _provenance(provenances: list[dict[str, Any]]) -> dict[str, Any]:
    """Each version field's most common value over the measurements, and every value seen
    where they differ (a database tuned across a driver update says so)."""
    chosen: dict[str, Any] = {}
    seen: dict[str, list[Any]] = {}
    for field in ("device", *VERSION_FIELDS):
        values = Counter(str(p[field]) for p in provenances if p.get(field) is not None)
        if not values:
            continue
        chosen[field] = values.most_common(1)[0][0]
        if len(values) > 1:
            seen[field] = sorted(values)
    if seen:
        chosen["seen"] = seen
    return chosen


def _capability(arch: str) -> str:
    """``sm_90`` -> ``9.0``, ``sm_90a`` -> ``9.0`` (what :func:`tuner.data.measured_on` reads)."""
    number = arch_number(arch)
    if number < 10:
        raise InputError(f"the device's arch {arch!r} is not of the form sm_XY")
    return f"{number // 10}.{number % 10}"
