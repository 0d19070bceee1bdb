"""Config -> CUDA source, through the family's Jinja2 template.

Templates see only integers that the family validated and derived (``Family.template_values``)
plus the kernel's name; an undefined variable fails loudly (StrictUndefined). The kernel contract
every template honours is written in ``docs/kernels.md``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jinja2

from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.families import get_family, persistent_blocks
from tuner.kernels.families.tma_ws import tiles_blocks


def templates_dir() -> Path:
    """The template folder: inside the installed package, else beside it in a source checkout."""
    package = Path(__file__).resolve().parents[1]  # tuner/
    for candidate in (package / "_templates", package.parent / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no kernel templates found in or beside {package}")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # CUDA source, not HTML
    )


@dataclass(frozen=True)
class Launch:
    """How to launch a kernel for one shape."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem_bytes: int


@dataclass(frozen=True)
class KernelSource:
    """Rendered CUDA source of one config, and how to launch it."""

    config: Config
    code: str
    threads: int
    dynamic_smem_bytes: int

    @property
    def entry(self) -> str:
        """The ``extern "C"`` kernel symbol: the config's procedural name without its operand
        mode (a padded config runs the unpadded one's kernel, and shares its cubin)."""
        return self.config.kernel_name

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.code.encode()).hexdigest()

    @property
    def leading_dims(self) -> bool:
        """Whether the kernel takes lda, ldb and ldc after its matrices (``Family``)."""
        return get_family(self.config.family).leading_dims

    @property
    def pads_c_rows(self) -> bool:
        """Whether a padded launch rounds up C's rows too (``Family``)."""
        return get_family(self.config.family).pads_c_rows

    @property
    def arch_specific(self) -> bool:
        """Whether it compiles for the architecture-specific target (``sm_90a``: ``Family``)."""
        return get_family(self.config.family).arch_specific

    @property
    def persistent(self) -> bool:
        """Whether the grid is sized by the device (SMBLOCKS per SM, or one block per SM walking
        whole tiles) rather than the shape alone."""
        return get_family(self.config.family).cost.schedule in ("persistent", "tiles")

    @property
    def tensor_maps(self) -> bool:
        """Whether the kernel reads A and B through TMA tensor maps (``Family``)."""
        return get_family(self.config.family).tensor_maps

    def launch(self, shape: Shape, sm_count: int | None = None) -> Launch:
        """Grid ``(ceil(N/BN), ceil(M/BM), SPLITK)`` (z is 1 for families that do not split K),
        or for a persistent grid (``streamk``) SMBLOCKS blocks per SM of the device, or for one
        of whole tiles (``tma_ws``) one block per SM but at most one per output tile; the
        device's ``sm_count`` must then be given. ``THREADS`` threads, and the dynamic shared
        memory the footprint states."""
        params = self.config.as_dict()
        if self.persistent:
            if sm_count is None or sm_count < 1:
                raise InputError(
                    f"config {self.config.name} runs a persistent grid: its launch needs the "
                    f"device's SM count (a positive integer), got {sm_count!r}"
                )
            family = get_family(self.config.family)
            if family.cost.schedule == "tiles":
                grid = (tiles_blocks(params, shape, sm_count), 1, 1)
            else:
                grid = (persistent_blocks(params, sm_count), 1, 1)
        else:
            bm, bn = params["BM"], params["BN"]
            grid = (-(-shape.n // bn), -(-shape.m // bm), params.get("SPLITK", 1))
        return Launch(grid, (self.threads, 1, 1), self.dynamic_smem_bytes)


def render(config: Config) -> KernelSource:
    """Render ``config`` (which must satisfy its family's rules) to CUDA source; a vendor
    library's config (``Family.vendor``) has none, and raises saying so."""
    family = get_family(config.family)
    if family.vendor:
        raise InputError(
            f"config {config.name} is a call of the vendor library {family.name}: it has no "
            "CUDA source to render or compile"
        )
    broken = family.broken_rules(config)
    if broken:
        raise InputError(f"config {config.name} is invalid: {broken[0]}")
    values = family.template_values(config)
    template = _environment().get_template(family.template)
    code = template.render(KERNEL_NAME=config.kernel_name, **values)
    fp = family.footprint(config.as_dict())
    return KernelSource(config, code, fp.threads, fp.smem_bytes if fp.dynamic_smem else 0)
