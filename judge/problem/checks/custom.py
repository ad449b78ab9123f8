"""`check: {name: custom, impl: check.py:check}`: a problem's own check, a function in its folder.

The function gets the same chunks as the built-in checks, `check(got, expected)`: 1-D tensors of
the same length (at most `CHUNK` elements of the flattened output, on the output's device), both
float64 when either output is floating point, else both int64. It returns the ok mask: a bool
tensor of that length, True where the element is right. It must not modify its arguments and must
be elementwise (a chunk is any slice of the output). The evidence WRONG_ANSWER shows (worst errors,
NaN/Inf counts, the first mismatches) is gathered around it as for every check.
"""
from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from judge.problem.checks.registry import Check, register
from judge.problem.pyfile import REF_PATTERN, function_def, load_function, split

if TYPE_CHECKING:
    import torch


@register
class Custom(Check):
    """The mask a function of the problem folder computes (`impl: file.py:function`)."""

    name: Literal["custom"]
    impl: str = Field(pattern=REF_PATTERN)

    def problems(self, root: Path) -> list[tuple[str, str]]:
        file, func = self.impl.split(":")
        if not (root / file).resolve().is_relative_to(root.resolve()):
            return [("impl", f"{file} is outside the problem folder {root}")]
        try:
            fn = function_def(root, self.impl)
        except ValueError as e:
            return [("impl", str(e))]
        a = fn.args
        positional = a.posonlyargs + a.args
        takes_two = (len(positional) >= 2 or a.vararg is not None) and len(positional) - len(a.defaults) <= 2
        if not takes_two or None in a.kw_defaults:  # kw_defaults: None marks a required keyword
            return [("impl", f"{func}({ast.unparse(a)}) must take two arguments: (got, expected)")]
        return []

    def function(self) -> Callable:
        if self.root is None:
            raise ValueError(f"custom check {self.impl}: no problem folder (a check loaded outside load_problem)")
        return load_function(*split(self.root, self.impl))

    def ok(self, got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
        import torch

        mask = self.function()(got, expected)
        if not (isinstance(mask, torch.Tensor) and mask.dtype == torch.bool and mask.shape == got.shape):
            what = (f"a {mask.dtype} tensor of shape {tuple(mask.shape)}" if isinstance(mask, torch.Tensor)
                    else f"a {type(mask).__name__}")
            raise TypeError(f"custom check {self.impl} returned {what}, not the ok mask "
                            f"(a bool tensor of shape {tuple(got.shape)})")
        return mask
