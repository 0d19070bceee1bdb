"""Every figure of the cost model pinned: a spread of shapes, families, devices and rates whose
estimates must not move when the model's code is reorganised. The figures are those of the
candidates a space builds (``Space.built_candidates``, padded twins by ``Candidate.padded``), as
a study estimates them.

``estimates_pinned.json`` holds what :func:`figures` returned when the file was written; this
test computes them again and compares each one. A change that is meant to move an estimate
rewrites the file (``python tests/tuner/model/test_estimates_pinned.py``) and says why in its
commit.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import astuple
from pathlib import Path

import pytest

from tuner.core.shape import Shape
from tuner.kernels.candidate import Candidate
from tuner.kernels.families import KERNEL_FAMILIES, get_family, parse_config
from tuner.kernels.operand_padding import padding_refusal
from tuner.kernels.resources import DeviceLimits, table_device
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate, padding_copies_ms
from tuner.model.rates import DeviceRates
from tuner.search.screening_mode import padded_families

PINNED = Path(__file__).with_name("estimates_pinned.json")
PER_FAMILY = 4  # configs per family and shape, spread over its candidates

H100, A100, RTX = table_device("sm_90"), table_device("sm_80"), table_device("sm_86")
PROBED = DeviceRates(58.0, 55.0, 3.1, 2.5, "probed on a made-up H100")

# Half inputs writing float32 C: what the file was written with, before C had a type.
SHAPES = (
    Shape(4096, 4096, 4096),
    Shape(1000, 1000, 1000),
    Shape(128, 4096, 4096),
    Shape(16, 4096, 4096),
    Shape(256, 256, 65536),
    Shape(8192, 8192, 256),
    Shape(2053, 3001, 1999),
    Shape(33, 4096, 4093),
    Shape(1, 1, 1),
    Shape(2048, 2047, 2048, "float32", "NT"),
    Shape(4096, 4096, 4096, "float16", "NT", "float32"),
    Shape(1000, 1001, 999, "bfloat16", "NN", "float32"),
    Shape(64, 61, 96, "float16", "TN", "float32"),
    Shape(3000, 5000, 700, "bfloat16", "TT", "float32"),
)
# (device, rates) pairs and the shapes each is tried on: the table H100 on all of them.
SETTINGS: tuple[tuple[str, DeviceLimits, DeviceRates | None, tuple[Shape, ...]], ...] = (
    ("h100", H100, None, SHAPES),
    ("h100-probed", H100, PROBED, SHAPES[1::3]),
    ("a100", A100, None, SHAPES[::4]),
    ("sm86", RTX, None, SHAPES[2::5]),
)


def _spread(items: list[Candidate], count: int) -> list[Candidate]:
    """``count`` items from first to last, evenly apart (all of them when there are fewer)."""
    if len(items) <= count:
        return items
    return [items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)]


def figures() -> Iterator[tuple[str, list[float] | list[str]]]:
    """Every pinned figure by a key naming what it is of."""
    for label, device, rates, shapes in SETTINGS:
        for shape in shapes:
            # Keyed as when the file was written, before labels named a float32 C of half inputs.
            where = f"{label}|{shape.label().removesuffix(' -> float32')}"
            everyone: list[Candidate] = []
            for name, family in KERNEL_FAMILIES.items():
                if family.unsupported(shape) is not None:
                    continue
                candidates = Space(name, shape, device).built_candidates()
                everyone += candidates
                for candidate in _spread(candidates, PER_FAMILY):
                    ones = [candidate]
                    ragged = padding_refusal(shape) is None
                    if ragged and family.leading_dims and not family.rewrites_operands:
                        ones.append(candidate.padded(shape))
                    for one in ones:
                        found = estimate(one, shape, device, rates)
                        yield f"{where}|{one.name}", [float(x) for x in astuple(found)]
            if padding_refusal(shape) is None:
                for leading in (False, True):
                    copies = padding_copies_ms(shape, leading, device, rates)
                    yield f"{where}|copies|{leading}", [copies]
                padded = padded_families(everyone, shape, device, rates)
                yield f"{where}|screened padded", sorted(padded)


def test_every_estimate_is_as_pinned() -> None:
    pinned: dict[str, list[float] | list[str]] = json.loads(PINNED.read_text())
    now = dict(figures())
    assert now.keys() == pinned.keys()
    moved = [key for key, values in now.items() if values != pinned[key]]
    assert not moved, f"{len(moved)} of {len(now)} figures moved, e.g. {moved[:3]}"


@pytest.mark.parametrize("family", ["warptile", "dmma", "hmma"])
def test_the_pinned_file_covers_each_kind_of_model(family: str) -> None:
    """The spread reaches every tile model, the persistent and streaming schedules, and padded
    configs (a file written from an empty enumeration would pin nothing)."""
    keys = json.loads(PINNED.read_text()).keys()
    names = [key.split("|")[2] for key in keys]
    assert any(n.startswith(f"{family}_") for n in names)
    kinds = {get_family(parse_config(n).family).cost.math for n in names if "_" in n}
    assert kinds == {"ffma", "fp64_tensor", "half_tensor", "half_wgmma", "half_tma"}
    assert any(n.startswith("streamk_") for n in names)
    assert any(n.startswith("skinny_") for n in names)
    assert any(n.endswith(("_pad4", "_pad8")) for n in names)


if __name__ == "__main__":
    lines = (f"{json.dumps(key)}: {json.dumps(values)}" for key, values in figures())
    PINNED.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    sys.exit(0)
