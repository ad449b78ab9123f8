"""Named output checks (DESIGN.md §3 `check:`): tiny functions selected by the spec.

A check maps (got, expected) chunks to a boolean "ok" mask; `run_check` walks the tensors in
chunks (large outputs stay within memory) and gathers the evidence WRONG_ANSWER shows: worst
absolute and relative error, NaN/Inf counts, and up to five mismatches (index, got, expected).
"""
from __future__ import annotations

from typing import Callable

import torch

from judge.contract.report import CheckResult, Mismatch
from judge.problem.spec import AllClose, Exact

MAX_MISMATCHES = 5
CHUNK = 1 << 25


def allclose(spec: AllClose, g: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """|g - e| <= atol + rtol*|e| where e is finite; NaN must meet NaN, ±Inf the same ±Inf."""
    within = ((g - e).abs() <= spec.atol + spec.rtol * e.abs()) & torch.isfinite(g)
    same_special = (torch.isnan(g) & torch.isnan(e)) | (torch.isinf(e) & (g == e))
    return torch.where(torch.isfinite(e), within, same_special)


def exact(spec: Exact, g: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    return (g == e) | (torch.isnan(g) & torch.isnan(e))


CHECKS: dict[str, Callable[..., torch.Tensor]] = {"allclose": allclose, "exact": exact}


def run_check(spec: AllClose | Exact, output: str, got: torch.Tensor, exp: torch.Tensor) -> CheckResult:
    """Apply the spec's named check to one output; a shape mismatch is itself a failure."""
    if tuple(got.shape) != tuple(exp.shape):
        return CheckResult(check=spec.name, output=output, passed=False, numel=got.numel(),
                           n_bad=got.numel(), message=f"reference has shape {tuple(exp.shape)}, "
                           f"the output {tuple(got.shape)}")
    fn = CHECKS[spec.name]
    wide = torch.float64 if got.dtype.is_floating_point or exp.dtype.is_floating_point else torch.int64
    g_all, e_all = got.reshape(-1), exp.to(got.device).reshape(-1)
    n_bad = nan = inf = 0
    max_abs = max_rel = 0.0
    mismatches: list[Mismatch] = []
    for start in range(0, g_all.numel(), CHUNK):
        g = g_all[start:start + CHUNK].to(wide)
        e = e_all[start:start + CHUNK].to(wide)
        bad = ~fn(spec, g, e)
        n_bad += int(bad.sum())
        if wide == torch.float64:
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


def _unravel(flat: int, shape: torch.Size) -> list[int]:
    idx = []
    for dim in reversed(list(shape)):
        idx.append(flat % dim)
        flat //= dim
    return idx[::-1]
