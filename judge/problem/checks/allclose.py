"""`check: {name: allclose, rtol, atol}`: the tolerance of floating-point outputs."""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field

from judge.problem.checks.registry import Check, register

if TYPE_CHECKING:
    import torch


@register
class AllClose(Check):
    """|got - expected| <= atol + rtol * |expected|, NaN must match NaN, Inf must match Inf."""

    name: Literal["allclose"]
    rtol: float = Field(ge=0)
    atol: float = Field(ge=0)

    def ok(self, got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
        """Within the tolerance where `expected` is finite; NaN must meet NaN, ±Inf the same ±Inf."""
        g, e = got, expected
        within = ((g - e).abs() <= self.atol + self.rtol * e.abs()) & g.isfinite()
        same_special = (g.isnan() & e.isnan()) | (e.isinf() & (g == e))
        return within.where(e.isfinite(), same_special)
