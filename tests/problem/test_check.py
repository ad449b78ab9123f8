"""Named output checks and the WRONG_ANSWER evidence they gather."""
from __future__ import annotations

import copy
import math
import re
import typing
from typing import Literal

import pydantic
import pytest
import torch
from toy_problem import VALID, write_problem

import judge.problem.checks
from judge.problem.checks import CHECKS, MAX_MISMATCHES, Check, Custom, passes, registry, run_check
from judge.problem.spec import AllClose, Exact, ProblemError, load_problem

ALLCLOSE = AllClose(name="allclose", rtol=1e-3, atol=1e-3)
EXACT = Exact(name="exact")


def test_allclose_passes_within_tolerance():
    e = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))
    g = e + 0.9e-3 * torch.sign(e)  # within atol + rtol*|e|
    r = run_check(ALLCLOSE, "C", g, e)
    assert r.passed and r.n_bad == 0 and r.numel == 20 and r.mismatches == []
    assert r.check == "allclose" and r.output == "C"
    assert r.max_abs_err == pytest.approx(float((g.double() - e.double()).abs().max()))
    assert r.nan_count == 0 and r.inf_count == 0


def test_allclose_boundary_is_inclusive_and_just_past_fails():
    e = torch.tensor([2.0], dtype=torch.float64)
    tol = ALLCLOSE.atol + ALLCLOSE.rtol * 2.0
    assert run_check(ALLCLOSE, "C", e + tol * 0.999, e).passed
    assert not run_check(ALLCLOSE, "C", e + tol * 1.01, e).passed


def test_allclose_failure_evidence_multi_dim():
    e = torch.zeros(3, 4, 5)
    g = e.clone()
    bad = [(0, 1, 2, 0.5), (1, 0, 0, -0.25), (1, 3, 4, 2.0), (2, 2, 2, 0.01), (2, 3, 0, 0.1), (2, 3, 4, 0.2),
           (2, 3, 3, 0.002)]  # 7 bad: only the first 5 in flat order are listed
    for i, j, k, v in bad:
        g[i, j, k] = v
    r = run_check(ALLCLOSE, "out", g, e)
    assert not r.passed
    assert r.n_bad == 7 and r.numel == 60
    assert r.max_abs_err == pytest.approx(2.0)
    assert len(r.mismatches) == MAX_MISMATCHES == 5
    in_order = sorted(bad)[:5]
    assert [m.index for m in r.mismatches] == [[i, j, k] for i, j, k, _ in in_order]
    assert [m.got for m in r.mismatches] == pytest.approx([v for *_, v in in_order])
    assert all(m.expected == 0.0 for m in r.mismatches)


def test_relative_error_reported():
    e = torch.tensor([1.0, 10.0, 100.0])
    g = torch.tensor([1.0, 11.0, 100.5])
    r = run_check(ALLCLOSE, "C", g, e)
    assert r.n_bad == 2
    assert r.max_abs_err == pytest.approx(1.0)
    assert r.max_rel_err == pytest.approx(0.1)


def test_nan_and_inf_counted_and_failed():
    e = torch.ones(6)
    g = torch.tensor([1.0, float("nan"), float("inf"), float("-inf"), float("nan"), 1.0])
    r = run_check(ALLCLOSE, "C", g, e)
    assert not r.passed and r.n_bad == 4
    assert r.nan_count == 2 and r.inf_count == 2
    assert math.isfinite(r.max_abs_err) and r.max_abs_err == 0.0  # only finite pairs count
    assert [m.index for m in r.mismatches] == [[1], [2], [3], [4]]
    assert math.isnan(r.mismatches[0].got) and r.mismatches[1].got == math.inf


def test_nan_expected_vs_nan_got_passes_and_matching_inf_passes():
    e = torch.tensor([float("nan"), float("inf"), float("-inf"), 3.0])
    g = e.clone()
    r = run_check(ALLCLOSE, "C", g, e)
    assert r.passed, r
    assert r.nan_count == 1 and r.inf_count == 2  # counted, yet correct
    assert run_check(EXACT, "C", g, e).passed


