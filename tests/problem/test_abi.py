"""The submission ABI: parameter types, the prototype, and `judge init` starters that compile."""
from __future__ import annotations

import subprocess

import pytest
from conftest import nvcc_test, problem_names

from judge.problem import abi
from judge.problem.abi import parse_ctype

ELEMENTS = [
    # spelling in the spec, spelling in the prototype, torch dtype, itemsize, is_float
    ("float", "float", "float32", 4, True),
    ("half", "half", "float16", 2, True),
    ("__half", "half", "float16", 2, True),
    ("__nv_bfloat16", "__nv_bfloat16", "bfloat16", 2, True),
    ("int32_t", "int32_t", "int32", 4, False),
    ("int64_t", "int64_t", "int64", 8, False),
    ("uint8_t", "uint8_t", "uint8", 1, False),
    ("__nv_fp8_e4m3", "__nv_fp8_e4m3", "float8_e4m3fn", 1, True),
    ("__nv_fp8_e5m2", "__nv_fp8_e5m2", "float8_e5m2", 1, True),
]


@pytest.mark.parametrize("spelled, c_name, dtype, itemsize, is_float", ELEMENTS)
def test_every_element_type_is_a_torch_dtype_of_its_size(spelled, c_name, dtype, itemsize, is_float):
    """The workers view shared buffers as `getattr(torch, dtype)`: the name must be torch's, the size its."""
    import torch

    dt = getattr(torch, dtype)
    assert torch.empty((), dtype=dt).element_size() == itemsize
    assert dt.is_floating_point is is_float


@pytest.mark.parametrize("const", [True, False])
@pytest.mark.parametrize("spelled, c_name, dtype, itemsize, is_float", ELEMENTS)
def test_parse_tensor_types(const, spelled, c_name, dtype, itemsize, is_float):
    ct = parse_ctype(f"{'const ' if const else ''}{spelled}*")
    assert ct.is_tensor and ct.scalar is None
    assert ct.const is const and ct.is_output is (not const)
    assert ct.element.c_name == c_name and ct.element.dtype == dtype
    assert ct.element.itemsize == itemsize and ct.element.is_float is is_float
    assert ct.spelling() == f"{'const ' if const else ''}{c_name}*"
    assert parse_ctype(ct.spelling()) == ct  # the prototype's spelling parses back to the same type


@pytest.mark.parametrize("text", ["const __nv_bfloat16*", "const  __nv_bfloat16 *", " const\t__nv_bfloat16* "])
def test_whitespace_is_normalised(text):
    ct = parse_ctype(text)
    assert ct.const and ct.element.dtype == "bfloat16"


def test_half_alias_spelling():
    ct = parse_ctype("__half*")
    assert ct.is_output and ct.element.dtype == "float16" and ct.spelling() == "half*"


@pytest.mark.parametrize("text", ["int", "float"])
def test_parse_scalars(text):
    ct = parse_ctype(text)
    assert ct.scalar == text and not ct.is_tensor and not ct.is_output and ct.spelling() == text


@pytest.mark.parametrize("text", ["double*", "const double*", "const float", "float**", "int*", "const int",
                                  "unsigned char*", "float&", "long", "void*", "half", "", "float* const"])
def test_rejects_types_outside_the_abi(text):
    with pytest.raises(ValueError) as info:
        parse_ctype(text)
    assert "not in the submission ABI" in str(info.value)
    assert "__nv_bfloat16" in str(info.value)  # names the allowed types


def test_prototype_text():
    params = [(n, parse_ctype(t)) for n, t in
              [("A", "const float*"), ("B", "const __half*"), ("C", "__nv_bfloat16*"), ("n", "int"), ("s", "float")]]
    assert abi.prototype(params) == \
        'extern "C" void solve(const float* A, const half* B, __nv_bfloat16* C, int n, float s)'
    header = abi.prototype_header(params)
    for inc in abi.HEADERS:
        assert inc in header
    assert header.rstrip().endswith(abi.prototype(params) + ";")


def test_starter_text():
    params = [("X", parse_ctype("const uint8_t*")), ("Y", parse_ctype("int64_t*")), ("n", parse_ctype("int"))]
    text = abi.starter("Bytes to longs", params, {"X": "[n]", "Y": "[n, 2]"})
    assert text.startswith("// Bytes to longs")
    assert abi.prototype(params) + " {" in text
    assert "// X: input, shape [n], uint8_t" in text
    assert "// Y: output, shape [n, 2], int64_t" in text
    for inc in abi.HEADERS:
        assert inc in text
    assert "cuda_fp8.h" not in text  # only where a type needs it


def test_fp8_types_bring_their_header_once():
    """`__nv_fp8_e4m3` is defined by <cuda_fp8.h>, which HEADERS leave out: the prototype header and
    the starter include it where (and only where) a parameter needs it."""
    params = [("A", parse_ctype("const __nv_fp8_e4m3*")), ("B", parse_ctype("const __nv_fp8_e5m2*")),
              ("C", parse_ctype("__nv_bfloat16*")), ("n", parse_ctype("int"))]
    for text in (abi.prototype_header(params), abi.starter("FP8", params, {})):
        assert text.count("#include <cuda_fp8.h>") == 1
        assert all(inc in text for inc in abi.HEADERS)
    assert "cuda_fp8.h" not in abi.prototype_header([("C", parse_ctype("float*"))])


@nvcc_test
@pytest.mark.parametrize("name", problem_names())
def test_starter_compiles_and_exports_solve(problem_builds, name):
    r = problem_builds.get((name, "starter", "sm_90a"))
    assert r is not None, f"{name} did not load (see test_problems)"
    assert r.ok, f"{r.error}\n{r.command}\n{r.log[-2000:]}"
    nm = subprocess.run(["nm", "-D", "--defined-only", str(r.lib)], capture_output=True, text=True).stdout
    assert any(line.split()[-1:] == ["solve"] for line in nm.splitlines()), nm
