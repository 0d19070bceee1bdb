"""An answer: the config to run for a shape on a device, where it came from and what it
measured, and its JSON form (the body of ``POST /v1/configs/best``).

The rules that choose it are :mod:`tuner.answers.best`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from tuner.answers.device_kind import DeviceSpec
from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.core.config import Config
from tuner.core.dims import Dims
from tuner.core.shape import STORED_OUT_DTYPE, Shape
from tuner.kernels.families import parse_config
from tuner.kernels.launch_recipe import LaunchRecipe, launch_recipe
from tuner.kernels.render import KernelSource, Launch, render

Source = Literal["exact", "nearest", "far", "default"]
Match = Literal["same_device", "same_kind", "any_device"]

# Past this log-space distance a tuned shape's config and numbers do not answer for another: about
# a factor 20 in one dimension, or 5.6 in each of the three. The committed suite's neighbours
# (16 -> 128 rows, 1024^3 -> 2048^3, 4096^3 -> 4096x4096x11008) are all nearer than this;
# 3x5x7 -> 1000^3 (9.3) and 256x256x65536 -> 1024^3 (4.6) are farther.
FAR_DISTANCE = 3.0

# How an answer's note says its config was pinned to another type of C, and that slow-math
# configs were skipped (tuner.answers.answer_cache reads them to know what can change it).
REPINNED_NOTE = "nothing tuned writing"
SKIPPED_NOTE = "math skipped"


def confidence(distance: float | None) -> float:
    """How much a tuned shape at ``distance`` says about the asked one: 1 at the shape itself,
    0 at :data:`FAR_DISTANCE` and beyond (and for no tuned shape at all, ``None``)."""
    if distance is None:
        return 0.0
    return round(max(0.0, 1.0 - distance / FAR_DISTANCE), 3)


@dataclass(frozen=True)
class DeviceInfo:
    """A device as stored: results were measured on it."""

    name: str
    arch: str
    sm_count: int

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arch": self.arch, "sm_count": self.sm_count}


def _doc(text: str, **more: Any) -> dict[str, Any]:
    """A field's description (what the API's schema shows), and other facts about its values."""
    return {"doc": text, **more}


@dataclass(frozen=True)
class Answer:
    """The config to run for (m, n, k) on ``device``, where it came from, what it measured.

    The one definition of an answer's fields: :meth:`as_json` and :meth:`from_json` follow them
    in order, and the API's response model (``api.schemas.BestResponse``) is built from them,
    with the descriptions in their metadata.
    """

    m: int
    n: int
    k: int
    dtype: str
    layout: str
    family: str
    params: Mapping[str, int]
    name: str = field(metadata=_doc("procedural config name, its identity everywhere"))
    source: Source = field(
        metadata=_doc(
            "exact: tuned for this shape; nearest: tuned for the closest tuned shape "
            f"(within distance {FAR_DISTANCE:g}); far: the closest tuned shape is farther, so "
            "the default rule's config and no numbers; default: nothing tuned"
        )
    )
    # What the config measured, and where: None for a default.
    distance: float | None = field(
        default=None,
        metadata=_doc(
            "log-space Euclidean distance sqrt(sum (ln a - ln b)^2) over (m, n, k) from the "
            "requested shape to measured_on (for far: to the nearest tuned shape); 0 for "
            "exact, null for default"
        ),
    )
    confidence: float = field(
        default=0.0,
        metadata=_doc(
            "how much the measured shape says about this one: 1 for exact, "
            f"1 - distance / {FAR_DISTANCE:g} for nearest, 0 for far and default",
            bounds=(0.0, 1.0),
        ),
    )
    measured_on: Dims | None = field(
        default=None,
        metadata=_doc(
            "the shape ms/tflops/cublas_tflops/ratio were measured on (for nearest: not the "
            "requested one)"
        ),
    )
    ms: float | None = None
    tflops: float | None = None
    cublas_tflops: float | None = None
    ratio: float | None = field(
        default=None, metadata=_doc("cuBLAS time / this config's time; > 1 is faster")
    )
    # Asked about; arch and SM count filled in where stored.
    device: DeviceSpec | None = field(
        default=None,
        metadata=_doc("the device the answer is for; null when the request named none"),
    )
    measured_on_device: DeviceInfo | None = field(
        default=None,
        metadata=_doc(
            "the device ms/tflops/cublas_tflops/ratio were measured on (not always the one "
            "asked about: see device_match); null for default"
        ),
    )
    device_match: Match | None = field(
        default=None,
        metadata=_doc(
            "whose data answered: the device's own, a device of the same kind (same "
            "architecture and SM count), or any device's (no device named); null for default"
        ),
    )
    provenance: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    # The config's accuracy class (``tuner.core.accuracy``): the asked floor's or a more exact one.
    accuracy: str = field(
        default=DEFAULT_ACCURACY,
        metadata=_doc("the config's accuracy class: the asked one or a more exact one"),
    )
    # The type of C the config writes (``tuner.core.shape``); an older server sent none: its
    # configs all wrote float32.
    out_dtype: str = field(
        default=STORED_OUT_DTYPE,
        metadata=_doc(
            "the type of C the config writes: the asked out_dtype (float32 for float32 inputs; "
            "for half inputs the input type unless the request named another)"
        ),
    )

    @property
    def config(self) -> Config:
        return parse_config(self.name)

    def vendor_algorithm(self) -> list[str] | None:
        """The cuBLASLt algorithm (eight hex words) a vendor answer (family ``cublaslt``) runs:
        the one its measurement ran, when that was on this very shape (an exact answer), so the
        call replays it; None otherwise, and for a kernel of ours (a nearest answer's config
        asks the library's heuristic for its rank on the asked shape)."""
        vendor = self.provenance.get("vendor")
        if self.source != "exact" or not isinstance(vendor, Mapping):
            return None
        algo = vendor.get("algo")
        return list(algo) if isinstance(algo, list) else None

    def kernel(self) -> KernelSource:
        """The rendered CUDA source of the config (a vendor config has none: InputError)."""
        return kernel_source(self.name)

    def launch(self) -> Launch:
        """Grid, block and dynamic shared memory for the asked shape; a persistent grid
        (``streamk``) is sized for the SMs of the device the config was measured on (the
        device asked about has as many: it is that device or one of its kind)."""
        device = self.measured_on_device or self.device
        sm_count = device.sm_count if device is not None else None
        return self.kernel().launch(Shape(self.m, self.n, self.k), sm_count)

    def recipe(self) -> LaunchRecipe:
        """How to compile and launch the config for the asked shape, dtype and layout
        (``tuner.kernels.launch_recipe``): for the architecture and SM count of the device the
        config was measured on, else of the device asked about (the same kind of chip)."""
        device = self.measured_on_device or self.device
        arch = device.arch if device is not None else None
        sm_count = device.sm_count if device is not None else None
        shape = Shape(self.m, self.n, self.k, self.dtype, self.layout, self.out_dtype)
        return launch_recipe(self.kernel(), shape, arch, sm_count)

    def as_json(self) -> dict[str, Any]:
        """The answer as JSON values, field by field: the body of ``POST /v1/configs/best``."""
        return {f.name: _to_json(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Answer:
        """Read :meth:`as_json`'s form back (what a client gets over HTTP); other keys, such
        as ``kernel``, are ignored, and a field an older server did not send (``accuracy``)
        keeps its default."""
        hints = answer_types()
        return cls(
            **{
                f.name: _from_json(hints[f.name], data[f.name])
                for f in fields(cls)
                if f.name in data
            }
        )


@lru_cache(maxsize=1)
def answer_types() -> dict[str, Any]:
    """The type of each :class:`Answer` field, resolved (the annotations are strings)."""
    return get_type_hints(Answer)


def held_type(hint: Any) -> tuple[Any, bool]:
    """The type a field holds when it holds a value, and whether it may be None."""
    arms = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
    held = [arm for arm in arms if arm is not type(None)]
    return held[0], len(held) < len(arms)


def _to_json(value: Any) -> Any:
    """A field's JSON value: dimensions as {m, n, k}, devices by their fields, mappings as
    fresh dicts, the rest as they are."""
    if isinstance(value, tuple):
        return dict(zip("mnk", value, strict=True))
    if isinstance(value, DeviceSpec | DeviceInfo):
        return value.as_dict()
    if isinstance(value, Mapping):
        return dict(value)
    return value


def _from_json(hint: Any, value: Any) -> Any:
    """The inverse of :func:`_to_json` for a field of type ``hint``."""
    if value is None:
        return None
    held, _ = held_type(hint)
    if held in (DeviceSpec, DeviceInfo):
        return held(**value)
    if held == Dims:
        return (value["m"], value["n"], value["k"])
    if get_origin(held) is Mapping:
        return dict(value)
    return value


@lru_cache(maxsize=256)
def kernel_source(name: str) -> KernelSource:
    """Rendered CUDA source of a config, cached by its procedural name."""
    return render(parse_config(name))
