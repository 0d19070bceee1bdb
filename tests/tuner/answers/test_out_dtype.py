"""The type of C in answers: an exact answer writes the asked type; a config tuned writing another
type answers only as ``nearest``, re-pinned (never a split-K one); the default rule pins OUT."""

from __future__ import annotations

from tests.tuner.answers.entries import half_nt_entry
from tuner.answers.answer import Answer
from tuner.answers.best import Tuned, Tuning

HMMA = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly1"
SPLIT = "hmma_splitk_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_sk4_dt1_ly1"
CUBE = (4096, 4096, 4096)


def tuned(name: str, ms: float, out_dtype: str, shape: tuple[int, int, int] = CUBE) -> Tuned:
    return half_nt_entry(name, shape, ms, out_dtype)


def ask(tuning: Tuning, out_dtype: str | None, shape: tuple[int, int, int] = CUBE) -> Answer:
    return tuning.answer(*shape, "bfloat16", "NT", out_dtype=out_dtype)


def test_each_type_of_c_is_answered_exactly_by_its_own_rows() -> None:
    tuning = Tuning([tuned(HMMA, 2.0, "float32"), tuned(HMMA + "_out2", 1.5, "bfloat16")], [], {})
    wide, narrow = ask(tuning, "float32"), ask(tuning, None)
    assert (wide.source, wide.name, wide.out_dtype, wide.ms) == ("exact", HMMA, "float32", 2.0)
    assert (narrow.source, narrow.name, narrow.out_dtype) == ("exact", HMMA + "_out2", "bfloat16")
    assert narrow.ms == 1.5


def test_a_float32_c_row_answers_a_half_c_only_as_nearest_and_re_pinned() -> None:
    """What a database from before C had a type holds: float32 C rows only."""
    tuning = Tuning([tuned(HMMA, 2.0, "float32"), tuned(SPLIT, 1.0, "float32")], [], {})
    answer = ask(tuning, None)
    # The faster split-K row writes float32 C only: the hmma one is re-pinned instead.
    assert answer.source == "nearest" and answer.name == HMMA + "_out2"
    assert answer.params["OUT"] == 2 and answer.out_dtype == "bfloat16"
    assert answer.ms == 2.0 and "measured writing float32 C" in answer.note
    assert ask(tuning, "float32").source == "exact"


def test_the_same_type_of_c_nearby_wins_over_another_type_at_the_shape() -> None:
    near = (4096, 4096, 2048)
    tuning = Tuning(
        [tuned(HMMA, 2.0, "float32"), tuned(HMMA + "_out2", 1.0, "bfloat16", near)], [], {}
    )
    answer = ask(tuning, None)
    assert answer.source == "nearest" and answer.measured_on == near
    assert answer.name == HMMA + "_out2" and "measured writing" not in answer.note


def test_nothing_re_pinnable_falls_back_to_the_default_with_out_pinned() -> None:
    tuning = Tuning([tuned(SPLIT, 1.0, "float32")], [], {})
    answer = ask(tuning, None)
    assert answer.source == "default" and answer.family == "hmma"
    assert answer.params["OUT"] == 2 and answer.name.endswith("_dt1_ly1_out2")
    assert "nothing tuned for bfloat16 NT yet" in answer.note


def test_an_answer_from_an_older_server_without_out_dtype_reads_as_float32() -> None:
    answer = ask(Tuning([tuned(HMMA, 2.0, "float32")], [], {}), "float32")
    data = answer.as_json()
    assert data["out_dtype"] == "float32"
    del data["out_dtype"]
    assert Answer.from_json(data).out_dtype == "float32"
    half = ask(Tuning([tuned(HMMA, 2.0, "float32")], [], {}), None)
    assert Answer.from_json(half.as_json()) == half
