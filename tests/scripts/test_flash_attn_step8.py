"""flash_attn step 8 (reference_solutions/flash_attn/08_claimed_tiles.cu) without a GPU: every kernel
it shares with step 7 (causal, three consumers, step 5's grid) is step 7's machine code; the two
claiming kernels (two consumers, non-causal) claim their tiles with atomics, keep everything in
registers, issue step 7's products, and the D = 128 one takes its row maxes as a tree."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import ROOT, needs_cuobjdump, nvcc_test, sm90a_sass

FLASH = ROOT / "reference_solutions" / "flash_attn"
STEP7, STEP8 = FLASH / "07_lean_tiles.cu", FLASH / "08_claimed_tiles.cu"
# <D, consumers, persistent> as the mangled names spell them; step 8 adds <..., claiming>
SHARED = ["ILi128ELi2ELb0E", "ILi128ELi2ELb1E", "ILi64ELi2ELb1E", "ILi64ELi3ELb1E"]


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("flash8")
    return sm90a_sass(tmp, STEP7), sm90a_sass(tmp, STEP8)


def kernel(code: dict, prefix: str) -> list[tuple[str, int, int]]:
    (name,) = [n for n in code if n.startswith("_Z8attn_fwd" + prefix)]
    return [(x.text, x.lo, x.hi) for x in code[name]]


def ops(code: list[tuple[str, int, int]]) -> Counter:
    return Counter((t.split()[1] if t.startswith("@") else t.split()[0]).split(".")[0] for t, _, _ in code)


@nvcc_test
@needs_cuobjdump
def test_step_8_keeps_step_7s_machine_code_where_it_does_not_claim(builds):
    step7, step8 = builds
    assert len(step7) == 4 and len(step8) == 6
    for prefix in SHARED:
        assert kernel(step8, prefix + "Lb0E") == kernel(step7, prefix), prefix


@nvcc_test
@needs_cuobjdump
@pytest.mark.parametrize("d", [128, 64])
def test_the_claiming_kernels(builds, d):
    step7, step8 = builds
    claiming, plan = ops(kernel(step8, f"ILi{d}ELi2ELb1ELb1E")), ops(kernel(step7, f"ILi{d}ELi2ELb1E"))
    assert claiming["ATOMG"] == 2  # a claim a work tile, the end's count (the first tile is the CTA's own)
    assert plan["ATOMG"] == 0
    assert claiming["LDL"] == claiming["STL"] == 0  # no spill (the claim waits in shared memory)
    assert claiming["HGMMA"] == plan["HGMMA"]
    # FA8_TREE at D = 128: 31 FMNMX a row half instead of a chain of 32 from -inf
    assert claiming["FMNMX"] == plan["FMNMX"] - (4 if d == 128 else 0)


@nvcc_test
@needs_cuobjdump
def test_the_first_form_claims_the_first_tile_too(tmp_path, builds):
    """FA8_OWN_FIRST=0 (the first form measured: every CTA claims its first tile as well): one ATOMG more
    in each claiming kernel, still no spill, the same products; the shared kernels untouched."""
    step7, step8 = builds
    first = sm90a_sass(tmp_path, STEP8, "-DFA8_OWN_FIRST=0")
    for d in (128, 64):
        old, shipped = ops(kernel(first, f"ILi{d}ELi2ELb1ELb1E")), ops(kernel(step8, f"ILi{d}ELi2ELb1ELb1E"))
        assert old["ATOMG"] == shipped["ATOMG"] + 1 == 3
        assert old["LDL"] == old["STL"] == 0 and old["HGMMA"] == shipped["HGMMA"]
    for prefix in SHARED:
        assert kernel(first, prefix + "Lb0E") == kernel(step7, prefix), prefix