@pytest.mark.parametrize("got, expected", [
    (float("-inf"), float("inf")),  # Inf sign mismatch
    (float("inf"), float("-inf")),
    (1e30, float("inf")),           # finite where Inf is expected
    (float("inf"), 1e30),           # Inf where a finite value is expected
    (0.0, float("nan")),            # finite where NaN is expected
    (float("nan"), 0.0),
    (float("inf"), float("nan")),
])
@pytest.mark.parametrize("check", [ALLCLOSE, EXACT], ids=["allclose", "exact"])
def test_special_value_mismatches_fail(check, got, expected):
    r = run_check(check, "C", torch.tensor([got]), torch.tensor([expected]))
    assert not r.passed and r.n_bad == 1


def test_exact_on_integers():
    e = torch.arange(10, dtype=torch.int32).reshape(2, 5)
    assert run_check(EXACT, "C", e.clone(), e).passed
    g = e.clone()
    g[1, 3] = -7
    r = run_check(EXACT, "C", g, e)
    assert not r.passed and r.n_bad == 1
    assert r.mismatches[0].index == [1, 3] and r.mismatches[0].got == -7 and r.mismatches[0].expected == 8
    assert r.max_abs_err == 15


def test_exact_large_int64_values_compared_exactly():
    e = torch.tensor([2**53 + 1], dtype=torch.int64)
    g = torch.tensor([2**53], dtype=torch.int64)  # equal after a float64 round-trip
    assert not run_check(EXACT, "C", g, e).passed


def test_exact_float_differs_by_one_ulp():
    e = torch.tensor([1.0], dtype=torch.float32)
    g = torch.nextafter(e, torch.tensor([2.0]))
    assert not run_check(EXACT, "C", g, e).passed
    assert run_check(ALLCLOSE, "C", g, e).passed


def test_half_output_against_float64_expected():
    e = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    g = e.to(torch.float16)  # correctly rounded: within fp16's half-ulp (rel 2^-11)
    assert run_check(AllClose(name="allclose", rtol=1e-3, atol=1e-5), "C", g, e).passed
    assert not run_check(AllClose(name="allclose", rtol=1e-5, atol=1e-6), "C", g, e).passed


def test_shape_mismatch_fails_with_message():
    r = run_check(ALLCLOSE, "C", torch.zeros(4, 3), torch.zeros(3, 4))
    assert not r.passed and r.n_bad == 12
    assert "(3, 4)" in r.message and "(4, 3)" in r.message
    r = run_check(EXACT, "C", torch.zeros(12), torch.zeros(3, 4))
    assert not r.passed and "(12,)" in r.message


def test_empty_tensors_pass():
    r = run_check(ALLCLOSE, "C", torch.zeros(0, 3), torch.zeros(0, 3))
    assert r.passed and r.numel == 0


@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_chunked_check_matches_unchunked(monkeypatch, chunk):
    gen = torch.Generator().manual_seed(3)
    e = torch.randn(5, 7, 9, generator=gen)
    g = e.clone()
    flat = g.view(-1)
    flat[[3, 40, 41, 100, 200, 250, 314]] += torch.tensor([0.5, -1.0, 3.0, 0.25, 2.5, -0.75, 1.5])
    flat[120] = float("nan")
    flat[121] = float("-inf")
    whole = run_check(ALLCLOSE, "C", g, e)
    monkeypatch.setattr(judge.problem.checks, "CHUNK", chunk)
    chunked = run_check(ALLCLOSE, "C", g, e)
    assert repr(chunked) == repr(whole)  # repr: NaN != NaN in ==
    assert whole.n_bad == 9 and whole.nan_count == 1 and whole.inf_count == 1
    assert whole.max_abs_err == pytest.approx(3.0, rel=1e-6)
    assert [m.index for m in whole.mismatches] == [[0, 0, 3], [0, 4, 4], [0, 4, 5], [1, 4, 1], [1, 6, 3]]


