"""fp8_gemm step 10 (reference_solutions/fp8_gemm/10_lean_tile_end.cu) without a GPU: it changes only
the consumers' tile loop and stores (its producer, schedule and host code are step 9's source, word for
word); its default build stores through the quad butterfly (SHFL.BFLY, no gather's SHFL.IDX) and no
longer zeroes acc each tile; each switch builds clean (0 spills, no serialised wgmma) and does what its
header says: FP10_STORE=0 is step 9's gather, 2 the 4-byte stores; FP10_EARLY issues the next tile's
first stage before the pack."""
from __future__ import annotations

import subprocess

import pytest
from conftest import ROOT, needs_cuobjdump, nvcc_test, sm90a_sass

FP8 = ROOT / "reference_solutions" / "fp8_gemm"
STEP9, STEP10 = FP8 / "09_gpc_bands.cu", FP8 / "10_lean_tile_end.cu"
PREFIX = {"144": "_Z10gemm_wgmmaILi144E", "128": "_Z10gemm_wgmmaILi128E"}


def ops(tmp_path, *defines: str) -> dict[str, list[str]]:
    """{"144" | "128": that gemm_wgmma's instructions (text, predicate dropped)}."""
    out = {}
    for function, code in sm90a_sass(tmp_path, STEP10, *defines).items():
        for width, prefix in PREFIX.items():
            if function.startswith(prefix):
                out[width] = [x.text.split(" ", 1)[1] if x.text.startswith("@") else x.text for x in code]
    return out


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> dict[str, list[str]]:
    """The default build, made once for the tests that read it."""
    return ops(tmp_path_factory.mktemp("step10"))


def count(code: list[str], start: str) -> int:
    return sum(text.startswith(start) for text in code)


def between(text: str, start: str, end: str) -> str:
    return text[text.index(start):text.index(end)]


def test_step_10_keeps_step_9s_producer_schedule_and_host_code():
    s9, s10 = STEP9.read_text(), STEP10.read_text()
    kernel_start, consumers = "template <int BN>\n__global__ void __launch_bounds__", "    // consumers:"
    assert between(s10, kernel_start, consumers) == between(s9, kernel_start, consumers)
    host = "// GPUs other than sm_90"
    assert s10[s10.index(host):] == s9[s9.index(host):]


@nvcc_test
@pytest.mark.parametrize("defines", [(), ("-DFP10_SEAM=1",), ("-DFP10_EARLY=0",), ("-DFP10_FOLD=1",),
                                     ("-DFP10_STORE=0",), ("-DFP10_STORE=2",)])
def test_each_switch_builds_without_spills_or_serialised_wgmma(tmp_path, defines):
    r = subprocess.run(["nvcc", "-O3", "-std=c++17", "-Xptxas", "-v", *defines, "-gencode",
                        "arch=compute_90a,code=sm_90a", "-c", str(STEP10), "-o", str(tmp_path / "x.o")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "C751" not in r.stderr and "warning" not in r.stderr.lower()
    spills = [line for line in r.stderr.splitlines() if "spill" in line]
    assert len(spills) >= 4 and all("0 bytes spill stores, 0 bytes spill loads" in x for x in spills), spills


@nvcc_test
@needs_cuobjdump
def test_the_stores_are_the_butterfly_by_default_and_the_gather_or_pairs_by_switch(tmp_path, shipped):
    gather, pairs = ops(tmp_path, "-DFP10_STORE=0"), ops(tmp_path, "-DFP10_STORE=2")
    for width, blocks in (("144", 18), ("128", 16)):
        # 4 SHFL.BFLY per pair of 8-column blocks, in the two stores (under the next tile, the last tile's)
        assert count(shipped[width], "SHFL.BFLY") == 2 * 4 * blocks // 2
        assert count(gather[width], "SHFL.BFLY") == 0 and count(gather[width], "SHFL.IDX") >= 2 * 4 * blocks // 2
        assert count(shipped[width], "STG.E.128") == count(gather[width], "STG.E.128") == 2 * blocks // 2
        assert count(pairs[width], "STG.E ") >= 2 * 2 * blocks  # two rows a block, 4-byte stores
        assert count(shipped[width], "CS2R") <= 1  # acc is set by a tile's first promotion, not zeroed
    assert count(shipped["144"], "SEL ") + 100 < count(gather["144"], "SEL ")  # 217 and 378 with nvcc 13.0


@nvcc_test
@needs_cuobjdump
def test_early_issues_the_next_tiles_first_stage_before_the_pack(tmp_path, shipped):
    def first_after_last_drain(code: list[str]) -> str:
        last = max(i for i, text in enumerate(code) if text.startswith("WARPGROUP.DEPBAR.LE gsb0, 0x0"))
        return next(text.split()[0] for text in code[last:] if text.startswith(("QGMMA", "F2FP")))
    assert first_after_last_drain(shipped["144"]).startswith("QGMMA")
    assert first_after_last_drain(ops(tmp_path, "-DFP10_EARLY=0")["144"]).startswith("F2FP")
