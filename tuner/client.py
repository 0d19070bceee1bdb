"""Ask gemmtune which config to run, and run it.

:func:`best` answers over HTTP (a running ``gemmtune serve``) or straight from a results database,
with the same :class:`~tuner.answers.answer.Answer` either way (the rules are
:mod:`tuner.answers.best`). It answers for a GPU: by default the current CuPy device when CuPy sees
one, so a GPU whose FP64 tensor cores are slow never gets a ``dmma`` config tuned on an H100.
:func:`matmul` (exported as ``tuner.matmul``) computes ``C = alpha * A @ B + beta * C`` on CuPy
arrays with that config, compiled once per process and GPU architecture (NVRTC, with gemmtune's
on-disk cubin cache underneath); with nothing tuned it uses the rule-chosen default, correct for any
shape.

    >>> from tuner.client import best
    >>> best(1000, 1000, 1000, url="http://127.0.0.1:8000").name   # doctest: +SKIP
    'pipelined_bm128_bn64_bk32_wm32_wn32_wni1_tm4_tn4_t256_s4'

:func:`best` imports CuPy only to describe the current device, and only when CuPy is installed;
``httpx`` is only imported for HTTP.
"""

from __future__ import annotations

import enum
import os
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, Literal

from tuner.answers.answer import Answer
from tuner.answers.device_kind import DeviceSpec
from tuner.core.accuracy import DEFAULT_ACCURACY, check_accuracy
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.gpu.device import current_device

if TYPE_CHECKING:
    from tuner.answers.index import BestIndex

API_URL_ENV_VAR = "GEMMTUNE_API_URL"


class _Current(enum.Enum):
    DEVICE = "the current CuPy device"


# ``device=CURRENT``: the GPU CuPy has current, described by name, arch and SM count; with no
# CuPy or no GPU, no device (the fastest config of any device, as ``device=None`` gives).
CURRENT: Final = _Current.DEVICE
DeviceArg = str | DeviceSpec | None | Literal[_Current.DEVICE]


def _resolve(device: DeviceArg) -> DeviceSpec | None:
    if device is CURRENT:
        return current_device()
    if isinstance(device, str):
        return DeviceSpec(device)
    return device


def best(
    m: int,
    n: int,
    k: int,
    *,
    url: str | None = None,
    db: str | None = None,
    device: DeviceArg = CURRENT,
    timeout_s: float = 10.0,
    dtype: str = "float32",
    layout: str = "NN",
    accuracy: str = DEFAULT_ACCURACY,
    out_dtype: str | None = None,
) -> Answer:
    """The best config for an m x n x k GEMM of ``dtype`` inputs in ``layout`` writing C in
    ``out_dtype`` on ``device``, of accuracy class ``accuracy`` or a more exact one.

    Args:
        url: base URL of a gemmtune server (``http://host:8000``); default ``$GEMMTUNE_API_URL``.
        db: a results database URL, read directly (used when no ``url`` is given or set);
            default ``$GEMMTUNE_DATABASE_URL`` or ``sqlite:///gemmtune.db``.
        device: the GPU to answer for: :data:`CURRENT` (the default: the current CuPy device,
            if any), a name, a :class:`~tuner.answers.device_kind.DeviceSpec` (name, arch, SM count:
            a GPU with no results of its own is then answered from GPUs of its kind), or
            ``None`` for the fastest config of any device.
        dtype, layout: the inputs' type and how they are stored (``tuner.core.shape``).
        accuracy: the least exact class accepted (``tuner.core.accuracy``): ``exact`` (the
            default) or ``bf16x3`` (float32 emulated on the BF16 tensor cores).
        out_dtype: the type of C: float32 for float32 inputs; float32 or the input type
            for half inputs; None (the default) is the input type, as torch.matmul gives.

    Raises:
        InputError: a dimension outside 1..2**31-1, an unknown dtype, layout, out_dtype
            (or one the input type cannot write) or accuracy, a
            layout no family of the accuracy class computes for the dtype, a device name
            nothing is stored for
            (given without its arch), or an error answer from the server.
        storage.StorageError: ``db`` names no gemmtune database (a missing SQLite file is not
            created).
    """
    shape = Shape(m, n, k, dtype, layout, out_dtype)  # validates, naming the field
    check_accuracy(accuracy)
    asked = _resolve(device)
    url = url or (None if db else os.environ.get(API_URL_ENV_VAR))
    if url:
        return _over_http(url, shape, asked, timeout_s, accuracy)
    return _from_database(db, shape, asked, accuracy)


