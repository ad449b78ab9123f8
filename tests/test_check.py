"""Named output checks and the WRONG_ANSWER evidence they gather."""
from __future__ import annotations

import math

import pytest
import torch

import judge.problem.checks
from judge.problem.checks import MAX_MISMATCHES, run_check
from judge.problem.spec import AllClose, Exact

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
