"""The fp16/bf16-accumulation controls, emulated on CPU (no GPU needed).

Issue 4: a tolerance must fail (a) all zeros, (b) a copy of an input and (c) where the problem
demands fp32 accumulation, the same math accumulated in fp16/bf16. (a) and (b) are rules of
`judge validate` for every problem (judge/problem/cpu_rules.py; tests/problem/test_problems.py
runs them on every problem, tests/problem/test_validate.py breaks each). (c) is particular to each
problem's control, so it lives here: `FP32_ACCUMULATION`, for each problem whose fp16/bf16 data
needs an fp32 reduction, emulates its wrong/ control's arithmetic on CPU (the same thread layout and
rounding points), and the check must refuse it on the `must_fail` workloads (those affordable in
Python); on `sane` ones (little accumulates) it must pass, which shows the emulation is faithful
rather than garbage. The inputs are drawn as the judge draws them (`cpu_rules.draw`).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch
from conftest import problem_names, try_load, wrong_files

from judge.problem import spec
from judge.problem.checks import run_check
from judge.problem.cpu_rules import cheap, draw, dtype_of

NAMES = problem_names()


def load(name: str) -> spec.Problem:
    p = try_load(name)
    if p is None:
        pytest.fail(f"{name} does not validate (see test_problems.py::test_validates)")
    return p


def test_declarations_exist():
    """Some problem declares accepts_classic_wrong (else its reader, or this set, changed unnoticed)."""
    assert any(p.spec.accepts_classic_wrong for p in map(try_load, NAMES) if p), \
        "no problem declares accepts_classic_wrong: the reader of problem.yaml is broken"


# -- (c) fp16/bf16 accumulation where fp32 is demanded ------------------------------------------
def _h(x: torch.Tensor) -> torch.Tensor:
    """Round to fp16 and back (what storing a float into a `half` does)."""
    return x.half().float()


def _b(x: torch.Tensor) -> torch.Tensor:
    return x.bfloat16().float()


def _strided(x: torch.Tensor, threads: int, acc: Callable, rnd: Callable) -> torch.Tensor:
    """Per-thread partials over the last dim: thread t adds elements t, t + threads, ... in order,
    rounding the running value with `rnd` after each step (`acc(partial, chunk)` is one step)."""
    n = x.shape[-1]
    pad = (-n) % threads
    x = torch.nn.functional.pad(x, (0, pad)).reshape(*x.shape[:-1], -1, threads)
    valid = torch.nn.functional.pad(torch.ones(n, dtype=torch.bool), (0, pad), value=False).reshape(-1, threads)
    part = torch.zeros(*x.shape[:-2], threads)
    for k in range(x.shape[-2]):
        part = torch.where(valid[k], rnd(acc(part, x[..., k, :])), part)
    return part


def _xor_tree(v: torch.Tensor, rnd: Callable) -> torch.Tensor:
    """A warp's __shfl_xor_sync butterfly over the last dim (32): every lane ends with this value."""
    while v.shape[-1] > 1:
        h = v.shape[-1] // 2
        v = rnd(v[..., :h] + v[..., h:])
    return v[..., 0]


def _block_sum(part: torch.Tensor, rnd: Callable) -> torch.Tensor:
    """256 partials → 8 warp sums (xor trees) → one xor tree over 32 lanes (8 warps + 24 zeros)."""
    warps = _xor_tree(part.reshape(*part.shape[:-1], 8, 32), rnd)
    return _xor_tree(torch.nn.functional.pad(warps, (0, 24)), rnd)


def hgemm_half_acc(A, B, M, N, K):  # wrong/fp16_accumulate.cu: wmma with a half accumulator
    a, b, c = A.float(), B.float(), torch.zeros(M, N)
    for k0 in range(0, K, 16):
        c = _h(c + a[:, k0:k0 + 16] @ b[k0:k0 + 16])
    return c.half()


def grid_half_acc(x: torch.Tensor, fused: bool) -> torch.Tensor:
    """64 × 256 threads, grid-stride, each accumulating into a half; float tree + atomics after."""
    part = _strided(x[None], 64 * 256, lambda p, c: p + (c if fused else _h(c)), _h)
    return part.double().sum().float().reshape(1)


def dot_half_acc(a, b, n):  # wrong/fp16_accumulate.cu: __hfma(a[i], b[i], acc) per thread
    return grid_half_acc(a.float() * b.float(), fused=True)


def reduce_half_acc(X, n):  # wrong/fp16_accumulate.cu: __hadd(acc, __float2half(x[i])) per thread
    return grid_half_acc(X, fused=False)