def _passes_cases():
    gen = torch.Generator().manual_seed(4)
    e = torch.randn(5, 7, 9, generator=gen)
    near = e + 0.9e-3 * torch.sign(e)
    one_off = e.clone()
    one_off.view(-1)[200] += 0.5
    nan = e.clone()
    nan.view(-1)[3] = float("nan")
    ints = torch.arange(12, dtype=torch.int32)
    ints_off = ints.clone()
    ints_off[11] = -7
    return [(ALLCLOSE, near, e), (ALLCLOSE, one_off, e), (ALLCLOSE, nan, e), (EXACT, e.clone(), e),
            (EXACT, near, e), (EXACT, ints.clone(), ints), (EXACT, ints_off, ints),
            (ALLCLOSE, torch.zeros(4, 3), torch.zeros(3, 4)), (ALLCLOSE, torch.zeros(0, 3), torch.zeros(0, 3)),
            (ALLCLOSE, torch.tensor([float("inf")]), torch.tensor([float("inf")])),
            (ALLCLOSE, torch.tensor([float("-inf")]), torch.tensor([float("inf")]))]


@pytest.mark.parametrize("chunk", [1, 7, 1 << 25])
def test_passes_is_run_checks_verdict_without_the_evidence(monkeypatch, chunk):
    """The re-check of timed calls asks `passes` and gathers the evidence only for a wrong call: the
    two must agree on every verdict, chunked or not (passing, one element off, NaN, exact, integers,
    a shape mismatch, empty, infinities)."""
    monkeypatch.setattr(judge.problem.checks, "CHUNK", chunk)
    verdicts = [(passes(c, g, e), run_check(c, "C", g, e).passed) for c, g, e in _passes_cases()]
    assert all(fast == full for fast, full in verdicts), verdicts
    assert [fast for fast, _ in verdicts] == [True, False, False, True, False, True, False, False, True, True, False]


# -- the registry ----------------------------------------------------------------------------------

def test_registry_holds_the_builtins_and_spec_derives_its_union():
    assert {"allclose", "exact", "custom"} <= set(CHECKS)
    assert CHECKS["allclose"] is AllClose and CHECKS["exact"] is Exact and CHECKS["custom"] is Custom
    from judge.problem.spec import Spec
    p = Spec.model_fields["check"]
    assert p.discriminator == "name"
    assert set(typing.get_args(p.annotation)) == set(CHECKS.values())


def test_adding_a_check_is_a_definition_and_its_registration(monkeypatch):
    """What a new check takes: a Check subclass with a one-value `name` Literal, `@register`."""
    monkeypatch.setattr(registry, "CHECKS", dict(registry.CHECKS))

    @registry.register
    class Within(Check):
        name: Literal["within"]
        tol: float

        def ok(self, got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
            return (got - expected).abs() <= self.tol

    adapter = pydantic.TypeAdapter(registry.union())
    spec = adapter.validate_python({"name": "within", "tol": 0.5})
    assert isinstance(spec, Within)
    assert isinstance(adapter.validate_python({"name": "exact"}), Exact)
    with pytest.raises(pydantic.ValidationError, match="within"):  # the known tags include it
        adapter.validate_python({"name": "nope"})
    r = run_check(spec, "C", torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.4, 2.0, 4.0]))
    assert not r.passed and r.n_bad == 1 and r.check == "within" and r.mismatches[0].index == [2]


def test_register_refuses_a_check_without_a_literal_name(monkeypatch):
    monkeypatch.setattr(registry, "CHECKS", dict(registry.CHECKS))

    class Loose(Check):
        name: str

    with pytest.raises(TypeError, match="Literal"):
        registry.register(Loose)

    class Twin(Check):
        name: Literal["exact"]

    with pytest.raises(TypeError, match="twice"):
        registry.register(Twin)


# -- the per-problem custom check ------------------------------------------------------------------

CHECK_PY = """\
import torch

CALLS = []


def within_half(got, expected):
    CALLS.append((got.dtype, got.shape, expected.shape))
    return (got - expected).abs() <= 0.5


def not_a_mask(got, expected):
    return float((got - expected).abs().max())


def wrong_length(got, expected):
    return torch.ones(1, dtype=torch.bool)
"""


def custom_problem(tmp_path, impl: str = "check.py:within_half", check_py: str | None = CHECK_PY):
    data = copy.deepcopy(VALID)
    data["check"] = {"name": "custom", "impl": impl}
    d = write_problem(tmp_path, data)
    if check_py is not None:
        (d / "check.py").write_text(check_py)
    return d


