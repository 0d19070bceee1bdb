"""tuner.torch with real torch tensors on a machine without a GPU: errors that name the
argument, the custom op's fake implementation and the Linear module. Skipped where torch is not
installed (``test_checks.py`` runs the checks on stand-ins, and the import error, everywhere)."""

from __future__ import annotations

import pytest

from tuner.core.errors import InputError

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tt() -> object:
    import tuner.torch

    tuner.torch.matmul  # noqa: B018 - loads tuner.torch.ops, which registers the custom op
    return tuner.torch


def test_cpu_tensors_are_refused_by_name(tt: object) -> None:
    import tuner.torch

    with pytest.raises(InputError, match=r"`a` is on cpu: .*a.cuda\(\)"):
        tuner.torch.matmul(torch.randn(2, 3), torch.randn(3, 2))
    with pytest.raises(InputError, match=r"`x` is on cpu"):
        tuner.torch.linear(torch.randn(5, 3), torch.randn(4, 3))
    with pytest.raises(InputError, match="`weight` must be a 2-D tensor"):
        tuner.torch.linear(torch.randn(5, 3), torch.randn(3))


def test_the_fake_implementation_gives_shape_and_dtype(tt: object) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(8, 16, device="cuda", dtype=torch.bfloat16)
        b = torch.empty(16, 4, device="cuda", dtype=torch.bfloat16)
        y = torch.ops.gemmtune.matmul(a, b, None, None, None, None, "exact")
        assert (tuple(y.shape), y.dtype) == ((8, 4), torch.bfloat16)
        batched = torch.ops.gemmtune.matmul(
            a.expand(3, 8, 16), b, None, torch.float32, None, None, "exact"
        )
        assert (tuple(batched.shape), batched.dtype) == ((3, 8, 4), torch.float32)
        with pytest.raises(InputError, match="a's last dimension must equal b's second last"):
            torch.ops.gemmtune.matmul(a, a, None, None, None, None, "exact")


def test_linear_from_linear_shares_the_parameters(tt: object) -> None:
    import tuner.torch

    plain = torch.nn.Linear(6, 3)
    ours = tuner.torch.Linear.from_linear(plain, db="sqlite:///x.db")
    assert ours.weight is plain.weight and ours.bias is plain.bias
    assert (ours.in_features, ours.out_features, ours.db) == (6, 3, "sqlite:///x.db")
    no_bias = tuner.torch.Linear.from_linear(torch.nn.Linear(6, 3, bias=False))
    assert no_bias.bias is None


def test_replace_linears_swaps_every_plain_linear(tt: object) -> None:
    import tuner.torch

    model = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(8, 2))
    )
    assert tuner.torch.replace_linears(model) is model
    assert [type(m).__name__ for m in model.modules()].count("Linear") == 2
    assert all(
        isinstance(m, tuner.torch.Linear) for m in model.modules() if isinstance(m, torch.nn.Linear)
    )
    assert isinstance(tuner.torch.replace_linears(torch.nn.Linear(2, 2)), tuner.torch.Linear)
