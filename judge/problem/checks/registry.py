"""The check registry: every `check:` a problem.yaml may name, each a pydantic model that carries
its parameters and its ok mask together.

A check is a `Check` subclass whose `name` field is a one-value `Literal` (the name problem.yaml
uses), decorated with `@register`; the module defining it is imported by
`judge/problem/checks/__init__.py`. `judge.problem.spec` builds the `check:` field from
`union()`, so a new check needs nothing in spec.py. This module (and every check module) stays
free of a top-level torch import: loading a problem never imports torch.
"""
from __future__ import annotations

import typing
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, model_validator

if TYPE_CHECKING:
    import torch


class Check(BaseModel):
    """One output check: its fields are the `check:` mapping of problem.yaml."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    _root: Path | None = PrivateAttr(default=None)  # the problem folder (validation context "root")

    @model_validator(mode="after")
    def _bind_root(self, info: ValidationInfo) -> Check:
        if isinstance(info.context, dict) and info.context.get("root") is not None:
            self._root = Path(info.context["root"])
        return self

    @property
    def root(self) -> Path | None:
        """The folder of the problem this check was loaded with (None when built by hand)."""
        return self._root

    def ok(self, got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
        """The ok mask of one chunk: `got` and `expected` are 1-D, the same length, both float64
        (when either output is floating point) or both int64; return a bool tensor of that length."""
        raise NotImplementedError

    def problems(self, root: Path) -> list[tuple[str, str]]:
        """Load-time errors the schema cannot see: (field under `check`, message) pairs."""
        return []


CHECKS: dict[str, type[Check]] = {}
_C = TypeVar("_C", bound=Check)


def register(cls: type[_C]) -> type[_C]:
    """Add a check under the name its `name: Literal[...]` field declares."""
    values = typing.get_args(cls.__pydantic_fields__["name"].annotation)
    if len(values) != 1 or not isinstance(values[0], str):
        raise TypeError(f"{cls.__name__}.name must be a Literal of one string, the name problem.yaml uses")
    if values[0] in CHECKS and CHECKS[values[0]] is not cls:
        raise TypeError(f"check {values[0]!r} is registered twice ({CHECKS[values[0]].__name__}, {cls.__name__})")
    CHECKS[values[0]] = cls
    return cls


def union() -> Any:
    """The type of problem.yaml's `check:` field: the registered checks, told apart by `name`."""
    models = tuple(CHECKS.values())
    if len(models) == 1:
        return models[0]
    return Annotated[Union[models], Field(discriminator="name")]  # noqa: UP007 (a runtime tuple)


def branch_names() -> set[str]:
    """What pydantic writes into an error's path for the union's branches (hidden from users)."""
    return set(CHECKS) | {m.__name__ for m in CHECKS.values()}
