"""Hidden workloads (docs/security.md): test shapes nobody sees before the verdict, drawn per run.

A kernel written for the public shapes (tests and benchmarks) can be correct on exactly those and
wrong elsewhere. So each run adds a few test cases drawn from the spec's domain with the run's
secret (deterministic given it, so a run can be replayed):

- a scalar that takes at most two values across the public tests (a head size, a flag, a fixed
  vocabulary) keeps one of them, as do float scalars;
- any other int scalar is drawn log-uniformly between its smallest and largest value in the
  tests, as a multiple of the greatest common divisor of those values (an even `dim` stays
  even): the envelope the public tests already cover, so a correct general kernel passes;
- the draw is then shrunk (the largest scalar halved, never below its smallest test value)
  until it allocates no more bytes and needs no more FLOPs than the largest test, so a hidden
  case costs no more than a test already does; a draw equal to a public workload (test or
  benchmark) is drawn again.
"""
from __future__ import annotations

import math
import random

from judge.problem.spec import Problem, Workload

DEFAULT_COUNT = 2
ATTEMPTS = 64


def draw(problem: Problem, secret: int, count: int = DEFAULT_COUNT) -> list[Workload]:
    """Up to `count` hidden workloads for this run (fewer when the domain has no room for them)."""
    from judge.problem.workloads import derive_seed

    spec = problem.spec
    public = [dict(w) for w in spec.tests + spec.benchmarks]
    tests = [dict(w) for w in spec.tests]
    if count <= 0 or not problem.scalars:
        return []
    rng = random.Random(derive_seed(secret, spec.seed, "hidden"))
    cap_bytes = max(_alloc_bytes(problem, w) for w in spec.tests)
    cap_flops = max(float(problem.flops(w)) for w in spec.tests)
    out: list[Workload] = []
    for _ in range(ATTEMPTS * count):
        if len(out) == count:
            break
        w = _one(problem, tests, rng, cap_bytes, cap_flops)
        if w is not None and w not in public and w not in out:
            out.append(w)
    return out


def _domain(problem: Problem, public: list[Workload]) -> dict[str, tuple]:
    """Per scalar: ("choice", values) or ("range", low, high, step)."""
    dom: dict[str, tuple] = {}
    for p in problem.scalars:
        values = sorted({w[p.name] for w in public if p.name in w})
        if len(values) <= 2 or not all(isinstance(v, int) for v in values) or p.ctype.scalar != "int":
            dom[p.name] = ("choice", values)
        else:
            step = math.gcd(*(int(v) for v in values)) or 1  # all ints here
            low = max(step, -(-values[0] // step) * step) if values[0] > 0 else values[0]
            dom[p.name] = ("range", low, values[-1], step)
    return dom


def _one(problem: Problem, public: list[Workload], rng: random.Random, cap_bytes: int,
         cap_flops: float) -> Workload | None:
    dom = _domain(problem, public)
    w: Workload = {}
    for name, d in dom.items():
        if d[0] == "choice":
            w[name] = rng.choice(d[1])
        else:
            _, low, high, step = d
            lo = max(low, 1)
            x = math.exp(rng.uniform(math.log(lo), math.log(max(high, lo))))
            w[name] = min(high, max(low, int(round(x / step)) * step))
    for _ in range(200):
        if _alloc_bytes(problem, w) <= cap_bytes and float(problem.flops(w)) <= cap_flops:
            return w
        big = [n for n, d in dom.items() if d[0] == "range" and w[n] > d[1]]
        if not big:
            return None
        name = max(big, key=lambda n: w[n])
        _, low, _, step = dom[name]
        w[name] = max(low, (w[name] // 2) // step * step)
    return None


def _alloc_bytes(problem: Problem, w: Workload) -> int:
    total = 0
    for p in problem.tensors:
        try:
            total += math.prod(problem.shape_of(p.name, w)) * p.ctype.element.itemsize  # type: ignore[union-attr]
        except (ValueError, ZeroDivisionError):
            return 1 << 62
    return total
