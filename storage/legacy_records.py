"""Measurement records written before phase, trust and evaluator were fields, read as today's.

Older exports and uploads said a measurement was a finalist's side-by-side re-measurement by a
study name ending in ``|finalists`` or by ``"phase": "final"`` in its provenance, and that it was
not to be trusted by ``"trusted": false`` there. Schema revision 0009 moved stored rows to the
``phase`` and ``trusted`` columns; records that arrive in the old form take the same way in, so
they store, compete for the best config and deduplicate exactly like the rows migrated. A
replayed result always named its tables in its provenance (``replayed_from``); revision 0011 marks
such rows ``replay`` (``tuner.core.evaluators``), and a record that names them arrives so marked.
"""

from __future__ import annotations

from dataclasses import replace

from storage.inputs import MeasurementIn
from tuner.core.evaluators import REPLAYED_FROM, EvaluatorKind
from tuner.core.phases import Phase

FINALISTS_SUFFIX = "|finalists"
PHASE_KEY = "phase"
TRUSTED_KEY = "trusted"


def from_legacy(m: MeasurementIn) -> MeasurementIn:
    """``m`` with what its study name and provenance said of its phase and trust moved into
    ``phase`` and ``trusted`` (either form marking it final makes it final; an old
    ``"trusted": false`` makes it untrusted), and marked replayed when its provenance names
    replay tables; ``m`` itself when none of that changes it."""
    provenance = dict(m.provenance)
    final = m.phase == Phase.FINAL
    if provenance.get(PHASE_KEY) == Phase.FINAL:
        final = True
        del provenance[PHASE_KEY]
    study = m.study
    if study is not None and study.endswith(FINALISTS_SUFFIX):
        final, study = True, study.removesuffix(FINALISTS_SUFFIX)
    trusted = m.trusted
    said = provenance.get(TRUSTED_KEY)
    if isinstance(said, bool):
        trusted = trusted and said
        del provenance[TRUSTED_KEY]
    evaluator = EvaluatorKind.REPLAY.value if REPLAYED_FROM in provenance else m.evaluator
    if provenance == m.provenance and study == m.study and evaluator == m.evaluator:
        return m
    phase = Phase.FINAL if final else Phase.SCREENING
    return replace(
        m,
        study=study,
        provenance=provenance,
        phase=phase.value,
        trusted=trusted,
        evaluator=evaluator,
    )