def layer_norm_half_stats(X, weight, bias, rows, cols):  # wrong/half_stats.cu
    x = X.float()
    n = _h(torch.tensor(float(cols)))
    mean = _h(_block_sum(_strided(x, 256, torch.add, _h), _h) / n)
    d = _h(x - mean[:, None])
    var = _h(_block_sum(_strided(d * d, 256, torch.add, _h), _h) / n)
    rstd = torch.rsqrt(var + 1e-5)
    return ((x - mean[:, None]) * rstd[:, None] * weight.float() + bias.float()).half()


def rms_norm_half_stats(X, weight, rows, cols):  # wrong/half_stats.cu: Σx² with __hfma into a half
    x = X.float()
    q = _block_sum(_strided(x * x, 256, torch.add, _h), _h)
    rstd = torch.rsqrt(q / cols + 1e-6)
    return (x * rstd[:, None] * weight.float()).half()


def cross_entropy_bf16_sum(logits, targets, rows, vocab):  # wrong/bf16_sum.cu
    x = logits.float()
    m = x.max(dim=1).values
    s = _block_sum(_strided(_b(torch.exp(x - m[:, None])), 256, torch.add, _b), _b)
    return (m - x.gather(1, targets[:, None]).squeeze(1)) + torch.log(s)


def attention_half_pv(Q, K, V, B, H, N, D, causal, tile: int):
    """Scores, max and Σp in fp32; the running Σ p·v in half, one rounding per key (__hfma); with
    `tile`, flash_attn's online softmax rescales it by a half exp(m_old - m_new) per 64-key tile."""
    q, k, v = (t.reshape(B * H, N, D).float() for t in (Q, K, V))
    s = (q @ k.transpose(1, 2)) / math.sqrt(D)
    if causal:
        s.masked_fill_(torch.ones(N, N, dtype=torch.bool).triu(1), float("-inf"))
    acc = torch.zeros(B * H, N, D)
    if tile:  # the running max after each tile, as the control keeps it
        m_run = torch.full((B * H, N), float("-inf"))
        denom = torch.zeros(B * H, N)
        for k0 in range(0, N, tile):
            m_new = torch.maximum(m_run, s[:, :, k0:k0 + tile].max(dim=2).values)
            corr = torch.exp(m_run - m_new)
            p = torch.exp(s[:, :, k0:k0 + tile] - m_new[:, :, None])
            denom = denom * corr + p.sum(dim=2)
            acc = _h(acc * _h(corr)[:, :, None])
            for j in range(p.shape[2]):
                acc = _h(_h(p[:, :, j, None]) * v[:, None, k0 + j] + acc)
            m_run = m_new
    else:
        p = torch.exp(s - s.max(dim=2, keepdim=True).values)
        denom = p.sum(dim=2)
        for j in range(N):
            acc = _h(_h(p[:, :, j, None]) * v[:, None, j] + acc)
    return _h(acc / denom[:, :, None]).half().reshape(B, H, N, D)


def fp8_gemm_half_acc(A, B, scale_a, scale_b, M, N, K):  # wrong/half_accumulate.cu: __hfma per product
    a, b = A.float(), B.float()  # e4m3 → half is exact, and so is a product of two e4m3 in fp32
    acc = torch.zeros(M, N)
    for k in range(K):
        acc = _h(a[:, k, None] * b[None, :, k] + acc)  # __hfma: one rounding of the fused a·b + acc
    return acc * (scale_a * scale_b)


@dataclass(frozen=True)
class Fp32:
    control: str       # the wrong/ control that proves it on the device
    emulate: Callable  # the control's arithmetic on CPU: (inputs..., scalars...) → output
    must_fail: Callable[[dict], bool]   # the test workloads where it must be refused
    sane: Callable[[dict], bool]        # small workloads where it passes: the emulation is not garbage
    may_pass: str = ""  # what the tolerance lets through, honestly (measured with this file)


