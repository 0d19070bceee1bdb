"""Stream-K twins: the same block tile run by a persistent grid instead of one block per tile.

A data-parallel grid of ``dmma_pipelined`` (SPLITK 1) leaves its last wave part full: 2048 tiles
of 64 x 128 on the H100's 132 SMs at two blocks each are 7.76 waves, run as 8. Its stream-K
twin, ``dmma_streamk`` (the same template in its stream-K mode), shares that last wave's k tiles
over every block. On the lent H100 the twin of
``dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1`` ran 4096^3 at 60.1 TFLOP/s against
58.1 and 4097^3 (padded) at 53.9 against 52.5, but lost 8-12 % with 64 x 64 tiles on K of about
1000. Which one wins depends on the shape, so a study
re-measures the twins of its fastest finalists beside them (``tuner.search.study``) rather than
spending screening trials on a second copy of each tile.

A twin keeps the tile, the k ring and the operand mode, and runs as many blocks per SM as the
screened kernel did (its registers and shared memory say how many), which is also its launch
bound. ``grid_twin`` maps back: a study that does not search ``dmma_streamk`` starts from a
stored ``dmma_streamk`` answer's data-parallel twin.
"""

from __future__ import annotations

from dataclasses import replace

from tuner.core.config import Config
from tuner.core.result import Result
from tuner.kernels.families import get_family
from tuner.kernels.resources import DeviceLimits, occupancy, static_check

# Data-parallel family -> its stream-K twin (same template and tile parameters).
STREAMK_TWINS = {"dmma_pipelined": "dmma_streamk"}
GRID_TWINS = {twin: grid for grid, twin in STREAMK_TWINS.items()}


def resident_blocks_of(config: Config, result: Result | None, device: DeviceLimits) -> int:
    """Blocks per SM that ``config``'s kernel ran: from the registers and shared memory its
    compile reported (``result``), else from the static estimate."""
    check = static_check(config, device)
    registers = check.est_registers
    smem = check.smem_bytes
    if result is not None and result.registers is not None:
        registers = result.registers
        smem = result.smem_bytes if result.smem_bytes is not None else smem
    return occupancy(check.threads, registers, smem, device).blocks_per_sm


def streamk_twin(config: Config, result: Result | None, device: DeviceLimits) -> Config | None:
    """The stream-K twin of a data-parallel, unsplit ``config`` in its operand mode, with as many
    blocks per SM as it ran (``result``: its screening), or None where it has none: another
    family, a split K, more blocks per SM than the twin's SMBLOCKS allows, or a twin whose rules
    or the device's limits refuse it."""
    twin_family = STREAMK_TWINS.get(config.family)
    if twin_family is None or config.as_dict().get("SPLITK", 1) != 1:
        return None
    family = get_family(twin_family)
    blocks = resident_blocks_of(config, result, device)
    allowed = next(p.values for p in family.params if p.name == "SMBLOCKS")
    if blocks not in allowed:
        return None
    params = {k: v for k, v in config.as_dict().items() if k not in ("SPLITK", "MINBLOCKS")}
    twin = family.config({**params, "SMBLOCKS": blocks})
    if family.broken_rules(twin) or not static_check(twin, device).fits:
        return None
    return twin.padded(config.pad) if config.pad else twin


def grid_twin(config: Config) -> Config | None:
    """The data-parallel twin of a stream-K ``config`` (its SMBLOCKS as the launch bound, K
    unsplit, the same operand mode), or None for a family without one."""
    grid_family = GRID_TWINS.get(config.family)
    if grid_family is None:
        return None
    params = dict(config.as_dict())
    blocks = params.pop("SMBLOCKS")
    twin = get_family(grid_family).config({**params, "SPLITK": 1, "MINBLOCKS": blocks})
    return twin.padded(config.pad) if config.pad else twin


def twin_screening(screened: Result, twin: Config) -> Result:
    """What a twin's final re-measurement is stored over (``tuner.search.finalists.final_result``):
    its source's screening, under the twin's name, family and parameters, with the compile figures
    left to the twin's own compile and the source named (``twin_of``)."""
    return replace(
        screened,
        config_name=twin.name,
        family=twin.family,
        params=twin.as_dict(),
        registers=None,
        smem_bytes=None,
        occupancy=None,
        provenance={**screened.provenance, "twin_of": screened.config_name},
    )
