"""The study's recorder on a SQL database (SQLite or PostgreSQL), through ``storage``.

Each evaluated candidate is committed in its own transaction before the study moves on, so a
crash (even kill -9) loses at most the candidate being measured. Claims make several workers on
one study skip each other's candidates; they are leases that a heartbeat thread renews while the
worker holds any, so a killed worker's candidates go back to the others once its leases expire.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, fields

from sqlalchemy.orm import Session, sessionmaker

import storage
from tuner.core.claims import Claimed
from tuner.core.config import Config
from tuner.core.dims import shape_distance
from tuner.core.errors import InputError
from tuner.core.phases import Phase
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.kernels.families import accuracy_of, parse_config, repinned
from tuner.kernels.resources import DeviceLimits
from tuner.model.rates import DeviceRates
from tuner.search.samplers import Observation


def device_in(device: DeviceLimits) -> storage.DeviceIn:
    return storage.DeviceIn(name=device.name, arch=device.arch, sm_count=device.sm_count)


def shape_in(shape: Shape) -> storage.ShapeIn:
    return storage.ShapeIn(shape.m, shape.n, shape.k, shape.dtype, shape.layout, shape.out)


# A Result holds the measured part of a measurement record: its fields are record fields.
RESULT_FIELDS = tuple(f.name for f in fields(Result))


def measurement_in(
    result: Result,
    study: str | None = None,
    trial_number: int | None = None,
    phase: Phase = Phase.SCREENING,
) -> storage.MeasurementIn:
    """The record storage keeps of ``result`` (trial ``trial_number`` of ``study``, in
    ``phase``), labelled with its family's accuracy class (each class keeps a best config of
    its own). Trusted by construction: the tuner measured it itself, whatever the provenance
    it carries says."""
    return storage.MeasurementIn(
        **asdict(result),
        accuracy=accuracy_of(result.family),
        study=study,
        trial_number=trial_number,
        phase=phase.value,
        trusted=True,
    )


def result_of(row: storage.Measurement) -> Result:
    """A stored measurement as the :class:`Result` that produced it."""
    values = storage.measurement_values(row)
    return Result(**{name: values[name] for name in RESULT_FIELDS})


class SqlRecorder:
    """Records into the gemmtune schema; the schema must be at head (``gemmtune db upgrade``).

    ``sleep`` is how the heartbeat waits between renewals (tests pass one that steps a clock).
    """

    def __init__(
        self,
        sessions: sessionmaker[Session],
        lease_s: float = storage.CLAIM_LEASE_S,
        worker: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.sessions = sessions
        self._sleep = sleep
        # Who holds a claim: the host, the process, this recorder, and which worker of the
        # process it records for (a GPU), to read in the claims table.
        label = f":{worker}" if worker else ""
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}{label}"
        self.lease_s = lease_s
        self._seen: dict[str, int] = {}  # study -> the last measurement id this recorder read
        self._heartbeat: threading.Thread | None = None
        self._claimed_since_beat = False
        self._lock = threading.Lock()

    def record(
        self,
        result: Result,
        device: DeviceLimits,
        shape: Shape,
        study: str,
        trial_number: int | None,
        phase: Phase = Phase.SCREENING,
    ) -> None:
        measurement = measurement_in(result, study, trial_number, phase)
        with self.sessions.begin() as session:
            storage.record_measurement(session, device_in(device), shape_in(shape), measurement)
            if phase == Phase.SCREENING:  # a finalist was claimed when it was screened
                storage.settle_claim(session, study, result.config_name)

    def number(self, study: str, config_name: str, trial_number: int) -> None:
        with self.sessions.begin() as session:
            storage.number_measurement(session, study, config_name, trial_number)

    def trial_lock(self, study: str) -> AbstractContextManager[object]:
        return storage.study_lock(self.sessions.kw["bind"], study)

    def evaluated(self, study: str) -> dict[str, Result]:
        with self.sessions() as session:
            rows = storage.measurements_for_study(session, study)
            self._seen[study] = max((row.id for row in rows), default=0)
            return {row.config_name: result_of(row) for row in rows}

    def recent(self, study: str) -> dict[str, Result]:
        with self.sessions() as session:
            rows = storage.measurements_for_study(session, study, self._seen.get(study, 0))
            if rows:
                self._seen[study] = max(self._seen.get(study, 0), *(row.id for row in rows))
            return {row.config_name: result_of(row) for row in rows}

    def claim(self, study: str, config_name: str, budget: int | None = None) -> Claimed:
        with self.sessions.begin() as session:
            outcome = storage.claim_candidate(
                session, study, config_name, self.worker, self.lease_s, budget
            )
        if outcome:
            self._keep_alive()
        return outcome

    def held_elsewhere(self, study: str) -> set[str]:
        with self.sessions() as session:
            return storage.live_claims(session, study, self.worker)

    def claimed(self, study: str) -> int:
        with self.sessions() as session:
            return storage.open_claims(session, study)

    def _keep_alive(self) -> None:
        """Make sure the heartbeat runs; it stops once this worker holds no open claim."""
        with self._lock:
            self._claimed_since_beat = True
            if self._heartbeat is None:
                self._heartbeat = threading.Thread(
                    target=self._beat, name=f"claims-{self.worker}", daemon=True
                )
                self._heartbeat.start()

    def _beat(self) -> None:
        while True:
            self._sleep(self.lease_s / 3)
            try:
                with self.sessions.begin() as session:
                    held = storage.renew_claims(session, self.worker, self.lease_s)
            except Exception:  # the database went away: the leases lapse, others take over
                held = 0
            with self._lock:
                if not held and not self._claimed_since_beat:
                    self._heartbeat = None
                    return
                self._claimed_since_beat = False

    def release(self, study: str, config_name: str) -> None:
        with self.sessions.begin() as session:
            storage.release_claim(session, study, config_name)

    def history(
        self, device: DeviceLimits, dtype: str, layout: str, out_dtype: str
    ) -> list[Observation]:
        with self.sessions() as session:
            rows = storage.fastest_ok_times(session, device.name, dtype, layout, out_dtype)
        return [
            Observation(Shape(m, n, k, dtype, layout, out_dtype), name, ms)
            for m, n, k, name, ms in rows
        ]

    def rates(self, device: DeviceLimits) -> DeviceRates | None:
        """The newest rates stored for ``device``, when all four were probed."""
        with self.sessions() as session:
            row = storage.device_rates(session, device.name)
        if row is None:
            return None
        ffma, fp64, dram, launch = (
            row.ffma_tflops,
            row.fp64_tensor_tflops,
            row.dram_tb_s,
            row.launch_us,
        )
        if ffma is None or fp64 is None or dram is None or launch is None:
            return None
        source = str((row.provenance or {}).get("source") or f"stored for {device.name}")
        return DeviceRates(ffma, fp64, dram, launch, source)

    def record_rates(self, device: DeviceLimits, rates: DeviceRates) -> None:
        stored = storage.RatesIn(
            ffma_tflops=rates.ffma_tflops,
            fp64_tensor_tflops=rates.fp64_tensor_tflops,
            dram_tb_s=rates.dram_tb_s,
            launch_us=rates.launch_us,
            provenance={"source": rates.source},
        )
        with self.sessions.begin() as session:
            storage.record_device_rates(session, device_in(device), stored)

    def neighbours(self, device: DeviceLimits, shape: Shape, limit: int) -> list[str]:
        """Best configs of the nearest tuned shapes on this device (never this shape itself);
        where a shape has no best config but replayed times (a study on a replay table), the
        fastest of those: a search may start from them, though no answer is built on them. A
        config tuned writing another type of C than ``shape``'s comes with its OUT set for
        ``shape``'s (the same tiles), or not at all where its family cannot write that type."""
        with self.sessions() as session:
            rows = storage.best_configs(session, device.name)
            replayed = storage.replayed_fastest_per_shape(session, device.name)
        tuned = [
            ((r.shape.m, r.shape.n, r.shape.k), r.measurement.config_name, r.shape.out_dtype)
            for r in rows
        ]
        bested = {dims for dims, _, _ in tuned}
        tuned += [(dims, *found) for dims, found in replayed.items() if dims not in bested]
        scored = sorted(
            (shape_distance(shape.dims, dims), name, out_dtype)
            for dims, name, out_dtype in tuned
            if dims != (shape.m, shape.n, shape.k)
        )
        names: list[str] = []
        for _, name, out_dtype in scored:
            try:
                config: Config | None = parse_config(name)
            except InputError:  # a name written by an older tuner with other parameters
                continue
            if out_dtype != shape.out and config is not None:
                config = repinned(config, shape)
            if config is not None and config.name not in names:
                names.append(config.name)
        return names[:limit]
