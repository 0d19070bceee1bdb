"""What fits on the chip: device limits, a register estimate, and theoretical occupancy.

Limits come from the live device when CuPy sees one, else from a table per compute capability
(CUDA C Programming Guide, "Features and Technical Specifications"). Occupancy follows the
arithmetic of NVIDIA's occupancy calculator: a block needs threads, registers (allocated per
warp in units of 256) and shared memory (allocated in units of 128 bytes plus 1 KiB that the
runtime reserves per block); the scarcest of the three sets the blocks per SM.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.kernels.families import get_family

KIB = 1024
STATIC_SMEM_LIMIT = 48 * KIB  # a block's static __shared__ arrays may not exceed this
MAX_REGS_PER_THREAD = 255
# Registers the kernels need beyond accumulators and fragments: indices, pointers, loop
# counters, load staging. Calibrated against nvcc's report for sm_90 (tests check the estimate
# stays within reach of the real count).
REGISTER_OVERHEAD = 40


@dataclass(frozen=True)
class DeviceLimits:
    """Per-device limits that decide whether and how many blocks of a kernel fit on an SM."""

    name: str
    arch: str  # e.g. "sm_90"
    sm_count: int
    max_threads_per_block: int = 1024
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    max_regs_per_thread: int = MAX_REGS_PER_THREAD
    reg_alloc_unit: int = 256  # registers are granted per warp, in multiples of this
    smem_per_sm: int = 228 * KIB
    smem_per_block_optin: int = 227 * KIB  # dynamic shared memory after cudaFuncSetAttribute
    smem_reserved_per_block: int = 1 * KIB
    smem_alloc_unit: int = 128
    warp_size: int = 32

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


DEVICE_TABLE: dict[str, DeviceLimits] = {
    "sm_80": DeviceLimits(
        "A100 (sm_80)", "sm_80", 108, smem_per_sm=164 * KIB, smem_per_block_optin=163 * KIB
    ),
    "sm_86": DeviceLimits(
        "RTX 30xx (sm_86)",
        "sm_86",
        84,
        max_threads_per_sm=1536,
        max_blocks_per_sm=16,
        smem_per_sm=100 * KIB,
        smem_per_block_optin=99 * KIB,
    ),
    "sm_89": DeviceLimits(
        "L40/RTX 40xx (sm_89)",
        "sm_89",
        142,
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        smem_per_sm=100 * KIB,
        smem_per_block_optin=99 * KIB,
    ),
    "sm_90": DeviceLimits("H100 (sm_90)", "sm_90", 132),
}


def table_device(arch: str) -> DeviceLimits:
    """Limits of a compute capability from the table (``sm_90``, ``90`` or ``9.0``)."""
    key = arch.strip().lower().replace(".", "")
    if not key.startswith("sm_"):
        key = "sm_" + key
    if key not in DEVICE_TABLE:
        raise InputError(f"unknown device {arch!r}; choose one of {', '.join(DEVICE_TABLE)}")
    return DEVICE_TABLE[key]


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """Resident blocks per SM and what limits them."""

    blocks_per_sm: int
    limited_by: str  # "threads", "registers", "shared memory" or "blocks"
    occupancy: float  # resident warps / max warps per SM


def occupancy(threads: int, registers: int, smem_bytes: int, dev: DeviceLimits) -> Occupancy:
    """Theoretical occupancy of a block of ``threads`` using ``registers`` per thread and
    ``smem_bytes`` of shared memory (static + dynamic)."""
    warps = -(-threads // dev.warp_size)
    limits = {"blocks": dev.max_blocks_per_sm, "threads": dev.max_warps_per_sm // warps}
    regs_per_warp = _round_up(max(registers, 1) * dev.warp_size, dev.reg_alloc_unit)
    limits["registers"] = (
        (dev.regs_per_sm // regs_per_warp) // warps if registers <= dev.max_regs_per_thread else 0
    )
    smem_block = _round_up(smem_bytes, dev.smem_alloc_unit) + dev.smem_reserved_per_block
    limits["shared memory"] = (
        dev.smem_per_sm // smem_block if smem_bytes <= dev.smem_per_block_optin else 0
    )
    limited_by = min(limits, key=lambda key: limits[key])
    blocks = limits[limited_by]
    return Occupancy(blocks, limited_by, blocks * warps / dev.max_warps_per_sm)


def estimate_registers(accumulators: int, fragments: int) -> int:
    """Registers per thread expected before compiling: accumulators + fragments + overhead."""
    return accumulators + fragments + REGISTER_OVERHEAD


@dataclass(frozen=True)
class ResourceCheck:
    """The static verdict on one config for one device."""

    config: Config
    threads: int
    smem_bytes: int
    dynamic_smem: bool
    est_registers: int
    occupancy: Occupancy
    problems: tuple[str, ...]

    @property
    def fits(self) -> bool:
        return not self.problems


def launch_bound_registers(threads: int, blocks: int, dev: DeviceLimits) -> int:
    """Registers per thread the compiler may use when ``__launch_bounds__`` asks for ``blocks``
    blocks of ``threads`` per SM (allocated per warp in units of ``reg_alloc_unit``)."""
    warps = -(-threads // dev.warp_size) * blocks
    per_warp = dev.regs_per_sm // max(warps, 1) // dev.reg_alloc_unit * dev.reg_alloc_unit
    return min(per_warp // dev.warp_size, dev.max_regs_per_thread)


def arch_number(arch: str) -> int:
    """``sm_90`` -> 90, ``sm_90a`` -> 90 (0 when unreadable: older than anything)."""
    digits = "".join(ch for ch in arch.removeprefix("sm_") if ch.isdigit())
    return int(digits) if digits else 0


def static_check(config: Config, dev: DeviceLimits) -> ResourceCheck:
    """Check a (rule-valid) config against the device's limits before anything compiles."""
    family = get_family(config.family)
    fp = family.footprint(config.as_dict())
    regs = estimate_registers(fp.accumulators, fp.fragments)
    problems = []
    arch_problem = family.arch_problem(arch_number(dev.arch))
    if arch_problem is not None:
        problems.append(f"architecture: {arch_problem}, the device is {dev.arch}")
    if fp.threads > dev.max_threads_per_block:
        problems.append(f"{fp.threads} threads > {dev.max_threads_per_block} per block")
    if not fp.dynamic_smem and fp.smem_bytes > STATIC_SMEM_LIMIT:
        problems.append(f"static shared memory {fp.smem_bytes} B > {STATIC_SMEM_LIMIT} B")
    if fp.smem_bytes > dev.smem_per_block_optin:
        problems.append(f"shared memory {fp.smem_bytes} B > {dev.smem_per_block_optin} B per block")
    if regs > dev.max_regs_per_thread:
        problems.append(f"~{regs} registers per thread > {dev.max_regs_per_thread}: it would spill")
    wanted_blocks = family.launch_bound_blocks(config.as_dict())
    # Registers per thread the launch bound leaves, where there is one.
    cap = launch_bound_registers(fp.threads, wanted_blocks, dev) if wanted_blocks else None
    bounded_too_tight = cap is not None and regs > family.launch_bound_slack * cap
    if bounded_too_tight and fp.threads <= dev.max_threads_per_block:
        problems.append(
            f"a launch bound of {wanted_blocks} blocks of {fp.threads} threads leaves {cap} "
            f"registers per thread, under the ~{regs} the kernel needs: it would spill or "
            "not compile"
        )
    occ = occupancy(fp.threads, regs, fp.smem_bytes, dev)
    if not problems and occ.blocks_per_sm < 1:
        problems.append(f"no block fits on an SM (limited by {occ.limited_by})")
    wanted = config.as_dict().get("SMBLOCKS", 1)  # a persistent grid's blocks per SM
    if not problems and occ.blocks_per_sm < wanted:
        # A launch bound caps the registers to fit its blocks (dmma_streamk bounds by SMBLOCKS).
        bounded = occ if cap is None else occupancy(fp.threads, min(regs, cap), fp.smem_bytes, dev)
        if bounded.blocks_per_sm < wanted:
            problems.append(
                f"SMBLOCKS={wanted} blocks per SM do not fit: {bounded.blocks_per_sm} do "
                f"(limited by {bounded.limited_by})"
            )
    return ResourceCheck(
        config, fp.threads, fp.smem_bytes, fp.dynamic_smem, regs, occ, tuple(problems)
    )