def _over_http(
    url: str, shape: Shape, device: DeviceSpec | None, timeout_s: float, accuracy: str
) -> Answer:
    import httpx

    body: dict[str, Any] = {
        "m": shape.m,
        "n": shape.n,
        "k": shape.k,
        "dtype": shape.dtype,
        "layout": shape.layout,
        "out_dtype": shape.out,
        "accuracy": accuracy,
    }
    if device is not None:
        body.update(device=device.name, device_arch=device.arch, device_sm_count=device.sm_count)
    try:
        response = httpx.post(f"{url.rstrip('/')}/v1/configs/best", json=body, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise InputError(f"cannot reach gemmtune at {url}: {exc}") from exc
    if response.status_code != 200:
        raise InputError(f"gemmtune at {url} answered {response.status_code}: {response.text}")
    return Answer.from_json(response.json())


@lru_cache(maxsize=8)
def _index(db_url: str) -> BestIndex:
    import storage
    from tuner.answers.index import BestIndex

    # Reading only: a mistyped path is a StorageError naming it, never a new empty database.
    return BestIndex(storage.open_existing_database(db_url), ttl_s=5.0)


def _from_database(
    db: str | None, shape: Shape, device: DeviceSpec | None, accuracy: str
) -> Answer:
    import storage

    snapshot = _index(storage.database_url(db)).refresh_if_due()
    return snapshot.answer(
        shape.m,
        shape.n,
        shape.k,
        shape.dtype,
        shape.layout,
        device=device,
        accuracy=accuracy,
        out_dtype=shape.out,
    )


def config_name(
    shape: Shape,
    *,
    url: str | None = None,
    db: str | None = None,
    device: DeviceArg = CURRENT,
    accuracy: str = DEFAULT_ACCURACY,
) -> str:
    """The name of the config :func:`matmul` runs for ``shape`` (asked as :func:`best` is, once
    per process)."""
    return chosen(shape, url=url, db=db, device=device, accuracy=accuracy)[0]


# What a call runs: the answered config's name and, for a vendor answer (family ``cublaslt``),
# the library algorithm it replays (``Answer.vendor_algorithm``: hex words), else None.
Chosen = tuple[str, tuple[str, ...] | None]


def chosen(
    shape: Shape,
    *,
    url: str | None = None,
    db: str | None = None,
    device: DeviceArg = CURRENT,
    accuracy: str = DEFAULT_ACCURACY,
) -> Chosen:
    """What :func:`matmul` (and ``tuner.torch``) runs for ``shape``: the config's name and the
    vendor algorithm it replays, if any; asked as :func:`best` is, once per process."""
    check_accuracy(accuracy)
    return _chosen(shape, url, db, _resolve(device), accuracy)


# (shape, url, db, device, accuracy) -> what runs, asked once per process.
_configs: dict[tuple[Shape, str | None, str | None, DeviceSpec | None, str], Chosen] = {}


def _chosen(
    shape: Shape, url: str | None, db: str | None, device: DeviceSpec | None, accuracy: str
) -> Chosen:
    key = (shape, url, db, device, accuracy)
    found = _configs.get(key)
    if found is None:
        answer = best(
            shape.m,
            shape.n,
            shape.k,
            url=url,
            db=db,
            device=device,
            dtype=shape.dtype,
            layout=shape.layout,
            accuracy=accuracy,
            out_dtype=shape.out,
        )
        algorithm = answer.vendor_algorithm()
        found = _configs[key] = (answer.name, tuple(algorithm) if algorithm else None)
    return found


def matmul(
    a: Any,
    b: Any,
    alpha: float = 1.0,
    beta: float = 0.0,
    c: Any = None,
    *,
    url: str | None = None,
    db: str | None = None,
    device: DeviceArg = CURRENT,
    accuracy: str = DEFAULT_ACCURACY,
    out_dtype: str | None = None,
) -> Any:
    """``alpha * a @ b + beta * c`` with gemmtune's best kernel for the shape, dtype, layout and
    type of C: strict FP32 for float32 inputs, FP32 sums of the exact products for float16 and
    bfloat16 (beta * C in FP32 too, a half C rounded once); with ``accuracy="bf16x3"``, float32
    inputs may be emulated on the BF16 tensor cores (``tuner.core.accuracy``), where that is
    faster.

    Args:
        a, b: 2-D CuPy arrays of one dtype (float32, float16, or bfloat16 where CuPy has it),
            (M, K) and (K, N). A C-contiguous array is read as it is, and so is the transposed
            view of one (``w.T``, as nn.Linear multiplies: layout NT), without a copy; other
            strides are copied once.
        c: (M, N) C-contiguous array, overwritten with the result, of the type C is written in
            (which it decides when ``out_dtype`` is None); ``None`` allocates one of
            ``out_dtype`` (and then ``beta`` must be 0, there being no C to scale).
        url, db, device: where to look the config up, and for which GPU: by default the
            one running it (see :func:`tuner.client.best`).
        accuracy: the least exact class accepted (``exact``, the default, or ``bf16x3``).
            float32 in a layout only emulated families compute (a transposed view) at
            ``exact`` is copied to NN first.
        out_dtype: the type of C (see :func:`best`); None: ``c``'s dtype when ``c`` is given,
            else the input type, as torch.matmul gives (float32 stays available for half
            inputs).

    Returns:
        ``c``, or the new array.

    Raises:
        InputError: naming the array, when ``a`` or ``b`` is not a 2-D CuPy array of a
            supported dtype, when their dtypes differ, when the shapes do not fit, or when
            ``c`` and ``out_dtype`` disagree or name a type the inputs cannot write.
        ImportError: CuPy is not installed (the message names the extra to install).

    Where the vendor library won the study (family ``cublaslt``), the call is cuBLASLt's
    ``cublasLtMatmul`` with the algorithm the study measured, replayed from the answer (checked
    first with ``cublasLtMatmulAlgoCheck``; where it no longer applies the heuristic's first
    choice runs and a warning is logged).

    The kernel runs on the current stream. A call of a kind seen before (the same shapes,
    strides, dtypes, device and lookup arguments) is a lookup and one kernel launch
    (``tuner.gpu.call_plan``; padded and emulated configs also copy or split), so it can be
    captured in a CUDA graph; the first call of a kind asks for the answer and compiles, and
    must come before capture. One loaded kernel serves every call with its config; the split-K
    kernels (``splitk``, ``warptile_splitk``, ``streamk``, ``skinny``, ``dmma*``, ``hmma_splitk``),
    which keep ticket counters in their module, get one loaded module per stream and calling
    thread, so calls on different streams may run concurrently (see
    :func:`tuner.gpu.loaded.compiled`).
    """
    asked = (url, db, device, accuracy)
    return _run_matmul()(a, b, alpha, beta, c, accuracy, out_dtype, asked, _answer)


def _answer(shape: Shape, asked: tuple[str | None, str | None, DeviceArg, str]) -> Chosen:
    """What runs for ``shape``, asked as :func:`matmul`'s arguments say."""
    url, db, device, accuracy = asked
    return _chosen(shape, url, db, _resolve(device), accuracy)


def _run_matmul() -> Any:
    global _runner
    if _runner is None:
        from tuner.gpu.matmul import run_matmul

        _runner = run_matmul
    return _runner


_runner: Any = None