FP32_ACCUMULATION: dict[str, Fp32] = {
    "hgemm": Fp32("fp16_accumulate.cu", hgemm_half_acc, lambda w: w["K"] >= 1000, lambda w: w["K"] <= 131,
                  "K <= 131 passes: <= 9 roundings of |C| ~ 1 stay within 2e-3 (K = 1000: 0.5% fail)"),
    "dot_product": Fp32("fp16_accumulate.cu", dot_half_acc, lambda w: w["n"] >= 100_000_007,
                        lambda w: 1000 <= w["n"] <= 1048573,
                        "n <= 1048573 gives each of the 16384 threads <= 64 products: no stall, passes "
                        "(n = 1, 7 fail anyway: one product rounded to half errs by up to 2^-12 > rtol)"),
    "reduce_sum": Fp32("fp16_accumulate.cu", reduce_half_acc, lambda w: w["n"] >= 100_000_007,
                       lambda w: w["n"] <= 1048573,
                       "n <= 1048573 gives each of the 16384 threads <= 64 values: no stall, passes"),
    "layer_norm": Fp32("half_stats.cu", layer_norm_half_stats, lambda w: w["cols"] >= 7,
                       lambda w: w["cols"] == 1),
    "rms_norm": Fp32("half_stats.cu", rms_norm_half_stats, lambda w: w["cols"] >= 4096,
                     lambda w: w["cols"] <= 1025,
                     "cols <= 1025: Σx² in half stays finite and errs by < rtol"),
    "cross_entropy": Fp32("bf16_sum.cu", cross_entropy_bf16_sum, lambda w: w["vocab"] >= 64,
                          lambda w: w["vocab"] == 1,
                          "vocab 7 passes for some draws: Σ = 1 + a few terms below bf16's 2^-8"),
    "flash_attn": Fp32("fp16_accumulate.cu", lambda *a: attention_half_pv(*a, tile=64),
                       lambda w: w["N"] >= 1000, lambda w: w["N"] <= 64,
                       "N <= 64 passes; N = 127-129: 3-84 of 16-98K outputs fail"),
    "attention_large_d": Fp32("fp16_accumulate.cu", lambda *a: attention_half_pv(*a, tile=0),
                              lambda w: w["N"] >= 1000, lambda w: w["N"] <= 64,
                              "N <= 64 passes; N = 127-129: ~60 of 66-130K outputs fail"),
    "fp8_gemm": Fp32("half_accumulate.cu", fp8_gemm_half_acc, lambda w: w["K"] >= 80, lambda w: w["K"] <= 16,
                     "K = 16 passes; K = 80 fails on 2 of 33,153 outputs, K = 1008 on 1,095 of 12,800, and at "
                     "K = 16384 60% fail, 9% of them ±inf"),
}
FP32_MAX_NUMEL = 5_000_000  # the emulations loop in Python: mid-sized workloads only


def fp32_cases():
    out = []
    for name, f in FP32_ACCUMULATION.items():
        p = try_load(name)
        for i, w in enumerate(p.spec.tests if p else []):
            big = name in ("dot_product", "reduce_sum") and w["n"] == 100_000_007  # their must-fail test
            affordable = big or (cheap(p, w) and _fp32_cost(name, p, w) <= FP32_MAX_NUMEL)
            if (f.must_fail(w) or f.sane(w)) and affordable:
                out.append(pytest.param(name, i, id=f"{name}-{spec.workload_id(w)}"))
    return out


def _fp32_cost(name: str, p: spec.Problem, w: dict) -> int:
    if name in ("flash_attn", "attention_large_d"):  # a Python step per key over B·H·N·D values
        return w["B"] * w["H"] * w["N"] * w["D"] * max(1, w["N"] // 256)
    return p.numel(w)


@pytest.mark.parametrize("name", list(FP32_ACCUMULATION))
def test_fp32_accumulation_problem_has_a_must_fail_case(name):
    p = load(name)
    cases = [p.spec.tests[c.values[1]] for c in fp32_cases() if c.values[0] == name]
    assert any(FP32_ACCUMULATION[name].must_fail(w) for w in cases), f"{name}: no affordable must-fail workload"
    assert any(FP32_ACCUMULATION[name].sane(w) for w in cases), f"{name}: no workload checks the emulation"


@pytest.mark.parametrize("name, i", fp32_cases())
def test_half_accumulation_fails(name, i):
    p = load(name)
    w = p.spec.tests[i]
    inputs, expected = draw(p, i)
    args = [inputs[t.name] for t in p.tensors if not t.ctype.is_output] + [w[s.name] for s in p.scalars]
    with torch.no_grad():
        got = FP32_ACCUMULATION[name].emulate(*args)
    out = p.outputs[0]
    r = run_check(p.spec.check, out.name, got.to(dtype_of(out)).reshape(p.shape_of(out.name, w)), expected[out.name])
    if FP32_ACCUMULATION[name].must_fail(w):
        assert not r.passed, (f"{name} {spec.workload_id(w)}: fp16/bf16 accumulation passes the tolerance "
                              f"(max abs {r.max_abs_err:.3g}, max rel {r.max_rel_err:.3g})")
    else:  # a sanity workload: the emulation is right where little accumulates
        assert r.passed, (f"{name} {spec.workload_id(w)}: the emulation fails where it should pass "
                          f"({r.n_bad}/{r.numel} bad, max abs {r.max_abs_err:.3g}): it is not faithful")


@pytest.mark.parametrize("name", list(FP32_ACCUMULATION))
def test_fp32_accumulation_problem_has_its_control(name):
    files = {f.name for f in wrong_files(name)}
    assert FP32_ACCUMULATION[name].control in files, \
        f"problems/{name}/wrong/{FP32_ACCUMULATION[name].control} is missing (fp16 accumulation)"
