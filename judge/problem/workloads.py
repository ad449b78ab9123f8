"""Seeded inputs for a workload, drawn straight into device buffers, and the reference call.

Seeds mix the run's secret with the spec's public seed, the phase, the workload and the
tensor name, so every run, case and timed slot gets fresh inputs nobody can predict, while a
run can be replayed from its secret. Nothing here ever reaches the worker but buffer handles.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable

import torch

from judge.problem import pyfile
from judge.problem.spec import InputSpec, Problem, Workload


def derive_seed(*parts: object) -> int:
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


def fill_input(out: torch.Tensor, spec: InputSpec, scale: float, seed: int,
               low: float | None = None, high: float | None = None) -> None:
    """Draw `out` in place: randn * scale, U[low, high) * scale, or randint[low, high).
    `low`/`high` are the evaluated bounds (default: the spec's, when they are numbers)."""
    low = float(spec.low) if low is None else low
    high = float(spec.high) if high is None else high
    g = torch.Generator(device=out.device).manual_seed(seed)
    if spec.init == "randint":
        out.copy_(torch.randint(int(low), int(high), out.shape, generator=g,
                                device=out.device, dtype=torch.int64))
        return
    # Drawn in float32 and scaled in float32, then rounded once to out's dtype. A float32 `out` is
    # drawn in place (the same values, one pass instead of four: the judge re-draws every timed
    # call's inputs); a 16-bit one gets the product written into it by the multiply; an FP8 one
    # (no arithmetic is defined on it) by a cast of the product.
    x = out if out.dtype == torch.float32 else torch.empty(out.shape, dtype=torch.float32, device=out.device)
    if spec.init == "randn":
        x.normal_(generator=g)
    else:
        x.uniform_(low, high, generator=g)
    if x is out:
        if scale != 1.0:
            out.mul_(scale)
    elif out.dtype.is_floating_point and out.element_size() == 1:
        out.copy_(x.mul_(scale))
    else:
        torch.mul(x, scale, out=out)


def fill_inputs(problem: Problem, workload: Workload, tensors: dict[str, torch.Tensor],
                secret: int, phase: str) -> None:
    for p in problem.tensors:
        if p.ctype.is_output:
            continue
        spec = problem.spec.inputs.get(p.name, InputSpec())
        scale = float(problem.scales[p.name](workload)) if p.name in problem.scales else 1.0
        seed = derive_seed(secret, problem.spec.seed, phase, sorted(workload.items()), p.name)
        lo, hi = problem.bounds[p.name] if p.name in problem.bounds else (None, None)
        fill_input(tensors[p.name], spec, scale, seed, None if lo is None else float(lo(workload)),
                   None if hi is None else float(hi(workload)))


def poison(t: torch.Tensor, byte: int) -> None:
    """Fill with a byte pattern whose value is |x| >= 2 or NaN (one of judge/worker/protocol.py's
    POISON_BYTES): an unwritten element shows."""
    if t.numel():
        t.view(torch.uint8).fill_(byte)


def load_function(problem: Problem, ref: str) -> Callable:
    return pyfile.load_function(*problem.impl_path(ref))


def reference_outputs(problem: Problem, workload: Workload,
                      tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Run the problem's reference on the inputs; a single returned tensor is the only output."""
    fn = load_function(problem, problem.spec.reference)
    args: dict[str, torch.Tensor | int | float] = {p.name: tensors[p.name] for p in problem.tensors
                                                   if not p.ctype.is_output}
    args.update({p.name: workload[p.name] for p in problem.scalars})
    with torch.no_grad():
        out = fn(**args)
    return as_outputs(problem, out)


def as_outputs(problem: Problem, out) -> dict[str, torch.Tensor]:
    names = [p.name for p in problem.outputs]
    if isinstance(out, torch.Tensor):
        if len(names) != 1:
            raise TypeError(f"returned one tensor for {len(names)} outputs ({', '.join(names)})")
        return {names[0]: out}
    if isinstance(out, dict) and set(out) == set(names):
        return out
    raise TypeError(f"must return a tensor or a dict with keys {names}, got {type(out).__name__}")
