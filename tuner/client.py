"""Ask gemmtune which config to run, and run it.

:func:`best` answers over HTTP (a running ``gemmtune serve``) or straight from a results database,
with the same answer either way (see :mod:`api.lookup`). :func:`matmul` (exported as
``tuner.matmul``) computes ``C = alpha * A @ B + beta * C`` on CuPy arrays with that config,
compiled once per process and GPU architecture (NVRTC, with gemmtune's on-disk cubin cache
underneath); with nothing tuned it uses the rule-chosen default, correct for any shape.

    >>> from tuner.client import best
    >>> best(1000, 1000, 1000, url="http://127.0.0.1:8000").name   # doctest: +SKIP
    'pipelined_bm128_bn64_bk32_wm32_wn32_wni1_tm4_tn4_t256_s4'

:func:`best` never imports CuPy; ``httpx`` is only imported for HTTP.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tuner.config import Config
from tuner.errors import InputError
from tuner.families import parse_config
from tuner.render import KernelSource, render
from tuner.shape import Shape

API_URL_ENV_VAR = "GEMMTUNE_API_URL"


@dataclass(frozen=True)
class BestConfig:
    """The answer: a config, where it came from, and what it measured (``measured_on``)."""

    name: str
    family: str
    params: dict[str, int]
    source: str  # exact | nearest | default
    distance: float | None
    measured_on: tuple[int, int, int] | None
    ms: float | None
    tflops: float | None
    cublas_tflops: float | None
    ratio: float | None
    device: str | None
    note: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> Config:
        return parse_config(self.name)


def best(
    m: int,
    n: int,
    k: int,
    *,
    url: str | None = None,
    db: str | None = None,
    device: str | None = None,
    timeout_s: float = 10.0,
) -> BestConfig:
    """The best config for an m x n x k float32 row-major GEMM.

    Args:
        url: base URL of a gemmtune server (``http://host:8000``); default ``$GEMMTUNE_API_URL``.
        db: a results database URL, read directly (used when no ``url`` is given or set);
            default ``$GEMMTUNE_DATABASE_URL`` or ``sqlite:///gemmtune.db``.
        device: a device name; ``None`` takes the fastest tuned on any device.

    Raises:
        InputError: a dimension outside 1..2**31-1, or an error answer from the server.
    """
    Shape(m, n, k)  # validates, naming the field
    url = url or (None if db else os.environ.get(API_URL_ENV_VAR))
    if url:
        return _over_http(url, m, n, k, device, timeout_s)
    return _from_database(db, m, n, k, device)


def _over_http(
    url: str, m: int, n: int, k: int, device: str | None, timeout_s: float
) -> BestConfig:
    import httpx

    body: dict[str, Any] = {"m": m, "n": n, "k": k}
    if device is not None:
        body["device"] = device
    try:
        response = httpx.post(f"{url.rstrip('/')}/v1/configs/best", json=body, timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise InputError(f"cannot reach gemmtune at {url}: {exc}") from exc
    if response.status_code != 200:
        raise InputError(f"gemmtune at {url} answered {response.status_code}: {response.text}")
    data = response.json()
    measured = data.get("measured_on")
    return BestConfig(
        name=data["name"],
        family=data["family"],
        params=dict(data["params"]),
        source=data["source"],
        distance=data.get("distance"),
        measured_on=None if measured is None else (measured["m"], measured["n"], measured["k"]),
        ms=data.get("ms"),
        tflops=data.get("tflops"),
        cublas_tflops=data.get("cublas_tflops"),
        ratio=data.get("ratio"),
        device=(data.get("device") or {}).get("name"),
        note=data.get("note", ""),
        provenance=dict(data.get("provenance") or {}),
    )


@lru_cache(maxsize=8)
def _index(db_url: str) -> Any:
    import storage
    from api.lookup import BestIndex

    engine = storage.make_engine(db_url)
    if storage.current_revision(engine) is None:
        storage.upgrade(engine)  # an empty database: nothing tuned yet, defaults only
    storage.check_schema(engine)
    return BestIndex(storage.make_session_factory(engine), ttl_s=5.0)


def _from_database(db: str | None, m: int, n: int, k: int, device: str | None) -> BestConfig:
    import storage

    answer = _index(storage.database_url(db)).snapshot().answer(m, n, k, device=device)
    return BestConfig(
        name=answer.name,
        family=answer.family,
        params=dict(answer.params),
        source=answer.source,
        distance=answer.distance,
        measured_on=answer.measured_on,
        ms=answer.ms,
        tflops=answer.tflops,
        cublas_tflops=answer.cublas_tflops,
        ratio=answer.ratio,
        device=None if answer.device is None else answer.device.name,
        note=answer.note,
        provenance=dict(answer.provenance),
    )


# (config name, architecture) -> the compiled kernel and whether its family keeps split-K
# counters in the module; (name, architecture, module copy) -> loaded kernel. The copy is 0
# except for those families, which get one copy per launch site (see :func:`compiled`).
_built: dict[tuple[str, str], tuple[Any, bool]] = {}
_kernels: dict[tuple[str, str, int], tuple[Any, KernelSource]] = {}
_site_copies: dict[tuple[str, str], dict[Hashable, int]] = {}
_configs: dict[tuple[int, int, int, str | None, str | None, str | None], str] = {}
_lock = threading.Lock()


def _arch() -> str:
    import cupy

    major, minor = cupy.cuda.Device().compute_capability
    return f"sm_{major}{minor}"


def compiled(name: str, site: Hashable = 0) -> tuple[Any, KernelSource]:
    """The loaded kernel and its source for a config name, compiled on first use.

    The split-K families (``Family.module_counters``) keep their ticket counters in the loaded
    module, so two of their launches must not overlap: for them each launch ``site`` (what
    :func:`matmul` passes: the CUDA stream handle and the calling thread) gets a module of its
    own, loaded from its own copy of the cubin (:func:`tuner.compile.load_kernel`). Launches
    from one site run one after the other on one stream, which the counters allow. Other
    families share one module per process.
    """
    from tuner.compile import NvrtcCompiler, load_kernel
    from tuner.families import get_family, parse_config

    arch = _arch()
    with _lock:
        built = _built.get((name, arch))
        if built is None:  # first use: render and compile (or find the cached cubin) once
            config = parse_config(name)
            binary = NvrtcCompiler(arch).compile(render(config))
            built = _built[(name, arch)] = (binary, get_family(config.family).module_counters)
        binary, counters = built
        copy = 0
        if counters:
            copies = _site_copies.setdefault((name, arch), {})
            copy = copies.setdefault(site, len(copies))
        key = (name, arch, copy)
        if key not in _kernels:
            _kernels[key] = (load_kernel(binary, copy), binary.source)
        return _kernels[key]


def _config_name(
    m: int, n: int, k: int, url: str | None, db: str | None, device: str | None
) -> str:
    key = (m, n, k, url, db, device)
    name = _configs.get(key)
    if name is None:
        name = best(m, n, k, url=url, db=db, device=device).name
        _configs[key] = name
    return name


def _check(name: str, array: Any, cupy: Any) -> None:
    if not isinstance(array, cupy.ndarray) or array.ndim != 2 or array.dtype != cupy.float32:
        raise InputError(f"`{name}` must be a 2-D cupy float32 array, got {_describe(array)}")


def _describe(array: Any) -> str:
    shape = getattr(array, "shape", None)
    dtype = getattr(array, "dtype", None)
    return f"{type(array).__name__}" + (f" {shape} {dtype}" if shape is not None else "")


def matmul(
    a: Any,
    b: Any,
    alpha: float = 1.0,
    beta: float = 0.0,
    c: Any = None,
    *,
    url: str | None = None,
    db: str | None = None,
    device: str | None = None,
) -> Any:
    """``alpha * a @ b + beta * c`` in strict FP32 with gemmtune's best kernel for the shape.

    Args:
        a, b: 2-D float32 CuPy arrays, (M, K) and (K, N); made C-contiguous if they are not.
        c: (M, N) float32 C-contiguous array, overwritten with the result; ``None`` allocates
            one (and then ``beta`` must be 0, there being no C to scale).
        url, db, device: where to look the config up (see :func:`tuner.client.best`).

    Returns:
        ``c``, or the new array.

    The kernel runs on the current stream. One loaded kernel serves every call with its config;
    the split-K kernels (``splitk``, ``warptile_splitk``, ``streamk``, ``skinny``), which keep
    ticket counters in their module, get one loaded module per stream and calling thread, so
    calls on different streams may run concurrently (see :func:`compiled`).
    """
    import cupy

    _check("a", a, cupy)
    _check("b", b, cupy)
    if a.shape[1] != b.shape[0]:
        raise InputError(f"`a` is {a.shape} and `b` is {b.shape}: inner dimensions differ")
    m, k = a.shape
    n = b.shape[1]
    if c is None:
        if beta != 0:
            raise InputError(f"`beta` must be 0 when `c` is None, got {beta!r}")
        c = cupy.empty((m, n), dtype=cupy.float32)
    else:
        _check("c", c, cupy)
        if c.shape != (m, n) or not c.flags.c_contiguous:
            raise InputError(f"`c` must be C-contiguous with shape {(m, n)}, got {c.shape}")
    shape = Shape(m, n, k)  # 1..2**31-1 each, or InputError naming the dimension
    # The handle alone does not name a stream: each thread's per-thread default stream has
    # the same one.
    site = (cupy.cuda.get_current_stream().ptr, threading.get_ident())
    kernel, source = compiled(_config_name(m, n, k, url, db, device), site)
    from tuner.measure import launch

    launch(
        kernel,
        source,
        shape,
        alpha,
        cupy.ascontiguousarray(a),
        cupy.ascontiguousarray(b),
        beta,
        c,
    )
    return c
