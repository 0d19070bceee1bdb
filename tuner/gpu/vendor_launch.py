"""A vendor config run like a kernel: for ``cublaslt``, which of cuBLASLt's algorithms it is for a
problem, the launch, and the identity a measurement stores; ``cublas`` (the default call) goes to
``tuner.gpu.default_call`` from :func:`make_vendor_kernel` and :func:`launch_vendor`.

A config (``tuner.kernels.families.vendor``) names a rank in the heuristic's list; what runs is
that algorithm for the problem the launch meets (its shape, pitches and alignments, padded where
the config is). A stored answer carries the algorithm's eight words instead (its provenance,
:func:`identity`), and is replayed as it is: ``cublasLtMatmulAlgoCheck`` says whether it still
applies to the problem on this device and library, and when it does not (another release,
another problem), the heuristic's first choice runs and the reason is logged.

:class:`VendorKernel` stands where a loaded kernel stands in ``tuner.gpu.measure.launch``; its
:class:`~tuner.kernels.render.KernelSource` (:func:`vendor_source`) carries the config and no
code.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.gpu import cublaslt
from tuner.gpu.default_call import LIBRARY as DEFAULT_CALL_LIBRARY
from tuner.gpu.default_call import DefaultCall, run_default_call
from tuner.gpu.lt_layouts import LtProblem, algo_text, lt_problem
from tuner.kernels.families import get_family
from tuner.kernels.operand_padding import row_pitch
from tuner.kernels.render import KernelSource

log = logging.getLogger(__name__)
LIBRARY = "cublasLt"


@dataclass
class VendorKernel:
    """The algorithm of one ``cublaslt`` config per problem it meets (chosen on first use).

    ``stored``: an algorithm's words to replay (an answer's), else the config's rank in the
    heuristic's list is taken. C's type is the shape's (``Shape.out_dtype``) at each launch.
    """

    config: Config
    stored: tuple[int, ...] | None = None
    _chosen: dict[LtProblem, cublaslt.Algorithm] = field(default_factory=dict)
    _fallbacks: dict[LtProblem, str] = field(default_factory=dict)
    _last: LtProblem | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def rank(self) -> int:
        return self.config["RANK"]

    def algorithm(self, problem: LtProblem) -> cublaslt.Algorithm:
        """The algorithm that runs ``problem`` (raises :class:`cublaslt.LtUnavailable` when the
        heuristic offers fewer algorithms than the rank asks)."""
        with self._lock:
            chosen = self._chosen.get(problem)
            if chosen is None:
                chosen = self._choose(problem)
                self._chosen[problem] = chosen
            self._last = problem
            return chosen

    def _choose(self, problem: LtProblem) -> cublaslt.Algorithm:
        if self.stored is not None:
            checked = cublaslt.check(problem, self.stored)
            if isinstance(checked, cublaslt.Algorithm):
                return checked
            reason = f"the stored algorithm does not apply ({checked}): the heuristic's first runs"
            log.warning("%s on %s: %s", self.config.name, problem.mnk, reason)
            self._fallbacks[problem] = reason
            return self._offered(problem, 0)
        return self._offered(problem, self.rank)

    def _offered(self, problem: LtProblem, rank: int) -> cublaslt.Algorithm:
        offered = cublaslt.heuristic(problem)
        if len(offered) <= rank:
            raise cublaslt.LtUnavailable(
                f"cuBLASLt's heuristic offers {len(offered)} algorithm(s) for this problem "
                f"(n, m, k = {problem.mnk}): there is no rank {rank}"
            )
        return offered[rank]

    def identity(self) -> dict[str, Any]:
        """What a measurement stores of the algorithm that ran last: library, version, rank,
        its eight words (hex), whether they were replayed, and a fallback's reason."""
        with self._lock:
            problem = self._last
            chosen = self._chosen.get(problem) if problem is not None else None
            fallback = self._fallbacks.get(problem) if problem is not None else None
        identity: dict[str, Any] = {
            "library": LIBRARY,
            "version": cublaslt.version(),
            "rank": self.rank,
            "replayed": self.stored is not None and fallback is None,
        }
        if chosen is not None:
            identity["algo"] = algo_text(chosen.words)
            identity["workspace_bytes"] = chosen.workspace_bytes
        if fallback is not None:
            identity["fallback"] = fallback
        return identity


def make_vendor_kernel(
    config: Config, stored: tuple[int, ...] | None = None
) -> VendorKernel | DefaultCall:
    """What stands for a vendor config's kernel: the default call for ``cublas``, else the
    cuBLASLt algorithm of the config's rank (or ``stored``, an answer's words, replayed)."""
    if get_family(config.family).vendor == DEFAULT_CALL_LIBRARY:
        return DefaultCall(config)
    return VendorKernel(config, stored)


def vendor_source(config: Config) -> KernelSource:
    """The source a ``cublaslt`` config stands for in a launch: its config, no code."""
    return KernelSource(config, "", threads=0, dynamic_smem_bytes=0)


def launch_vendor(
    kernel: VendorKernel | DefaultCall,
    source: KernelSource,
    shape: Shape,
    alpha: float,
    a: Any,
    b: Any,
    beta: float,
    c: Any,
) -> None:
    """Run ``C = alpha*A@B + beta*C`` with the config's algorithm (or the default call): on
    zero-padded copies when the config is padded (``tuner.gpu.padded_launch``, copies
    included), else on the arrays."""
    run: Callable[..., None] = run_default_call if isinstance(kernel, DefaultCall) else run_vendor
    if source.config.pad:
        from tuner.gpu.padded_launch import launch_padded

        launch_padded(run, kernel, source, shape, alpha, a, b, beta, c)
        return
    run(kernel, source, shape, alpha, a, b, beta, c)


def run_vendor(
    kernel: VendorKernel,
    source: KernelSource,
    shape: Shape,
    alpha: float,
    a: Any,
    b: Any,
    beta: float,
    c: Any,
) -> None:
    """One ``cublasLtMatmul`` on these arrays (rows contiguous; any pitch), on the current
    stream (asynchronous)."""
    bases = (int(a.data.ptr), int(b.data.ptr), int(c.data.ptr))
    pitches = (row_pitch(a), row_pitch(b), row_pitch(c))
    problem = lt_problem(shape, *pitches, shape.out, bases)
    algorithm = kernel.algorithm(problem)
    cublaslt.matmul(problem, algorithm, alpha, bases[0], bases[1], beta, bases[2])
