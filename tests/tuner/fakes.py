"""Evaluators for tests: one that forwards to another (to change one behaviour), and one that
times every candidate by a fixed arbitrary rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tuner.core.config import Config
from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape
from tuner.kernels.resources import DeviceLimits
from tuner.model.rates import DeviceRates
from tuner.search.evaluator import EvaluatesAtOnce, Evaluator


class Forwarding(EvaluatesAtOnce):
    """Every part of the evaluator protocol forwarded to ``inner``; subclasses override what
    they change (usually :meth:`evaluate`)."""

    def __init__(self, inner: Evaluator) -> None:
        self.inner = inner
        self.device: DeviceLimits = inner.device
        self.families: tuple[str, ...] = inner.families
        self.provenance: dict[str, Any] = dict(inner.provenance)
        self.parallelism = inner.parallelism
        self.kind = inner.kind

    def measured_configs(self, shape: Shape) -> set[str] | None:
        return self.inner.measured_configs(shape)

    def prepare(self, config: Config) -> None:
        self.inner.prepare(config)

    def ready(self, config: Config) -> bool:
        return self.inner.ready(config)

    def evaluate(self, config: Config, shape: Shape) -> Result:
        return self.inner.evaluate(config, shape)

    def compare(
        self,
        configs: Sequence[Config],
        shape: Shape,
        rounds: int,
        budget_ms: float | None = None,
    ) -> list[Comparison]:
        return self.inner.compare(configs, shape, rounds, budget_ms)

    def probe(self) -> DeviceRates | None:
        return self.inner.probe()

    def close(self) -> None:
        self.inner.close()


class AsMeasured(Forwarding):
    """The replay's numbers reported as a GPU reports its own: results that become best
    configs."""

    def __init__(self, inner: Evaluator) -> None:
        super().__init__(inner)
        self.kind = "gpu"

    def evaluate(self, config: Config, shape: Shape) -> Result:
        return replace(self.inner.evaluate(config, shape), evaluator=self.kind)


def rule_ms(name: str) -> float:
    """An arbitrary but fixed time in 1..2 ms for a config name (stable across runs)."""
    return 1 + (sum(ord(ch) * (i + 1) for i, ch in enumerate(name)) % 1000) / 1000


class RuleEvaluator(EvaluatesAtOnce):
    """Times every candidate by :func:`rule_ms`; cuBLAS takes 1.5 ms; records what was asked."""

    families: tuple[str, ...] = ()
    parallelism = 4
    kind = "gpu"

    def __init__(self, device: DeviceLimits) -> None:
        self.device = device
        self.provenance: dict[str, Any] = {"device": device.name}
        self.asked: list[str] = []
        self.prepared: list[str] = []
        self.compared: list[list[str]] = []

    def measured_configs(self, shape: Shape) -> set[str] | None:
        return None

    def prepare(self, config: Config) -> None:
        self.prepared.append(config.name)

    def evaluate(self, config: Config, shape: Shape) -> Result:
        self.asked.append(config.name)
        ms = rule_ms(config.name)
        return Result(
            config.name,
            config.family,
            config.as_dict(),
            "ok",
            ms=ms,
            cublas_ms=1.5,
            ratio=1.5 / ms,
        )

    def compare(
        self,
        configs: Sequence[Config],
        shape: Shape,
        rounds: int,
        budget_ms: float | None = None,
    ) -> list[Comparison]:
        self.compared.append([c.name for c in configs])
        return [
            Comparison(c.name, "ok", None, (rule_ms(c.name),) * rounds, (1.5,) * rounds, 0.0)
            for c in configs
        ]

    def probe(self) -> DeviceRates | None:
        return None

    def close(self) -> None:
        return None
