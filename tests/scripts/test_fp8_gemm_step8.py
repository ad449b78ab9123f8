"""fp8_gemm step 8 (reference_solutions/fp8_gemm/08_wide_tile_144.cu) without a GPU: with its three
trims off, its 128-wide kernel is step 7's machine code (the shapes that keep the 128-wide tile run
step 7 itself), and the trims, on by default, change both kernels' code."""
from __future__ import annotations

from conftest import ROOT, needs_cuobjdump, nvcc_test, sm90a_sass

FP8 = ROOT / "reference_solutions" / "fp8_gemm"
STEP8 = FP8 / "08_wide_tile_144.cu"
TRIMS_OFF = ("-DFP8_SERP=0", "-DFP8_AUNI=0")  # FP8_PROMO128 is host code


def kernels(tmp_path, src, *defines: str) -> dict[str, list[tuple[str, int, int]]]:
    """{kernel: its instructions, each its text and both 64-bit words of its encoding}, step 7's
    gemm_wgmma named as step 8's 128-wide instance."""
    names = {"_Z10gemm_wgmma14CUtensorMap_stS_PKfS1_P13__nv_bfloat16iiii": "128"}
    out = {}
    for function, code in sm90a_sass(tmp_path, src, *defines).items():
        name = names.get(function, "128" if function.startswith("_Z10gemm_wgmmaILi128E") else
                         "144" if function.startswith("_Z10gemm_wgmmaILi144E") else function)
        out[name] = [(x.text, x.lo, x.hi) for x in code]
    return out


@nvcc_test
@needs_cuobjdump
def test_step_8s_narrow_kernel_is_step_7s_machine_code_with_the_trims_off(tmp_path):
    step7 = kernels(tmp_path, FP8 / "07_pipelined_promotion.cu")
    off = kernels(tmp_path, STEP8, *TRIMS_OFF)
    assert len(step7["128"]) > 1000
    assert off["128"] == step7["128"]
    trimmed = kernels(tmp_path, STEP8)
    assert trimmed["128"] != step7["128"] and trimmed["144"] != off["144"]
