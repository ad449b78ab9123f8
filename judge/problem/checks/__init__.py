"""Output checks (`check:` in docs/problem-format.md): the registry of named checks and the evidence walker.

Each check is one module of this package (allclose.py, exact.py, custom.py): a pydantic model of
its `check:` parameters with an `ok(got, expected)` method, registered with `@register`
(registry.py). A check maps (got, expected) chunks to a boolean "ok" mask; `run_check` walks the
tensors in chunks (large outputs stay within memory) and gathers the evidence WRONG_ANSWER shows:
worst absolute and relative error, NaN/Inf counts, and up to five mismatches (index, got,
expected). Importing this package does not import torch (problem.yaml loading goes through it).

Adding a check: a module here defining a registered `Check` subclass, and its import below.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from judge.contract.report import CheckResult, Mismatch

# The checks: importing a module registers its check (the order is the order errors list them).
from judge.problem.checks.allclose import AllClose
from judge.problem.checks.custom import Custom
from judge.problem.checks.exact import Exact
from judge.problem.checks.registry import CHECKS, Check, register, union

if TYPE_CHECKING:
    import torch

__all__ = ["CHECKS", "CHUNK", "MAX_MISMATCHES", "AllClose", "Check", "Custom", "Exact", "passes", "register",
           "run_check", "union"]

MAX_MISMATCHES = 5
CHUNK = 1 << 25


def run_check(spec: Check, output: str, got: torch.Tensor, exp: torch.Tensor) -> CheckResult:
    """Apply the spec's check to one output; a shape mismatch is itself a failure."""
    import torch

    if tuple(got.shape) != tuple(exp.shape):
        return CheckResult(check=spec.name, output=output, passed=False, numel=got.numel(),
                           n_bad=got.numel(), message=f"reference has shape {tuple(exp.shape)}, "
                           f"the output {tuple(got.shape)}")
    n_bad = nan = inf = 0
    max_abs = max_rel = 0.0
    mismatches: list[Mismatch] = []
    for start, g, e in _chunks(got, exp):
        bad = ~spec.ok(g, e)
        n_bad += int(bad.sum())
        if g.dtype == torch.float64:
            nan += int(torch.isnan(g).sum())
            inf += int(torch.isinf(g).sum())
            both = torch.isfinite(g) & torch.isfinite(e)
            diff = torch.where(both, (g - e).abs(), torch.zeros_like(g))
            rel = diff / e.abs().clamp_min(1e-30)
        else:
            diff = rel = (g - e).abs().double()
        if diff.numel():
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float(rel.max()))
        if len(mismatches) < MAX_MISMATCHES and n_bad:
            for f in bad.nonzero()[:MAX_MISMATCHES - len(mismatches), 0].tolist():
                mismatches.append(Mismatch(index=_unravel(start + f, got.shape),
                                           got=float(g[f]), expected=float(e[f])))
    return CheckResult(check=spec.name, output=output, passed=n_bad == 0, numel=got.numel(),
                       n_bad=n_bad, max_abs_err=max_abs, max_rel_err=max_rel, nan_count=nan,
                       inf_count=inf, mismatches=mismatches)


def passes(spec: Check, got: torch.Tensor, exp: torch.Tensor) -> bool:
    """Whether `run_check` would pass, without its evidence: the same chunks, the same widening and
    the same `ok`, the bad elements counted on the device and read once at the end. The re-check of
    timed calls (judge/engine/stash.py) asks this first and `run_check` only for a call that failed:
    the evidence costs five more reductions and a wait per chunk, and a passing call shows none."""
    import torch

    if tuple(got.shape) != tuple(exp.shape):
        return False
    n_bad = torch.zeros((), dtype=torch.int64, device=got.device)
    for _, g, e in _chunks(got, exp):
        n_bad += (~spec.ok(g, e)).sum()
    return int(n_bad) == 0


def _chunks(got: torch.Tensor, exp: torch.Tensor) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """(flat start, got, expected) per CHUNK elements, flattened and widened to float64 (int64 when
    neither is floating point): the checks compare in the wide type, so that no tolerance is
    decided by a rounding of the output's own dtype."""
    import torch

    wide = torch.float64 if got.dtype.is_floating_point or exp.dtype.is_floating_point else torch.int64
    g_all, e_all = got.reshape(-1), exp.to(got.device).reshape(-1)
    for start in range(0, g_all.numel(), CHUNK):
        yield start, g_all[start:start + CHUNK].to(wide), e_all[start:start + CHUNK].to(wide)


def _unravel(flat: int, shape: torch.Size) -> list[int]:
    idx = []
    for dim in reversed(list(shape)):
        idx.append(flat % dim)
        flat //= dim
    return idx[::-1]
