"""A workload named on a command line (`judge test --shape "M=4096,N=4096,K=4096"`), read and checked
against the problem's signature as its own tests are (judge/problem/spec.py's `workload_errors`)."""
from __future__ import annotations

import re

from judge.problem.spec import Problem, Workload, workload_errors, workload_id

_INT = re.compile(r"[+-]?\d+")


class WorkloadError(ValueError):
    """Text that names no workload of the problem: every reason, in one message."""


def parse(problem: Problem, text: str) -> Workload:
    """`M=4096,N=4096,K=4096` (spaces allowed) → {"M": 4096, ...}, checked; WorkloadError if not."""
    w: Workload = {}
    reasons: list[str] = []
    for part in (x.strip() for x in text.split(",")):
        if not part:
            continue
        name, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not name or not value:
            reasons.append(f"{part!r} is not NAME=VALUE")
            continue
        if name in w:
            reasons.append(f"{name} is given twice")
            continue
        try:
            w[name] = int(value) if _INT.fullmatch(value) else float(value)
        except ValueError:
            reasons.append(f"{name}={value}: not a number")
    if not reasons:
        reasons = workload_errors(problem, w)
    if reasons:
        scalars = ", ".join(f"{p.name} ({p.type})" for p in problem.scalars)
        example = workload_id(problem.spec.tests[-1])
        raise WorkloadError(f"{text!r} is not a workload of {problem.name}: {'; '.join(reasons)} "
                            f"(its scalars: {scalars}; e.g. {example})")
    return w
