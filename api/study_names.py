"""Readable titles for studies, from what their rows were measured on.

A study's key says everything that makes it one study, which makes it long and hard to read as a
title. The title puts the shape first, then the device and what was searched (the families its
screening trials measured) or, for its final phase, that these are its finalists re-measured; a
preloaded sweep table's study (``<file stem>-MxNxK``) is titled by its table. The parts come from
the stored rows (device, shape, dtype, layout, family, phase); of the key, only a sweep table's
name is read, as what is left once the stored shape is taken off its end.
"""

from __future__ import annotations

from collections.abc import Iterable

from storage import StudyShape, StudySummary
from tuner.core.phases import Phase
from tuner.kernels.families import FAMILIES

TIMES = "\u00d7"
REPLAYED = "replayed, not measured"
_FAMILY_ORDER = {name: index for index, name in enumerate(FAMILIES)}


def study_title(
    name: str,
    phase: Phase,
    device: str | None,
    shape: StudyShape | None,
    families: Iterable[str],
    replayed: bool = False,
) -> str:
    """``4096x4096x4096 on NVIDIA H100 80GB HBM3 · warptile, pipelined`` (with multiplication
    signs) for a study of one device and shape (``4096x4096x4096 bfloat16 NT on ...`` for inputs
    other than float32 NN, ``... -> float32`` where C's type is not the input type;
    ``... · finalists re-measured`` for its final phase), ``4096x4096x4096 · sweep table
    h100-sweep`` for a preloaded sweep table; else the key.
    A study replayed from tables (``replayed``) says so at the end of any of these, so its
    times are never read as the device's."""
    title = _title(name, phase, device, shape, families)
    return f"{title} · {REPLAYED}" if replayed else title


def _title(
    name: str,
    phase: Phase,
    device: str | None,
    shape: StudyShape | None,
    families: Iterable[str],
) -> str:
    if shape is None:
        return name
    dims = TIMES.join(str(d) for d in (shape.m, shape.n, shape.k))
    table = _sweep_table(name, shape)
    if table is not None:
        return f"{dims} · sweep table {table}"
    if device is None:
        return name
    if (shape.dtype, shape.layout) != ("float32", "NN"):
        dims += f" {shape.dtype} {shape.layout}"
    if shape.out_dtype != shape.dtype:
        dims += f" -> {shape.out_dtype}"
    if phase == Phase.FINAL:
        return f"{dims} on {device} · finalists re-measured"
    ordered = sorted(set(families), key=lambda f: (_FAMILY_ORDER.get(f, len(_FAMILY_ORDER)), f))
    return f"{dims} on {device} · {', '.join(ordered)}"


def _sweep_table(name: str, shape: StudyShape) -> str | None:
    """The sweep table a preloaded study came from (``api.preload`` keys its studies
    ``<file stem>-MxNxK``), or None for any other study."""
    suffix = f"-{shape.m}x{shape.n}x{shape.k}"
    if "|" in name or not name.endswith(suffix) or name == suffix:
        return None
    return name.removesuffix(suffix)


def summary_title(summary: StudySummary) -> str:
    """:func:`study_title` of a :class:`storage.StudySummary` (the study lists' titles)."""
    return study_title(
        summary.name,
        summary.phase,
        summary.device,
        summary.shape,
        summary.families,
        summary.replayed,
    )
