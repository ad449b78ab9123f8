"""The rules of `judge validate` that run a problem's reference on CPU (torch, no GPU): the reference
runs and computes in float64 when given float64, agrees with its float64 self within the problem's
own check, and the check refuses the classic wrong answers.

The inputs are drawn exactly as the judge draws them (`workloads.fill_inputs`, phase `test<i>`),
the expected outputs are the reference's and the verdict is the judge's own `run_check`. The
classic wrong answers are all zeros (`zeros`) and, per output, a flat copy of each input with its
dtype and element count (`copy:<input>`); where one is legitimately right the problem declares it
in `accepts_classic_wrong` (docs/problem-format.md): `always` entries must pass there, `chance` ones
are not asserted either way. Workloads above `MAX_NUMEL` elements or `MAX_FLOPS` are not checked on
CPU; every problem keeps at least one that is.
"""
from __future__ import annotations

import math

import torch

from judge.problem import spec
from judge.problem.checks import run_check
from judge.problem.finding import Finding
from judge.problem.workloads import fill_inputs, reference_outputs

ACCURACY_SECRET = 20261122  # the run secret of the float64 comparison's draws
SECRET = 20261123  # the classic answers' draw (and SMALL_SECRETS more on small workloads)
SMALL_NUMEL = 4_000_000  # the float64 comparison runs on test workloads under this many elements
MAX_NUMEL = 40_000_000  # the classic answers: workloads up to this many elements...
MAX_FLOPS = 2e10  # ... and this many FLOPs (the spec's `flops`)
TINY_NUMEL = 100_000  # workloads this small are drawn under SMALL_SECRETS more secrets too
SMALL_SECRETS = 16
ALWAYS = "always"  # spec.ClassicWrong.kind


class _ReferenceFailed(Exception):
    def __init__(self, finding: Finding):
        self.finding = finding


def check(p: spec.Problem) -> list[Finding]:
    """Every finding of the CPU rules; the first failure of the reference itself stops them."""
    small = [i for i, w in enumerate(p.spec.tests) if p.numel(w) < SMALL_NUMEL]
    checked = [i for i, w in enumerate(p.spec.tests) if cheap(p, w)]
    found = []
    yaml_file = p.root / "problem.yaml"
    if not small:
        found.append(Finding("cpu-workload", yaml_file, f"tests: no workload under {SMALL_NUMEL:,} elements; "
                             "add a small one, so the reference can be checked against float64 on CPU"))
    if not checked:
        found.append(Finding("cpu-workload", yaml_file, f"tests: no workload under {MAX_NUMEL:,} elements and "
                             f"{MAX_FLOPS:g} FLOPs; add one, so the classic wrong answers can be tried on CPU"))
    try:
        found += _accuracy(p, small)
        if checked:
            found += _classic(p, checked)
    except _ReferenceFailed as e:
        found.append(e.finding)
    return found


def cheap(p: spec.Problem, w: spec.Workload) -> bool:
    """Small enough to try the classic answers on CPU."""
    return p.numel(w) <= MAX_NUMEL and float(p.flops(w)) <= MAX_FLOPS


def dtype_of(param: spec.Param) -> torch.dtype:
    assert param.ctype.element is not None
    return getattr(torch, param.ctype.element.dtype)


def draw(p: spec.Problem, i: int, secret: int = SECRET) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The inputs of test workload i as the judge draws them, and the reference's outputs."""
    inputs = _inputs(p, i, secret)
    return inputs, _reference(p, i, inputs)


def classic(p: spec.Problem, w: spec.Workload, inputs: dict[str, torch.Tensor]
            ) -> list[tuple[str, str, torch.Tensor]]:
    """(wrong answer, output, tensor): all zeros per output; per output, every input of its dtype and
    element count reshaped to the output's shape (what a flat device-to-device copy writes)."""
    out = []
    for o in p.outputs:
        shape, dt = p.shape_of(o.name, w), dtype_of(o)
        out.append(("zeros", o.name, torch.zeros(shape, dtype=dt)))
        for name, x in inputs.items():
            if x.dtype == dt and x.numel() == math.prod(shape):
                out.append((f"copy:{name}", o.name, x.reshape(shape)))
    return out


def classic_names(p: spec.Problem, w: spec.Workload) -> set[str]:
    """The classic answers of a workload, without drawing it (what `classic` would name)."""
    names = {"zeros"}
    for o in p.outputs:
        for t in p.tensors:
            if not t.ctype.is_output and dtype_of(t) == dtype_of(o) and \
                    math.prod(p.shape_of(t.name, w)) == math.prod(p.shape_of(o.name, w)):
                names.add(f"copy:{t.name}")
    return names


def _inputs(p: spec.Problem, i: int, secret: int) -> dict[str, torch.Tensor]:
    w = p.spec.tests[i]
    inputs = {t.name: torch.empty(p.shape_of(t.name, w), dtype=dtype_of(t)) for t in p.tensors
              if not t.ctype.is_output}
    fill_inputs(p, w, inputs, secret=secret, phase=f"test{i}")
    return inputs


