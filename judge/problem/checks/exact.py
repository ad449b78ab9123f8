"""`check: {name: exact}`: bit-for-bit equal values (integer outputs, permutations, ...)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from judge.problem.checks.registry import Check, register

if TYPE_CHECKING:
    import torch


@register
class Exact(Check):
    """got == expected everywhere; NaN matches NaN."""

    name: Literal["exact"]

    def ok(self, got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
        return (got == expected) | (got.isnan() & expected.isnan())
