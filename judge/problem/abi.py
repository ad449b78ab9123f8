"""The submission ABI (README.md, "The submission"): C types of solve()'s parameters, its prototype, starters.

A tensor parameter is `const T*` (input) or `T*` (output) with T one of the element types
below; a scalar is `int` or `float`. A Python (Triton) submission's `solve` takes the same
parameters by the same names: tensors as torch tensors on the device, scalars as Python ints and
floats (`py_prototype`). Nothing here imports torch: the worker uses it too.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ElementType:
    c_name: str  # spelling in the prototype
    dtype: str  # torch dtype name
    itemsize: int
    is_float: bool
    header: str = ""  # the CUDA header that defines c_name, beyond HEADERS


ELEMENT_TYPES: dict[str, ElementType] = {
    "float": ElementType("float", "float32", 4, True),
    "half": ElementType("half", "float16", 2, True),
    "__half": ElementType("half", "float16", 2, True),
    "__nv_bfloat16": ElementType("__nv_bfloat16", "bfloat16", 2, True),
    "int32_t": ElementType("int32_t", "int32", 4, False),
    "int64_t": ElementType("int64_t", "int64", 8, False),
    "uint8_t": ElementType("uint8_t", "uint8", 1, False),
    # FP8 (an extension of the contract's list): OCP e4m3 (no infinities, max 448) and e5m2.
    "__nv_fp8_e4m3": ElementType("__nv_fp8_e4m3", "float8_e4m3fn", 1, True, "#include <cuda_fp8.h>"),
    "__nv_fp8_e5m2": ElementType("__nv_fp8_e5m2", "float8_e5m2", 1, True, "#include <cuda_fp8.h>"),
}
SCALAR_TYPES = {"int": "int", "float": "float"}

_POINTER = re.compile(r"^(const\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\*$")


@dataclass(frozen=True)
class CType:
    """A parsed parameter type: either a scalar or a pointer to an element type."""

    scalar: str | None = None  # "int" | "float"
    element: ElementType | None = None
    const: bool = False

    @property
    def is_tensor(self) -> bool:
        return self.element is not None

    @property
    def is_output(self) -> bool:
        return self.is_tensor and not self.const

    def spelling(self) -> str:
        if self.scalar:
            return self.scalar
        assert self.element is not None
        return f"{'const ' if self.const else ''}{self.element.c_name}*"


def parse_ctype(text: str) -> CType:
    """Parse a signature type such as `const half*` or `int`; raise ValueError if unknown."""
    t = " ".join(str(text).split())
    if t in SCALAR_TYPES:
        return CType(scalar=t)
    m = _POINTER.match(t)
    if m and m.group(2) in ELEMENT_TYPES:
        return CType(element=ELEMENT_TYPES[m.group(2)], const=bool(m.group(1)))
    allowed = ", ".join(["int", "float"] + [f"[const] {k}*" for k in ELEMENT_TYPES if k != "__half"])
    raise ValueError(f"type {t!r} is not in the submission ABI (allowed: {allowed})")


HEADERS = ("#include <cuda_runtime.h>", "#include <cuda_fp16.h>", "#include <cuda_bf16.h>",
           "#include <cstdint>")


def headers(params: list[tuple[str, CType]]) -> list[str]:
    """HEADERS, and the header of each element type that needs one more (`<cuda_fp8.h>`)."""
    extra = [ct.element.header for _, ct in params if ct.element and ct.element.header]
    return [*HEADERS, *dict.fromkeys(extra)]


def prototype(params: list[tuple[str, CType]]) -> str:
    """`extern "C" void solve(const float* A, ..., int n)`"""
    args = ", ".join(f"{ct.spelling()} {name}" for name, ct in params)
    return f'extern "C" void solve({args})'


def prototype_header(params: list[tuple[str, CType]]) -> str:
    """Force-included before the submission: a conflicting definition of solve then fails to compile."""
    return "\n".join([*headers(params), prototype(params) + ";", ""])


def starter(title: str, params: list[tuple[str, CType]], shapes: dict[str, str]) -> str:
    """A starter .cu that compiles: includes, the exact prototype and a comment per tensor."""
    lines = [f"// {title}", "// Starter written by `judge init`: fill in solve(); it must launch on the",
             "// default stream and return (the judge synchronizes).", *headers(params), ""]
    for name, ct in params:
        if ct.is_tensor:
            role = "input" if ct.const else "output"
            lines.append(f"// {name}: {role}, shape {shapes.get(name, '?')}, {ct.element.c_name}")  # type: ignore[union-attr]
    lines += ["", prototype(params) + " {", "    // TODO: launch your kernel(s) here.", "}", ""]
    return "\n".join(lines)


def py_prototype(params: list[tuple[str, CType]]) -> str:
    """`def solve(A: torch.Tensor, ..., n: int) -> None`: a Python submission's solve()."""
    args = ", ".join(f"{name}: {'torch.Tensor' if ct.is_tensor else ct.scalar}" for name, ct in params)
    return f"def solve({args}) -> None"
