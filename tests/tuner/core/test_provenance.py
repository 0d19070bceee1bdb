"""The one rule for a provenance (tuner.core.provenance): JSON both backends store, bounded in
depth, keys and size, each refusal naming the path inside it; a stored one that breaks the
rule is shown as one key saying why."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tuner.core.provenance import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_KEYS,
    UNREADABLE_KEY,
    ProvenanceError,
    check_provenance,
    provenance_problem,
    readable_provenance,
)


def nested(depth: int) -> dict[str, Any]:
    """``{"a": {"a": ... {}}}`` with ``depth`` objects, built without recursion."""
    top: dict[str, Any] = {}
    inner = top
    for _ in range(depth - 1):
        inner["a"] = {}
        inner = inner["a"]
    return top


def test_what_the_tuner_writes_is_accepted() -> None:
    value = {
        "source": "gpu",
        "rounds": 5,
        "ms_rounds": [1.25, 1.5, 1.0],
        "clocks": {"sm_mhz": 1980, "locked": True, "note": None},
        "seed": 2**63,
        "text": "Ünïcode ✓",
        "pair": (1, 2),
    }
    assert provenance_problem(value) is None
    assert provenance_problem(nested(MAX_DEPTH)) is None
    assert provenance_problem({str(i): i for i in range(MAX_KEYS)}) is None


@pytest.mark.parametrize(
    ("value", "where", "needle"),
    [
        (nested(MAX_DEPTH + 1), ("a",) * MAX_DEPTH, f"nests deeper than {MAX_DEPTH} levels"),
        (nested(256), ("a",) * MAX_DEPTH, "nests deeper"),
        ({"x": [[[[[[[[1]]]]]]]]}, ("x", 0, 0, 0, 0, 0, 0, 0), "nests deeper"),
        ({"x": [1.0, float("nan")]}, ("x", 1), "must be a finite number, got nan"),
        ({"x": float("inf")}, ("x",), "must be a finite number, got inf"),
        ({"x": -float("inf")}, ("x",), "got -inf"),
        ({"x": "a\ud800b"}, ("x",), "lone surrogate '\\ud800'"),
        ({"a\udfffb": 1}, (), "key 'a\\udfffb': must be valid Unicode text"),
        ({"x": "a\x00b"}, ("x",), "must not contain NUL"),
        ({1: "x"}, (), "keys must be strings, got 1"),
        ({"x": 10**30}, ("x",), "must be an integer within +-2^64"),
        ({"x": {1, 2}}, ("x",), "must be a JSON value, got set"),
        ({str(i): i for i in range(MAX_KEYS + 1)}, (), f"at most {MAX_KEYS} keys, got 65"),
        ({"x": "y" * MAX_BYTES}, (), f"must be at most {MAX_BYTES} bytes as JSON"),
        ([1, 2], (), "must be a JSON object, got list"),
    ],
)
def test_each_problem_names_its_path(value: Any, where: tuple[Any, ...], needle: str) -> None:
    problem = provenance_problem(value)
    assert problem is not None
    assert problem.where == where and needle in problem.allowed
    assert str(problem).startswith("`provenance")
    with pytest.raises(ProvenanceError, match="provenance"):
        check_provenance(value)


def test_a_message_is_text_any_response_can_carry() -> None:
    """A bad key is shown escaped and cut, never as the lone surrogate or the megabyte it is."""
    long_key = "k" * 5000
    for value in ({"\ud800": {"\ud800": float("nan")}}, {long_key: float("nan")}):
        problem = provenance_problem(value)
        assert problem is not None
        json.dumps(str(problem), ensure_ascii=False).encode("utf-8")  # no lone surrogate left
        assert len(str(problem)) < 200


def test_far_deeper_nesting_is_refused_without_recursing() -> None:
    problem = provenance_problem(nested(100_000))
    assert problem is not None and "nests deeper" in problem.allowed


def test_a_stored_provenance_that_breaks_the_rule_reads_as_one_key() -> None:
    assert readable_provenance({"worker": "a"}) == {"worker": "a"}
    assert readable_provenance(None) == {}
    shown = readable_provenance({"x": float("nan")})
    assert list(shown) == [UNREADABLE_KEY]
    assert "`provenance.x` must be a finite number" in shown[UNREADABLE_KEY]
    json.dumps(readable_provenance(nested(256)), allow_nan=False).encode("utf-8")


def test_text_that_only_looks_like_an_escaped_nul_is_kept() -> None:
    """The quick test sees ``\\u0000`` in the JSON of a backslash followed by ``u0000``; the
    full walk then finds no NUL, and the provenance is kept as it is."""
    value = {"pattern": "\\u0000", "tuple": (1, 2)}
    assert provenance_problem(value) is None
    assert readable_provenance(value) == value
