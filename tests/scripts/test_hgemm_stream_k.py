"""hgemm step 10 (reference_solutions/hgemm/10_stream_k_tail.cu) without a GPU: with its three trims
off, the kernels it shares with step 9 are step 9's machine code (the shapes that do not split the tail
run step 9 itself), and
the timeline probe (scripts/probes/hgemm_tail_trace.py) still finds every line it stamps."""
from __future__ import annotations

import re

import pytest
from conftest import ROOT, load_script, needs_cuobjdump, nvcc_test, sm90a_sass

HGEMM = ROOT / "reference_solutions" / "hgemm"
STEP10 = HGEMM / "10_stream_k_tail.cu"
TRACE = ROOT / "scripts" / "probes" / "hgemm_tail_trace.py"


def kernels(tmp_path, src, *defines: str) -> dict[str, list[tuple[str, int, int]]]:
    """{kernel (named to compare across the two files): its instructions, each its text and both
    64-bit words of its encoding (the second holds ptxas's scheduling)}."""
    names = {}
    for function, code in sm90a_sass(tmp_path, src, *defines).items():
        # step 9's hgemm_wgmma is step 10's hgemm_wgmma<false> (three more, unused, parameters)
        if re.match(r"_Z11hgemm_wgmma(14CUtensorMap|ILb0E)", function):
            name = "persistent"
        elif re.match(r"_Z11hgemm_wgmmaILb1E", function):
            name = "persistent, stream-K"
        elif m := re.match(r"_Z15hgemm_wgmma_oneILi(\d)E", function):
            name = f"one-wave {m.group(1)}"
        else:
            name = function
        names[name] = [(x.text, x.lo, x.hi) for x in code]
    return names


# the trims added after step 10's first measurement (serpentine k order, uniform A descriptors), off
TRIMS_OFF = ("-DHG10_SERP=0", "-DHG10_AUNI=0")


@nvcc_test
@needs_cuobjdump
def test_the_kernels_step_10_shares_with_step_9_are_step_9s_machine_code(tmp_path):
    step9 = kernels(tmp_path, HGEMM / "09_one_wave.cu")
    step10 = kernels(tmp_path, STEP10, *TRIMS_OFF)
    shared = ["one-wave 2", "one-wave 4", "persistent"]
    assert all(name in step9 and len(step9[name]) > 1000 for name in shared), sorted(step9)
    for name in shared:
        assert step10[name] == step9[name], f"{name} differs from step 9's"
    assert len(step10["persistent, stream-K"]) > len(step9["persistent"])
    # and built with the split switched off (HG10_SK = 0), the same
    off = kernels(tmp_path, STEP10, "-DHG10_SK=0", *TRIMS_OFF)
    assert all(off[name] == step9[name] for name in shared)
    # the trims, on by default, change every kernel's code (the one-wave kernels through AUNI only)
    trimmed = kernels(tmp_path, STEP10)
    assert all(trimmed[name] != step9[name] for name in shared)


def test_the_timeline_probe_stamps_every_phase_of_the_current_source():
    probe = load_script(TRACE)
    src = probe.traced(probe.SOURCE.read_text())
    assert src.count("g_trace[blockIdx.x") == 10  # nine phases, the end stamped on both ways out
    assert "extern \"C\" int hgemm_trace(" in src and "__device__ unsigned long long g_trace[" in src


def test_the_timeline_probe_names_a_line_it_no_longer_finds():
    probe = load_script(TRACE)
    src = probe.SOURCE.read_text().replace("                ++u;\n", "                u += 1;\n")
    with pytest.raises(ValueError, match="no longer has this line exactly once"):
        probe.traced(src)
