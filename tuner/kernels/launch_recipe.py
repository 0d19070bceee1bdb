"""How to run a config's kernel by hand: its signature, its arguments in order with their values
for one shape, grid, block and dynamic shared memory, how to compile it, and what must happen
around the launch (padding copies, the ``bf16x3`` split, split-K counters).

Nothing here is written per family: the recipe follows from the family's attributes
(``leading_dims``, ``module_counters``, ``cost.schedule``, ``kernel_shape``, ``arch_specific``,
``min_arch``, ``max_arch``) and from the arithmetic the GPU launch itself uses.
:func:`kernel_parameters` is the order in which ``tuner.gpu.measure.launch_kernel`` passes its
arguments; the geometry is ``KernelSource.launch``; the buffers are the plans of
``tuner.kernels.operand_padding`` and ``tuner.kernels.operand_split``; the compile target and
dialect are ``tuner.kernels.compile``'s. So the recipe the API serves cannot drift from what the
tuner runs, and a new family with the usual attributes gets a correct one with no code here.

Values are for the caller's arrays stored row-major and packed (each row right after the one
before), with bases on 16 bytes as every CUDA allocator gives them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.compile import LANGUAGE_STANDARD, compile_target
from tuner.kernels.families import STREAMK_MAX_BLOCKS, Family, get_family
from tuner.kernels.families.emulated import A_PARTS, B_PARTS
from tuner.kernels.families.tma_ws import SPLIT_MAX_TILES
from tuner.kernels.operand_padding import plan_padding
from tuner.kernels.operand_split import SplitOperand, split_operands
from tuner.kernels.render import KernelSource

# How the templates declare an operand of each input type (``templates/_half_io.cuh.j2``
# declares ``half_bits``), and what the types that are not standard C mean.
ELEMENT_TYPES = {"float32": "float", "float16": "half_bits", "bfloat16": "half_bits"}
TYPE_NOTES = {
    "half_bits": "unsigned short: an FP16 or BF16 value's 16 bits as stored (typedef in the "
    "source)",
    "c_elem": "C's element: float for a float32 C, else unsigned short, the FP16 or BF16 value's "
    "16 bits (typedef in the source, by the config's OUT)",
}
# C as the float32-input templates declare it; the half templates declare ``c_elem``, the type
# of C their OUT names.
C_TYPE = "float*"
HALF_C_TYPE = "c_elem*"


@dataclass(frozen=True)
class Parameter:
    """One parameter of a kernel: its name and C type as the template declares them."""

    name: str
    ctype: str
    meaning: str

    @property
    def pointer(self) -> bool:
        return self.ctype.endswith("*")

    @property
    def declaration(self) -> str:
        """As in the source: every pointer is ``__restrict__`` (A, B and C never overlap)."""
        return f"{self.ctype}{' __restrict__' if self.pointer else ''} {self.name}"


def kernel_parameters(family: Family, dtype: str) -> tuple[Parameter, ...]:
    """The parameters of ``family``'s kernel in order, for a kernel that reads A and B of
    ``dtype`` (the type its kernel sees: BF16 for an emulated family). A family that takes
    leading dimensions (``Family.leading_dims``) has one after each matrix; one that reads A and
    B through TMA (``Family.tensor_maps``) takes their tensor maps instead, and C's too."""
    if dtype not in ELEMENT_TYPES:
        raise InputError(f"a kernel reads {', '.join(ELEMENT_TYPES)} operands, not {dtype!r}")
    if family.tensor_maps:
        return _tensor_map_parameters()
    element = f"const {ELEMENT_TYPES[dtype]}*"
    head = (
        Parameter("M", "int", "rows of C"),
        Parameter("N", "int", "columns of C"),
        Parameter("K", "int", "the inner dimension: columns of op(A), rows of op(B)"),
        Parameter("alpha", "float", "scales the product"),
    )
    matrices = (
        (
            Parameter("A", element, "A as its layout stores it, row-major (K x M if transposed)"),
            Parameter("lda", "int", "elements from one row of A to the next"),
        ),
        (
            Parameter("B", element, "B as its layout stores it, row-major (N x K if transposed)"),
            Parameter("ldb", "int", "elements from one row of B to the next"),
        ),
        (
            Parameter("C", C_TYPE, "C, M x N row-major float32: read when beta != 0, written"),
            Parameter("ldc", "int", "elements from one row of C to the next"),
        ),
    )
    beta = Parameter("beta", "float", "scales C as read (0: C is never read)")
    if dtype != "float32":
        c, ldc = matrices[2]
        matrices = (
            *matrices[:2],
            (Parameter("C", HALF_C_TYPE, c.meaning.replace(" float32", "")), ldc),
        )
    held = [pair if family.leading_dims else pair[:1] for pair in matrices]
    return (*head, *held[0], *held[1], beta, *held[2])