def _reference(p: spec.Problem, i: int, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    w = p.spec.tests[i]
    file = p.impl_path(p.spec.reference)[0]
    try:
        out = reference_outputs(p, w, inputs)
    except Exception as e:  # noqa: BLE001 — the problem's code: any failure is a finding
        raise _ReferenceFailed(Finding("reference-runs", file, f"{p.spec.reference} raised on tests[{i}] "
                                       f"{{{spec.workload_id(w)}}}: {type(e).__name__}: {e}")) from None
    for o in p.outputs:
        want = p.shape_of(o.name, w)
        if tuple(out[o.name].shape) != want:
            raise _ReferenceFailed(Finding("reference-runs", file, f"{p.spec.reference} returned {o.name} with "
                                           f"shape {tuple(out[o.name].shape)} on tests[{i}] "
                                           f"{{{spec.workload_id(w)}}}; the signature says {want}"))
    return out


def _accuracy(p: spec.Problem, small: list[int]) -> list[Finding]:
    found, failures = [], []
    file = p.impl_path(p.spec.reference)[0]
    for i in small:
        w = p.spec.tests[i]
        inputs = _inputs(p, i, ACCURACY_SECRET)
        native = _reference(p, i, inputs)
        wide = _reference(p, i, {n: x.double() if x.is_floating_point() else x for n, x in inputs.items()})
        for o in p.outputs:
            dtype = dtype_of(o)
            if dtype.is_floating_point and wide[o.name].dtype != torch.float64:
                found.append(Finding("reference-float64", file, f"{o.name} is {wide[o.name].dtype} when the inputs "
                                     "are float64: compute in torch.promote_types(x.dtype, torch.float32), so the "
                                     "float64 run is the exact answer the check compares with"))
                return found
            r = run_check(p.spec.check, o.name, native[o.name].to(dtype), wide[o.name])
            if not r.passed:
                failures.append(f"{{{spec.workload_id(w)}}} {o.name}: {r.n_bad}/{r.numel} bad, max abs "
                                f"{r.max_abs_err:.3g}, max rel {r.max_rel_err:.3g}")
    if failures:
        found.append(Finding("reference-accuracy", p.root / "problem.yaml", "check: the reference in the real "
                             "dtypes fails it against the same reference in float64 (" + "; ".join(failures[:3])
                             + (f"; {len(failures) - 3} more" if len(failures) > 3 else "")
                             + "): a correct kernel rounds at least as much; loosen the tolerance"))
    return found


def _classic(p: spec.Problem, checked: list[int]) -> list[Finding]:
    yaml_file = p.root / "problem.yaml"
    found = []
    refused: dict[str, bool] = {}  # answer → refused on some checked workload (the SECRET draw)
    for i in checked:
        w = p.spec.tests[i]
        secrets = [SECRET] + (list(range(SMALL_SECRETS)) if p.numel(w) <= TINY_NUMEL else [])
        accepted: dict[str, int] = {}  # "zeros → C": draws on which the check passed it, undeclared
        false_claims: dict[str, int] = {}  # the same for `always` declarations it refuses
        for s in secrets:
            inputs, expected = draw(p, i, s)
            for wrong, out, got in classic(p, w, inputs):
                passed = run_check(p.spec.check, out, got, expected[out]).passed
                e = p.accepts_classic(wrong, w)
                always = e is not None and e.kind == ALWAYS
                if e is None and passed:
                    accepted[f"{wrong} → {out}"] = accepted.get(f"{wrong} → {out}", 0) + 1
                elif always and not passed:
                    false_claims[f"{wrong} → {out}"] = false_claims.get(f"{wrong} → {out}", 0) + 1
                if s == SECRET and not always:
                    refused[wrong] = refused.get(wrong, False) or not passed
        where = f"tests[{i}] {{{spec.workload_id(w)}}}"
        if accepted:
            found.append(Finding("classic-wrong", yaml_file, f"check: accepts a classic wrong answer on {where}: "
                                 + ", ".join(f"{k} ({n} of {len(secrets)} draws)" for k, n in accepted.items())
                                 + "; tighten the tolerance, or declare it in accepts_classic_wrong with the reason"))
        for k, n in false_claims.items():
            found.append(Finding("classic-wrong", yaml_file, f"accepts_classic_wrong says {k} is always right on "
                                 f"{where}, but the check refuses it ({n} of {len(secrets)} draws): fix the "
                                 "declaration (or make it `kind: chance`)"))
    never = sorted(k for k, v in refused.items() if not v) + ([] if "zeros" in refused else ["zeros"])
    if never:
        found.append(Finding("classic-somewhere", yaml_file, f"check: {', '.join(never)} never refused on a test "
                             "workload checked on CPU; whatever accepts_classic_wrong says, each must fail somewhere "
                             "(add a test workload where it is wrong)"))
    for n, (c, when) in enumerate(p.classic_wrong):
        live = [i for i in checked if when(p.spec.tests[i])]
        where = f"accepts_classic_wrong[{n}] ({c.answer} when {c.when})"
        if not live:
            found.append(Finding("classic-declaration", yaml_file, f"{where}: matches no test workload checked on "
                                 "CPU; remove it, or add the workload it is about"))
        elif not any(c.answer in classic_names(p, p.spec.tests[i]) for i in live):
            found.append(Finding("classic-declaration", yaml_file, f"{where}: {c.answer} is not a classic answer on "
                                 "the workloads it matches (no input with the output's dtype and element count)"))
    return found