def test_custom_check_passes(tmp_path):
    p = load_problem(custom_problem(tmp_path))
    assert isinstance(p.spec.check, Custom) and p.spec.check.root == p.root
    assert p.spec.check.model_dump() == {"name": "custom", "impl": "check.py:within_half"}
    e = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    r = run_check(p.spec.check, "C", e + 0.4, e)
    assert r.passed and r.check == "custom" and r.n_bad == 0 and r.numel == 6
    assert r.max_abs_err == pytest.approx(0.4, rel=1e-6)


def test_custom_check_fails_with_the_evidence(tmp_path, monkeypatch):
    p = load_problem(custom_problem(tmp_path))
    e = torch.zeros(3, 4)
    g = e.clone()
    g[0, 1], g[1, 2], g[2, 3] = 0.7, -2.0, 0.3  # the last is within the custom check's 0.5
    g[2, 0] = float("nan")
    monkeypatch.setattr(judge.problem.checks, "CHUNK", 5)  # the function sees chunks, like every check
    r = run_check(p.spec.check, "C", g, e)
    assert not r.passed and r.n_bad == 3 and r.numel == 12
    assert r.max_abs_err == pytest.approx(2.0) and r.nan_count == 1
    assert [m.index for m in r.mismatches] == [[0, 1], [1, 2], [2, 0]]
    assert r.mismatches[1].got == -2.0 and r.mismatches[1].expected == 0.0
    calls = p.spec.check.function().__globals__["CALLS"]
    assert [c[1] for c in calls[-3:]] == [(5,), (5,), (2,)]  # chunks of the flat output
    assert all(c[0] == torch.float64 and c[1] == c[2] for c in calls)


@pytest.mark.parametrize("impl, fragment", [
    ("check.py:not_a_mask", "returned a float"),
    ("check.py:wrong_length", "shape (1,)"),
])
def test_custom_check_must_return_the_mask(tmp_path, impl, fragment):
    p = load_problem(custom_problem(tmp_path, impl))
    with pytest.raises(TypeError, match=re.escape(fragment)) as info:
        run_check(p.spec.check, "C", torch.ones(4), torch.ones(4))
    assert impl in str(info.value) and "bool tensor of shape (4,)" in str(info.value)


@pytest.mark.parametrize("impl, check_py, fragment", [
    ("missing.py:check", CHECK_PY, "file missing.py not found"),
    ("check.py:nope", CHECK_PY, "defines no function 'nope'"),
    ("check.py:check", "def check(:\n", "check.py line 1"),
    ("check.py:check", "def check(got):\n    return got == got\n", "must take two arguments"),
    ("check.py:check", "def check(got, expected, tol):\n    return got == got\n", "must take two arguments"),
    ("check.py:check", "def check(got, expected, *, tol):\n    return got == got\n", "must take two arguments"),
    ("../check.py:within_half", CHECK_PY, "outside the problem folder"),
    ("check.txt:check", CHECK_PY, "should match pattern"),
])
def test_custom_check_errors_at_load(tmp_path, impl, check_py, fragment):
    if impl.startswith("../"):
        (tmp_path / "check.py").write_text(check_py)
    d = custom_problem(tmp_path, impl, check_py)
    with pytest.raises(ProblemError) as info:
        load_problem(d)
    assert [loc for loc, _ in info.value.errors] == ["check.impl"], info.value.errors
    assert fragment in info.value.errors[0][1]


def test_custom_check_with_defaults_or_varargs_loads(tmp_path):
    d = custom_problem(tmp_path, "check.py:check", "def check(got, expected, tol=0.5, *rest, k=1):\n    ...\n")
    assert load_problem(d).spec.check.name == "custom"
    d = custom_problem(tmp_path / "b", "check.py:check", "def check(*args):\n    ...\n")
    assert load_problem(d).spec.check.name == "custom"


def test_custom_check_built_by_hand_says_it_has_no_folder():
    with pytest.raises(ValueError, match="no problem folder"):
        run_check(Custom(name="custom", impl="check.py:check"), "C", torch.ones(2), torch.ones(2))