def _tensor_map_parameters() -> tuple[Parameter, ...]:
    """``tma_ws``'s kernel (``templates/tma_ws.cu.j2``): the tensor maps are 128-byte
    ``CUtensorMap`` values passed by value (``__grid_constant__``), encoded on the host with
    ``cuTensorMapEncodeTiled`` (``tuner.gpu.tensor_maps``), which CuPy cannot pass: the
    launch is the driver's ``cuLaunchKernel``."""
    tensor_map = "const __grid_constant__ TensorMap"
    return (
        Parameter("M", "int", "rows of C"),
        Parameter("N", "int", "columns of C"),
        Parameter("K", "int", "the inner dimension: columns of op(A), rows of op(B)"),
        Parameter("alpha", "float", "scales the product"),
        Parameter("a_map", tensor_map, "A's tensor map: its stored dims and pitch, box BK x BM"),
        Parameter("b_map", tensor_map, "B's tensor map: its stored dims and pitch, box BK x BN"),
        Parameter("beta", "float", "scales C as read (0: C is never read)"),
        Parameter("C", C_TYPE, "C, M x N row-major: read when beta != 0, written"),
        Parameter("ldc", "int", "elements from one row of C to the next"),
        Parameter("c_map", tensor_map, "C's tensor map, for the TMA-store epilogue"),
        Parameter("c_tma", "int", "1: C is stored by TMA (beta 0 and the config's EPI 1)"),
    )


@dataclass(frozen=True)
class Argument:
    """A parameter and what to pass: the value for the recipe's shape (dimensions and leading
    dimensions), or None where the caller supplies it (alpha, beta, the arrays), with what the
    pointer must point at."""

    parameter: Parameter
    value: int | None
    passes: str


@dataclass(frozen=True)
class OperandBuffer:
    """An array the kernel runs on instead of the caller's: made zeroed once and kept (nothing
    but the copies writes it, so its padding stays zero), the caller's array copied or split
    into its top left before each launch, and for C its M x N corner copied back after.

    ``split_parts``: for the ``bf16x3`` split, the parts in order (``lo`` = bf16(x - hi), ``hi``
    = bf16(x), both rounded to nearest even), part p starting p times ``part_offset`` (rows,
    columns) from the top left; empty for a plain copy.
    """

    operand: str
    array: tuple[int, int]
    buffer: tuple[int, int]
    element: str
    split_parts: tuple[str, ...] = ()
    part_offset: tuple[int, int] = (0, 0)
    copy_back: bool = False

    def steps(self) -> list[str]:
        rows, cols = self.array
        made = f"{self.buffer[0]} x {self.buffer[1]} {self.element} buffer (zeroed once, kept)"
        if self.split_parts:
            dr, dc = self.part_offset
            return [
                f"split {self.operand} (float32, {rows} x {cols}) into a {made}: hi = bf16(x), "
                f"lo = bf16(x - hi), rounded to nearest even; parts {', '.join(self.split_parts)}"
                f", part p at row p*{dr}, column p*{dc}"
            ]
        if self.operand != "C":
            return [f"copy {self.operand} ({rows} x {cols}) into the top left of a {made}"]
        return [
            f"when beta != 0, copy C ({rows} x {cols}) into the top left of a {made}",
            f"after the launch, copy the top left {rows} x {cols} of C's buffer back into C",
        ]


