"""fp8_gemm step 9 (reference_solutions/fp8_gemm/09_gpc_bands.cu) without a GPU: its 128-wide kernel
(every shape but the wide one) is step 8's machine code; with FP9_SCHED=0 its wide kernel is step 8's
too, so the schedule is all that step 9 changes; with the schedule the consumers issue step 8's math
and synchronisation instructions, as many of each; and the GPC finder it inlines is the probes' own
gpc_groups.cuh, word for word (a model answer is one file). Its waits end: one launch-wide state,
set once, says whether a launch lines up (no cooperative launch, which Nsight Compute fails)."""

from __future__ import annotations

from collections import Counter

from conftest import ROOT, needs_cuobjdump, nvcc_test, sm90a_sass

FP8 = ROOT / "reference_solutions" / "fp8_gemm"
STEP8, STEP9 = FP8 / "08_wide_tile_144.cu", FP8 / "09_gpc_bands.cu"
WIDE, NARROW = "_Z10gemm_wgmmaILi144E", "_Z10gemm_wgmmaILi128E"


def kernels(tmp_path, src, *defines: str) -> dict[str, list[tuple[str, int, int]]]:
    """{"128" | "144": that gemm_wgmma's instructions, each its text and both words of its encoding}."""
    out = {}
    for function, code in sm90a_sass(tmp_path, src, *defines).items():
        for width, prefix in (("144", WIDE), ("128", NARROW)):
            if function.startswith(prefix):
                out[width] = [(x.text, x.lo, x.hi) for x in code]
    return out


def opcode(text: str) -> str:
    return text.split()[1] if text.startswith("@") else text.split()[0]


def consumer_ops(code: list[tuple[str, int, int]]) -> tuple[int, Counter]:
    """From the first QGMMA to the last (the consumers' work): how many instructions, and how many of
    each that does the math or orders it (QGMMA, FADD, FMUL, WARPGROUP, SYNCS)."""
    at = [i for i, (text, _, _) in enumerate(code) if text.startswith("QGMMA")]
    ops = [opcode(text) for text, _, _ in code[at[0] : at[-1] + 1]]
    return len(ops), Counter(op for op in ops if op.split(".")[0] in ("QGMMA", "FADD", "FMUL", "WARPGROUP", "SYNCS"))


@nvcc_test
@needs_cuobjdump
def test_step_9_changes_only_the_wide_kernels_schedule(tmp_path):
    step8, step9 = kernels(tmp_path, STEP8), kernels(tmp_path, STEP9)
    assert len(step8["128"]) > 1000
    assert step9["128"] == step8["128"]
    assert kernels(tmp_path, STEP9, "-DFP9_SCHED=0")["144"] == step8["144"]
    assert step9["144"] != step8["144"]
    # ptxas allocates the wide kernel's registers anew (UR numbers and a few moves differ: 998
    # instructions in that span against 1,003 with nvcc 13.0), but the math and its order are step 8's
    (n9, ops9), (n8, ops8) = consumer_ops(step9["144"]), consumer_ops(step8["144"])
    assert ops9 == ops8 and ops8["QGMMA.64x144x32.F32.E4M3.E4M3"] == 16 and abs(n9 - n8) <= n8 // 100
    assert any(opcode(text).startswith("ATOMG") for text, _, _ in step9["144"])  # the schedule's counters


def test_step_9_has_no_cooperative_launch():
    assert "cudaLaunchAttributeCooperative" not in STEP9.read_text()  # `judge profile` runs it


@nvcc_test
@needs_cuobjdump
def test_step_9_decides_once_whether_a_launch_lines_up(tmp_path):
    """Two compare-and-swaps of the state from 0 (the last to register: lined up; a cluster that waited
    FP9_WAIT_CYCLES: not) and one OR that releases every round barrier; FP9_WAIT_CYCLES=0 (never lined
    up, to test that path) drops the first and leaves the consumers' math as it was."""
    def atomics(code):
        return Counter(op for op in (opcode(text) for text, _, _ in code) if op.startswith("ATOMG"))
    shipped, never = kernels(tmp_path, STEP9)["144"], kernels(tmp_path, STEP9, "-DFP9_WAIT_CYCLES=0u")["144"]
    assert atomics(shipped)["ATOMG.E.CAS.STRONG.GPU"] == 2 and atomics(shipped)["ATOMG.E.OR.STRONG.GPU"] == 1
    assert atomics(never)["ATOMG.E.CAS.STRONG.GPU"] == 1 and atomics(never)["ATOMG.E.OR.STRONG.GPU"] == 1
    assert consumer_ops(never)[1] == consumer_ops(shipped)[1]


def test_step_9_inlines_the_probes_gpc_finder_unchanged():
    probe = (ROOT / "scripts" / "probes" / "gpc_groups.cuh").read_text().replace("#pragma once\n", "")
    start = probe.index("// Which SMs share a GPC")
    assert probe[start:] in STEP9.read_text()
