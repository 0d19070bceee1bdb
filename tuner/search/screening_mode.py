"""The operand mode a study screens each family in, on a shape with ragged rows.

A family that takes leading dimensions (``Family.leading_dims``) runs a ragged shape two ways: its
kernel on the caller's arrays, where every tile of a ragged operand takes narrow copies, or padded
(``_pad4``, ``_pad8``: the ragged operands copied into rows of whole 16-byte vectors first, the
copies timed; ``tuner.kernels.operand_padding``). Candidates screened on the caller's arrays rank as
their narrow copies let them, which is not how they rank padded: on the H100 the odd suite's study
of 2053x3001x1999 kept a padded config at 45.2 TFLOP/s, where another reached 50.7 padded.

So where the copies are expected to cost less than the narrow copies they replace, the family
is screened padded: when their estimate (``tuner.model.cost_model.copies_ms``) is at most
:data:`NARROW_COPY_COST` of the family's fastest estimated kernel on this shape for each ragged
operand. On the H100, ``dmma_pipelined`` on the caller's ragged rows took longer than on rows of
whole vectors by 9.5 to 33 % (median 20 %) on seven shapes with both operands ragged, and by 2.5,
4, 13 and 21 % on four with one (in-sample odd shapes). Half-input families follow the same
rule, unmeasured. Either way the study re-measures its fastest finalists in the other mode too
(``tuner.search.finalists``). The vendor library (``cublaslt``) is screened padded on every
ragged shape (:func:`padded_families` says why), and its fastest is re-measured unpadded.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.candidate import Candidate
from tuner.kernels.families import get_family
from tuner.kernels.operand_padding import pad_multiple, padding_refusal, plan_padding
from tuner.kernels.resources import DeviceLimits
from tuner.model.cost_model import copies_ms, estimate
from tuner.model.rates import DeviceRates

# The expected cost of one ragged operand's narrow copies, as a share of the kernel's time.
NARROW_COPY_COST = 0.10


def may_screen_padded(family: str, shape: Shape) -> bool:
    """Whether :func:`padded_families` may choose ``family`` on ``shape``: the shape has ragged
    rows, and the family takes leading dimensions (or is the vendor library's) and does not
    rewrite the operands."""
    fam = get_family(family)
    eligible = fam.leading_dims or bool(fam.vendor)
    refusal = padding_refusal(shape, c_rows=fam.pads_c_rows)
    return refusal is None and eligible and not fam.rewrites_operands


def padded_families(
    candidates: Sequence[Candidate],
    shape: Shape,
    device: DeviceLimits,
    rates: DeviceRates | None = None,
) -> set[str]:
    """The families of ``candidates`` whose candidates are screened padded on ``shape``: those
    that take leading dimensions and do not rewrite the operands, where the copies' estimate is
    at most :data:`NARROW_COPY_COST` of the family's fastest kernel estimate per ragged operand.
    None on a shape without ragged rows."""
    eligible = {f for f in {c.family for c in candidates} if may_screen_padded(f, shape)}
    if not eligible:  # an aligned shape, or no family that could run it padded
        return set()
    # The vendor library off its aligned fast paths lost far more than any copy costs (4097^3
    # BF16 on the H100: 1.08 ms by cublasGemmEx, 0.32 ms padded first, copies included:
    # benchmarks/results/h100-vendor-baseline-2026-11-27.json), and the model knows
    # nothing of its kernels: it is screened padded on every ragged shape, its fastest
    # re-measured unpadded among the finalists (``tuner.search.finalists``).
    vendor = {f for f in eligible if get_family(f).vendor}
    eligible -= vendor
    plan = plan_padding(shape, leading_dims=True)  # the copies of every eligible family
    share = NARROW_COPY_COST * (plan.copy_a + plan.copy_b)
    fastest: dict[str, float] = {}
    for candidate in candidates:
        if candidate.config.pad or candidate.family not in eligible:
            continue
        ms = estimate(candidate, shape, device, rates).ms
        fastest[candidate.family] = min(ms, fastest.get(candidate.family, ms))
    if not fastest:
        return vendor
    copies = copies_ms(plan, device, rates)
    return vendor | {f for f, ms in fastest.items() if copies <= share * ms}


def screened_as(
    candidate: Candidate,
    padded: Collection[str],
    shape: Shape,
    measurable: Callable[[Config], bool] = lambda config: True,
) -> Candidate:
    """``candidate`` as the study screens it: padded when its family is in ``padded``
    (:func:`padded_families`) and ``measurable`` says the evaluator can measure the padded
    config (a replay answers only for the names its tables hold), else as it is."""
    if candidate.config.pad or candidate.family not in padded:
        return candidate
    twin = candidate.padded(shape)
    return twin if measurable(twin.config) else candidate


def other_mode(config: Config, shape: Shape) -> Config | None:
    """``config`` in the other operand mode, for a finalist: padded if it ran on the caller's
    arrays, on the caller's arrays if it ran padded; None where padding does not apply (a shape
    without ragged rows, a family that rewrites the operands)."""
    if config.pad:
        return config.direct
    family = get_family(config.family)
    if padding_refusal(shape, c_rows=family.pads_c_rows) is not None or family.rewrites_operands:
        return None
    return config.padded(pad_multiple(shape.dtype))