@dataclass(frozen=True)
class CompileRecipe:
    """What to compile the source with (NVRTC or ``nvcc -cubin``): the target architecture
    and the options; ``defines`` is empty because every constant is rendered into the source."""

    arch: str
    options: tuple[str, ...]
    defines: Mapping[str, str] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class LaunchRecipe:
    """Everything needed to compile and launch a config's kernel for one shape.

    ``grid`` is None for a persistent grid when the SM count is unknown (``grid_rule`` says how
    to size it); ``kernel_shape`` is the (M, N, K) the kernel is passed, which a padded or split
    launch changes from the caller's.
    """

    entry: str
    signature: str
    arguments: tuple[Argument, ...]
    kernel_shape: tuple[int, int, int]
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int]
    dynamic_smem_bytes: int
    grid_rule: str
    compile: CompileRecipe
    buffers: tuple[OperandBuffer, ...]
    module_per_stream: bool
    before: tuple[str, ...]
    after: tuple[str, ...]
    types: Mapping[str, str]

    @property
    def parameter_list(self) -> str:
        """The parameters as the signature declares them, in parentheses."""
        return "(" + ", ".join(a.parameter.declaration for a in self.arguments) + ")"


def _stored(shape: Shape) -> dict[str, tuple[int, int]]:
    """A, B and C as the layout stores them, row-major."""
    return {
        "A": (shape.k, shape.m) if shape.a_transposed else (shape.m, shape.k),
        "B": (shape.n, shape.k) if shape.b_transposed else (shape.k, shape.n),
        "C": (shape.m, shape.n),
    }


