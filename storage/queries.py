"""Read path: best configs, filtered measurement lists, a device's history.

All functions take the caller's session and return mapped rows (whose device, shape and
measurement relationships are already loaded), never dicts: shaping a response is the API's job.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Select, case, func, select
from sqlalchemy.orm import Session, contains_eager

from storage.inputs import DeviceIn, ShapeIn
from storage.models import BestConfig, Device, DeviceRates, Measurement, Shape
from tuner.core.evaluators import EvaluatorKind
from tuner.core.phases import Phase
from tuner.core.shape import STORED_OUT_DTYPE

MAX_PAGE = 1000


def find_device(session: Session, device: DeviceIn) -> Device | None:
    """The stored device equal to ``device``, if any."""
    return session.scalars(
        select(Device).where(
            Device.name == device.name,
            Device.arch == device.arch,
            Device.sm_count == device.sm_count,
        )
    ).one_or_none()


def find_shape(session: Session, shape: ShapeIn) -> Shape | None:
    """The stored shape equal to ``shape`` (dtype, layout and type of C included), if any."""
    return session.scalars(
        select(Shape).where(
            Shape.m == shape.m,
            Shape.n == shape.n,
            Shape.k == shape.k,
            Shape.dtype == shape.dtype,
            Shape.layout == shape.layout,
            Shape.out_dtype == shape.out_dtype,
        )
    ).one_or_none()


def _best_query(
    device_name: str | None, accuracies: Collection[str] | None = None
) -> Select[BestConfig]:
    query = (
        select(BestConfig)
        .join(BestConfig.device)
        .join(BestConfig.shape)
        .join(BestConfig.measurement)
        .options(
            contains_eager(BestConfig.device),
            contains_eager(BestConfig.shape),
            contains_eager(BestConfig.measurement),
        )
        # The write paths never make a replayed time a best; a row older than that rule (or
        # written by hand) is not served either.
        .where(Measurement.evaluator == EvaluatorKind.GPU.value)
    )
    if device_name is not None:
        query = query.where(Device.name == device_name)
    if accuracies is not None:
        query = query.where(BestConfig.accuracy.in_(_classes(accuracies)))
    return query


def _classes(accuracies: Collection[str]) -> list[str]:
    """The accuracy classes asked for, refusing a bare string (its letters are not classes)."""
    if isinstance(accuracies, str) or not all(isinstance(a, str) for a in accuracies):
        raise ValueError(
            f"`accuracies` must be a collection of accuracy class names, got {accuracies!r}"
        )
    return sorted(accuracies)


def best_for(
    session: Session,
    device_name: str | None,
    m: int,
    n: int,
    k: int,
    dtype: str = "float32",
    layout: str = "NN",
    *,
    accuracies: Collection[str] | None = None,
    out_dtype: str = STORED_OUT_DTYPE,
) -> tuple[BestConfig, Measurement] | None:
    """The best config for exactly this shape on ``device_name`` (``None``: fastest anywhere).

    Args:
        accuracies: the accuracy classes the caller accepts (e.g. ``{"exact"}`` for strict
            FP32 only); ``None`` takes any. Of the best rows that qualify, the fastest wins.
    """
    query = (
        _best_query(device_name, accuracies)
        .where(
            Shape.m == m,
            Shape.n == n,
            Shape.k == k,
            Shape.dtype == dtype,
            Shape.layout == layout,
            Shape.out_dtype == out_dtype,
        )
        .order_by(Measurement.ms, BestConfig.id)
        .limit(1)
    )
    best = session.scalars(query).first()
    return None if best is None else (best, best.measurement)


def fastest_replayed(
    session: Session,
    device_name: str,
    m: int,
    n: int,
    k: int,
    dtype: str = "float32",
    layout: str = "NN",
    *,
    accuracies: Collection[str] | None = None,
    out_dtype: str = STORED_OUT_DTYPE,
) -> Measurement | None:
    """What studies run on a replay table found for exactly this shape on ``device_name``: of
    its replayed ``ok`` times (``tuner.core.evaluators``), a final re-measurement before
    screening times, then the fastest, then the first stored (the best config's rule). Never a
    best config, which only times measured on the device are; a bench on a replay reads this.
    """
    query = (
        select(Measurement)
        .join(Measurement.device)
        .join(Measurement.shape)
        .where(
            Device.name == device_name,
            Shape.m == m,
            Shape.n == n,
            Shape.k == k,
            Shape.dtype == dtype,
            Shape.out_dtype == out_dtype,
            Shape.layout == layout,
            Measurement.evaluator == EvaluatorKind.REPLAY.value,
            Measurement.status == "ok",
            Measurement.ms.is_not(None),
            Measurement.trusted.is_(True),
        )
        .order_by(
            case((Measurement.phase == Phase.FINAL.value, 0), else_=1),
            Measurement.ms,
            Measurement.id,
        )
        .limit(1)
    )
    if accuracies is not None:
        query = query.where(Measurement.accuracy.in_(_classes(accuracies)))
    return session.scalars(query).first()


def replayed_fastest_per_shape(
    session: Session, device_name: str
) -> dict[tuple[int, int, int], tuple[str, str]]:
    """For each (m, n, k) with replayed ``ok`` times on ``device_name``, the config of the
    fastest and the type of C it wrote: what studies on a replay table found where no best
    config can say it (a search's warm starts read it; answers never do)."""
    query = (
        select(Shape.m, Shape.n, Shape.k, Measurement.config_name, Shape.out_dtype, Measurement.ms)
        .join(Measurement.device)
        .join(Measurement.shape)
        .where(
            Device.name == device_name,
            Measurement.evaluator == EvaluatorKind.REPLAY.value,
            Measurement.status == "ok",
            Measurement.ms.is_not(None),
        )
        .order_by(Measurement.ms.desc(), Measurement.id.desc())
    )
    # Slowest first, so the fastest (the first stored of equals) is written last.
    return {(m, n, k): (name, out) for m, n, k, name, out, _ in session.execute(query)}


def best_configs(session: Session, device: str | None = None) -> list[BestConfig]:
    """Every best config (optionally for one device name), ordered by device, shape, then
    accuracy class."""
    query = _best_query(device).order_by(
        Device.name,
        Device.arch,
        Device.sm_count,
        Shape.m,
        Shape.n,
        Shape.k,
        Shape.dtype,
        Shape.layout,
        Shape.out_dtype,
        BestConfig.accuracy,
    )
    return list(session.scalars(query))


def list_measurements(session: Session, **page: Any) -> tuple[list[Measurement], int]:
    """:func:`stream_measurements` read whole: one page as a list, and the total matching the
    filters (the same arguments)."""
    rows, total = stream_measurements(session, **page)
    return list(rows), total


# Rows a streamed page fetches from the database at a time.
STREAM_CHUNK = 50


def stream_measurements(
    session: Session,
    device: str | None = None,
    family: str | None = None,
    status: str | None = None,
    m_min: int | None = None,
    m_max: int | None = None,
    n_min: int | None = None,
    n_max: int | None = None,
    k_min: int | None = None,
    k_max: int | None = None,
    limit: int = 100,
    offset: int = 0,
    before_id: int | None = None,
) -> tuple[Iterator[Measurement], int]:
    """One page of measurements, most recently stored first (by id), fetched from the database
    :data:`STREAM_CHUNK` rows at a time as the caller reads them (a reader that stops early
    reads no more; the session must stay open meanwhile), and the total matching the filters.

    Dimension bounds are inclusive; ``device`` is a device name. ``before_id`` (keyset paging:
    the last id of the previous page) starts the page after that row, which costs the same on
    every page, where ``offset`` makes the database skip rows one by one.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise ValueError(f"`limit` must be an integer in 1..{MAX_PAGE}, got {limit!r}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"`offset` must be an integer >= 0, got {offset!r}")
    conditions = []
    if family is not None:
        conditions.append(Measurement.family == family)
    if status is not None:
        conditions.append(Measurement.status == status)
    # Device and shape filters by id (no join). The total counts them through their indexes;
    # the page walks ids backwards and tests them as it goes (``+ 0`` keeps SQLite from
    # collecting every match through the index and sorting them all by id first).
    sets: list[tuple[Any, Select[Any]]] = []
    if device is not None:
        sets.append((Measurement.device_id, select(Device.id).where(Device.name == device)))
    bounds = (
        (Shape.m, m_min, m_max),
        (Shape.n, n_min, n_max),
        (Shape.k, k_min, k_max),
    )
    dims = [
        condition
        for column, low, high in bounds
        for condition in (
            column >= low if low is not None else None,
            column <= high if high is not None else None,
        )
        if condition is not None
    ]
    if dims:
        sets.append((Measurement.shape_id, select(Shape.id).where(*dims)))
    counted = (
        select(func.count())
        .select_from(Measurement)
        .where(*conditions, *(column.in_(ids) for column, ids in sets))
    )
    total = session.scalar(counted) or 0
    if before_id is not None:
        conditions.append(Measurement.id < before_id)
    page = (
        select(Measurement)
        .where(*conditions, *((column + 0).in_(ids) for column, ids in sets))
        .order_by(Measurement.id.desc())
        .limit(limit)
        .offset(offset)
        .execution_options(yield_per=STREAM_CHUNK)
    )
    return iter(session.scalars(page)), total


def list_devices(session: Session, trusted_only: bool = False) -> list[Device]:
    """Every device that has been seen (only those a trusted writer vouched for, with
    ``trusted_only``: what resolves a device an answer is asked for), by name."""
    query = select(Device).order_by(Device.name, Device.arch, Device.sm_count)
    if trusted_only:
        query = query.where(Device.trusted.is_(True))
    return list(session.scalars(query))


def trusted_devices_named(session: Session, names: Collection[str]) -> list[Device]:
    """The trusted devices called any of ``names``: what the database knows of those GPUs,
    which an upload or import naming one must agree with."""
    wanted = sorted(set(names))
    if not wanted:
        return []
    query = select(Device).where(Device.name.in_(wanted), Device.trusted.is_(True))
    return list(session.scalars(query.order_by(Device.name, Device.arch, Device.sm_count)))


def measurements_for_study(
    session: Session, study_name: str, after_id: int = 0, phase: Phase = Phase.SCREENING
) -> Sequence[Measurement]:
    """The measurements of a study in one phase (its screening trials unless asked for its
    final re-measurements), in trial order (only those stored after the measurement
    ``after_id``, when given: what other workers added since one last looked).

    Trusted rows only: an upload without the trusted token may name any study (study names are
    deterministic and shown on the dashboard), and must never count as one of its trials, its
    history or its finalists."""
    query = (
        select(Measurement)
        .where(
            Measurement.study == study_name,
            Measurement.phase == phase.value,
            Measurement.id > after_id,
            Measurement.trusted.is_(True),
        )
        .order_by(Measurement.trial_number, Measurement.id)
    )
    return session.scalars(query).all()


# --- the search's view of a device's history ----------------------------------------------


def fastest_ok_times(
    session: Session,
    device_name: str,
    dtype: str = "float32",
    layout: str = "NN",
    out_dtype: str = STORED_OUT_DTYPE,
) -> list[tuple[int, int, int, str, float]]:
    """(m, n, k, config name, fastest ok ms) of every config measured on ``device_name`` by a
    trusted writer for this dtype, layout and type of C: what the search transfers to a new
    shape of that device."""
    query = (
        select(Shape.m, Shape.n, Shape.k, Measurement.config_name, func.min(Measurement.ms))
        .join(Measurement.device)
        .join(Measurement.shape)
        .where(
            Device.name == device_name,
            Shape.dtype == dtype,
            Shape.layout == layout,
            Shape.out_dtype == out_dtype,
            Measurement.status == "ok",
            Measurement.ms.is_not(None),
            Measurement.trusted.is_(True),
        )
        .group_by(Shape.m, Shape.n, Shape.k, Measurement.config_name)
    )
    return [
        (m, n, k, name, float(ms)) for m, n, k, name, ms in session.execute(query) if ms is not None
    ]


# --- Reads of the answers' index, the dashboard and the health check ------------------------


class BestConfigsMark(NamedTuple):
    """What the answers are built from, in six numbers: equal marks mean (short of a row
    changed in place without a new measurement or update time) the same best configs,
    trusted devices and device rates. An in-memory index computes the same from what it holds."""

    bests: int
    best_id_sum: int
    measurement_id_sum: int  # a best replaced changes it: its measurement is another row
    devices: int
    last_device_id: int
    last_rates_id: int


def best_configs_fingerprint(session: Session) -> BestConfigsMark:
    """The database's :class:`BestConfigsMark`: one cheap round trip, so an in-memory index
    can ask it often and read rows only when it differs from its own."""
    row = session.execute(
        select(
            select(func.count(BestConfig.id)).scalar_subquery(),
            select(func.coalesce(func.sum(BestConfig.id), 0)).scalar_subquery(),
            select(func.coalesce(func.sum(BestConfig.measurement_id), 0)).scalar_subquery(),
            select(func.count(Device.id)).where(Device.trusted.is_(True)).scalar_subquery(),
            select(func.coalesce(func.max(Device.id), 0))
            .where(Device.trusted.is_(True))
            .scalar_subquery(),
            select(func.coalesce(func.max(DeviceRates.id), 0)).scalar_subquery(),
        )
    ).one()
    return BestConfigsMark(*(int(value) for value in row))


def best_configs_updated_since(session: Session, since: datetime | None) -> list[BestConfig]:
    """Best configs created or replaced at or after ``since`` (every one for None), by the
    ``updated_at`` index."""
    query = _best_query(None)
    if since is not None:
        query = query.where(BestConfig.updated_at >= since)
    return list(session.scalars(query))


def best_configs_of(session: Session, measurement_ids: Sequence[int]) -> list[BestConfig]:
    """The best configs that are any of ``measurement_ids`` (what a write just made best)."""
    found: list[BestConfig] = []
    for start in range(0, len(measurement_ids), _IDS_PER_QUERY):
        chunk = measurement_ids[start : start + _IDS_PER_QUERY]
        found += session.scalars(_best_query(None).where(BestConfig.measurement_id.in_(chunk)))
    return found


_IDS_PER_QUERY = 500


def devices_after(session: Session, device_id: int) -> list[Device]:
    """Trusted devices stored after the one with id ``device_id`` (what the answers' index
    adds; a device vouched for later, with a lower id, changes the fingerprint's count and so
    is read by the full read that follows)."""
    query = select(Device).where(Device.id > device_id, Device.trusted.is_(True))
    return list(session.scalars(query.order_by(Device.id)))


def count_measurements(session: Session) -> int:
    """How many measurements are stored (every status)."""
    return session.scalar(select(func.count(Measurement.id))) or 0


def ping(session: Session) -> str:
    """Run the cheapest query there is; the backend's name (``sqlite``, ``postgresql``).

    Raises SQLAlchemy's error when the database does not answer.
    """
    session.execute(select(1))
    return session.get_bind().dialect.name


# Preload (api/preload.py): is there anything stored yet?


def holds_measurements(session: Session) -> bool:
    """True when any measurement is stored (a preload then leaves the database alone)."""
    return session.scalar(select(Measurement.id).limit(1)) is not None