def _split_buffer(operand: str, part: SplitOperand, order: tuple[str, ...]) -> OperandBuffer:
    beside = part.parts_side_by_side
    offset = (0, part.part_stride) if beside else (part.part_stride // part.buffer[1], 0)
    return OperandBuffer(operand, (part.rows, part.cols), part.buffer, "bfloat16", order, offset)


def _operands(
    source: KernelSource, family: Family, shape: Shape
) -> tuple[Shape, dict[str, OperandBuffer]]:
    """The product the kernel is passed and the buffers it runs on instead of the caller's
    arrays (by operand), as the GPU launch makes them."""
    if family.rewrites_operands:
        a_part, b_part = split_operands(shape)
        buffers = {
            "A": _split_buffer("A", a_part, A_PARTS),
            "B": _split_buffer("B", b_part, B_PARTS),
        }
        return family.run_shape(shape), buffers
    if not source.config.pad:
        return shape, {}
    plan = plan_padding(shape, leading_dims=family.leading_dims, c_rows=family.pads_c_rows)
    element = shape.dtype
    wanted = {
        "A": (plan.copy_a, plan.a_array, plan.a_buffer, element),
        "B": (plan.copy_b, plan.b_array, plan.b_buffer, element),
        "C": (plan.copy_c, (shape.m, shape.n), plan.c_buffer, shape.out),
    }
    buffers = {
        name: OperandBuffer(name, array, buffer, dtype, copy_back=name == "C")
        for name, (copied, array, buffer, dtype) in wanted.items()
        if copied
    }
    return plan.run_shape, buffers


def _grid_rule(source: KernelSource, family: Family, padded: bool) -> str:
    params = source.config.as_dict()
    if family.cost.schedule == "persistent":
        return (
            f"({params['SMBLOCKS']} x the GPU's SM count, at most {STREAMK_MAX_BLOCKS}; 1; 1) "
            "whatever the shape: a persistent grid walks the tiles"
        )
    if family.cost.schedule == "tiles":
        if params.get("TAIL", 0):
            return "(the GPU's SM count; 1; 1) whatever the shape: a persistent grid, stream-K tail"
        if params.get("SPLIT", 1) > 1:
            return (
                f"(the GPU's SM count, at most {params['SPLIT']} x the number of BM x BN output "
                f"tiles, or the tiles alone past {SPLIT_MAX_TILES} of them; 1; 1): a persistent "
                "grid of pieces of K"
            )
        return (
            "(the GPU's SM count, at most the number of BM x BN output tiles; or for a cluster, "
            "the most clusters the driver says fit, times the cluster size; 1; 1): a persistent "
            "grid of whole tiles"
        )
    dims = "M and N as passed (the padded ones)" if padded else "M and N"
    return (
        f"(ceil(N / {params['BN']}), ceil(M / {params['BM']}), {params.get('SPLITK', 1)}) for "
        f"{dims}; block and dynamic shared memory are the same for every shape"
    )


def _compile_recipe(family: Family, arch: str | None) -> CompileRecipe:
    if arch is None:
        target = compile_target(f"sm_{family.min_arch}", family.arch_specific)
        newest = f" up to sm_{family.max_arch}" if family.max_arch is not None else ""
        note = (
            f"no device named: {target} is the oldest target; compile for your GPU's own "
            f"architecture (sm_{family.min_arch} or newer{newest})"
        )
    else:
        target = compile_target(arch, family.arch_specific)
        note = ""
    return CompileRecipe(target, (f"-arch={target}", LANGUAGE_STANDARD), {}, note)


def launch_recipe(
    source: KernelSource, shape: Shape, arch: str | None = None, sm_count: int | None = None
) -> LaunchRecipe:
    """The recipe of ``source``'s config for the caller's ``shape`` (its dtype and layout too),
    on a GPU of architecture ``arch`` (``sm_90``; None: the family's oldest) with ``sm_count``
    SMs (needed for a persistent grid's size; None leaves ``grid`` None there).

    Raises:
        InputError: the config's family computes nothing for ``shape``'s dtype or layout.
    """
    family = get_family(source.config.family)
    problem = family.unsupported(shape)
    if problem is not None:
        raise InputError(f"no launch recipe for {source.config.name}: {problem}")
    run, buffers = _operands(source, family, shape)
    stored, passed = _stored(shape), _stored(run)
    parameters = kernel_parameters(family, run.dtype)
    dims = {"M": run.m, "N": run.n, "K": run.k}
    arguments = []
    for p in parameters:
        if p.name in dims:
            arguments.append(Argument(p, dims[p.name], "the kernel's " + p.name))
        elif p.name.startswith("ld"):
            matrix = p.name[2:].upper()
            held = buffers.get(matrix)
            pitch = held.buffer[1] if held is not None else passed[matrix][1]
            arguments.append(Argument(p, pitch, f"{matrix}'s row pitch in elements"))
        elif p.pointer:
            held = buffers.get(p.name)
            rows, cols = stored[p.name]
            where = (
                f"{p.name}'s buffer ({held.buffer[0]} x {held.buffer[1]} {held.element})"
                if held is not None
                else f"the caller's {p.name} ({rows} x {cols} {_element(p.name, shape)})"
            )
            arguments.append(Argument(p, None, where))
        else:
            arguments.append(Argument(p, None, "the caller's " + p.name))
    geo = None if source.persistent and sm_count is None else source.launch(run, sm_count)
    block = (source.threads, 1, 1)
    before = [step for b in buffers.values() for step in b.steps()[:1]]
    after = [step for b in buffers.values() for step in b.steps()[1:]]
    if source.dynamic_smem_bytes:
        before.insert(
            0,
            f"once per loaded kernel, allow {source.dynamic_smem_bytes} bytes of dynamic shared "
            "memory (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; CuPy: "
            "kernel.max_dynamic_shared_size_bytes)",
        )
    if family.module_counters:
        before.append(
            "the kernel keeps split-K counters in its loaded module (zero at load, reset by "
            "every launch): launches of one module must not overlap, so load one module per "
            "stream that launches it"
        )
    types = {t: note for t, note in TYPE_NOTES.items() if any(t in p.ctype for p in parameters)}
    return LaunchRecipe(
        entry=source.entry,
        signature=f'extern "C" __global__ void {source.entry}'
        + "("
        + ", ".join(p.declaration for p in parameters)
        + ")",
        arguments=tuple(arguments),
        kernel_shape=(run.m, run.n, run.k),
        grid=None if geo is None else geo.grid,
        block=block,
        dynamic_smem_bytes=source.dynamic_smem_bytes,
        grid_rule=_grid_rule(source, family, (run.m, run.n) != (shape.m, shape.n)),
        compile=_compile_recipe(family, arch),
        buffers=tuple(buffers.values()),
        module_per_stream=family.module_counters,
        before=tuple(before),
        after=tuple(after),
        types=types,
    )


def _element(matrix: str, shape: Shape) -> str:
    return shape.out if matrix == "C" else shape.dtype
