"""scripts/probes/fp8_coalescing.py without a GPU: `write` makes every variant of fp8_gemm step 8 it
names; the raster variant at step 8's own group and k order is step 8's machine code (so the variants
change only what they say); the barrier variants and a transposed raster build clean for sm_90a; a step 8 without the
lines it changes is one line and exit 2."""
from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from conftest import ROOT, load_script, needs_cuobjdump, nvcc_test, sm90a_sass

PROBE = ROOT / "scripts" / "probes" / "fp8_coalescing.py"
STEP8 = ROOT / "reference_solutions" / "fp8_gemm" / "08_wide_tile_144.cu"
STEP9 = ROOT / "reference_solutions" / "fp8_gemm" / "09_gpc_bands.cu"


@pytest.fixture
def probe(monkeypatch):
    """The probe as a module (it imports its folder's probe_args, as it does when run)."""
    monkeypatch.syspath_prepend(str(PROBE.parent))
    return load_script(PROBE)


NAMES = {f"group{g}_serp{s}.cu" for g in (2, 4, 8, 16, 32, 64) for s in (0, 1)} | {
    f"hgroup{g}_serp{s}.cu" for g in (4, 8, 16, 32) for s in (0, 1)} | {
    "cluster1.cu", "round_barrier.cu", "round_barrier_serp0.cu", "round_barrier_every4.cu", "round_quorum4.cu",
    "round_quorum12.cu", "round_quorum32.cu", "round_timeout1500.cu", "round_timeout3000.cu", "row_barrier.cu",
    "row_barrier_o1.cu", "pair_barrier.cu", "trace.cu",
    "trace_round_barrier.cu", "gpc_raster.cu", "trace_gpc_raster.cu", "band8_gpc0.cu", "band8_gpc1.cu",
    "band16_gpc1.cu", "band8_gpc0_barrier.cu", "band8_gpc1_barrier.cu", "band16_gpc1_barrier.cu",
    "band16_gpc1_quorum12.cu", "trace_band8_gpc1_barrier.cu", "step9_never.cu", "step9_no_barrier.cu",
    "step9_narrow.cu", "step9_gpc_barrier.cu", "step9_gpc_barrier_q2.cu",
    "step9_every2.cu", "step9_every4.cu", "step9_quorum24.cu", "step9_quorum48.cu", "claimed.cu",
    "claimed_async.cu", "step9_no_loads.cu", "step9_no_shared_loads.cu"}


def test_write_makes_every_variant(tmp_path):
    r = subprocess.run([sys.executable, str(PROBE), "write", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert {p.name for p in tmp_path.iterdir()} == NAMES
    assert len(r.stdout.splitlines()) == len(NAMES)
    assert "g_lk_count" in (tmp_path / "round_barrier.cu").read_text()
    assert (tmp_path / "round_barrier_serp0.cu").read_text().startswith("#define FP8_SERP 0\n")
    assert "constexpr int CLUSTER = 1;" in (tmp_path / "cluster1.cu").read_text()
    assert "while (v + 12 < lk_target)" in (tmp_path / "round_quorum12.cu").read_text()
    assert "while (v < lk_target && clock64() - lk_t0 < 3000)" in (tmp_path / "round_timeout3000.cu").read_text()
    assert (tmp_path / "hgroup8_serp0.cu").read_text().startswith("#define FP8_SERP 0\n#define FP8_HGROUP 8\n")
    quorum = (tmp_path / "band16_gpc1_quorum12.cu").read_text()
    assert quorum.startswith("#define FP8_BAND 16\n#define FP8_GPC_ORDER 1\n")
    assert "while (v + 12 < lk_target)" in quorum
    for name in ("trace.cu", "gpc_raster.cu", "trace_gpc_raster.cu", "band16_gpc1_quorum12.cu",
                 "trace_band8_gpc1_barrier.cu"):  # gpc_groups inlined once, no include
        text = (tmp_path / name).read_text()
        assert text.count('extern "C" int gpc_groups(') == 1 and "#include \"" not in text, name


def test_a_step_8_without_the_changed_lines_is_one_line_and_exit_2(probe, capsys):
    text = STEP8.read_text().replace("group_m = 16 / cm", "group_m = 8 / cm")
    with pytest.raises(SystemExit) as e:
        probe.variants(text)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "0 copies" in err and "update this probe" in err and len(err.splitlines()) == 1


def builds_without_spills(src, tmp_path, kernels: int) -> None:
    """src builds for sm_90a, and ptxas reports at least `kernels` functions, none of them spilling."""
    r = subprocess.run(["nvcc", "-O3", "-std=c++17", "-Xptxas", "-v", "-gencode", "arch=compute_90a,code=sm_90a",
                        "-c", str(src), "-o", str(tmp_path / "x.o")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    spills = [line for line in r.stderr.splitlines() if "spill" in line]
    assert len(spills) >= kernels and all("0 bytes spill stores, 0 bytes spill loads" in x for x in spills), spills


@nvcc_test
@needs_cuobjdump
def test_the_raster_variant_at_step_8s_settings_is_step_8s_machine_code(probe, tmp_path):
    src = tmp_path / "group16_serp1.cu"
    src.write_text(probe.variants(STEP8.read_text())[src.name])
    same, step8 = sm90a_sass(tmp_path, src), sm90a_sass(tmp_path, STEP8)
    assert len(step8) >= 2 and same.keys() == step8.keys()
    for name, code in step8.items():
        assert [(x.text, x.lo, x.hi) for x in same[name]] == [(x.text, x.lo, x.hi) for x in code], name


@nvcc_test
@pytest.mark.parametrize("name", ["round_barrier.cu", "round_barrier_every4.cu", "round_quorum12.cu",
                                  "round_timeout1500.cu", "row_barrier.cu", "row_barrier_o1.cu",
                                  "pair_barrier.cu", "hgroup16_serp1.cu", "trace.cu", "gpc_raster.cu",
                                  "band16_gpc1_quorum12.cu"])
def test_the_barrier_and_raster_variants_build_clean_for_sm90a(probe, tmp_path, name):
    src = tmp_path / name
    src.write_text(probe.variants(STEP8.read_text())[name])
    builds_without_spills(src, tmp_path, kernels=2)


def test_step_9s_variants_are_its_switches_and_a_sparser_barrier(tmp_path):
    r = subprocess.run([sys.executable, str(PROBE), "write", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    step9 = STEP9.read_text()
    assert (tmp_path / "step9_never.cu").read_text() == "#define FP9_WAIT_CYCLES 0u\n" + step9
    assert (tmp_path / "step9_no_barrier.cu").read_text() == "#define FP9_QUORUM 1000000\n" + step9
    wide_only = "BN == BN_WIDE && FP9_SCHED"
    assert step9.count(wide_only) == 3
    assert (tmp_path / "step9_narrow.cu").read_text() == step9.replace(wide_only, "FP9_SCHED")
    per_gpc = (tmp_path / "step9_gpc_barrier.cu").read_text()
    assert "atomicAdd(&g_round_gpc[gpc], 1u);" in per_gpc and "atomicAdd(&g_round, 1u);" not in per_gpc
    assert "g_gpc_n[h] = 0, g_round_gpc[h] = 0;" in per_gpc  # zeroed by the last CTA with the others
    assert (tmp_path / "step9_gpc_barrier_q2.cu").read_text() == "#define FP9_GQUORUM 2\n" + per_gpc
    assert "t >= clusters && (t / clusters) % 4 == 0) {" in (tmp_path / "step9_every4.cu").read_text()
    assert (tmp_path / "step9_quorum48.cu").read_text() == "#define FP9_QUORUM 48\n" + step9


def test_a_step_9_without_the_changed_lines_is_one_line_and_exit_2(probe, capsys):
    step9 = STEP9.read_text().replace("all but FP9_QUORUM\n", "all but a quorum\n")
    with pytest.raises(SystemExit) as e:
        probe.variants(STEP8.read_text(), step9)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "09_gpc_bands.cu has 0 copies" in err and len(err.splitlines()) == 1


@nvcc_test
@needs_cuobjdump
@pytest.mark.parametrize("name", ["step9_never.cu", "step9_no_barrier.cu", "step9_every2.cu",
                                  "step9_gpc_barrier.cu"])
def test_step_9s_variants_change_only_the_wide_kernels_producer_side(probe, tmp_path, name):
    """0 spills; the 128-wide kernel step 8's machine code, and
    the wide kernel's consumers step 9's math and sync instructions (tests/scripts/test_fp8_gemm_step9.py)."""
    src = tmp_path / name
    src.write_text(probe.variants(STEP8.read_text(), STEP9.read_text())[name])
    builds_without_spills(src, tmp_path, kernels=4)
    step9 = load_script(ROOT / "tests" / "scripts" / "test_fp8_gemm_step9.py")
    variant, step8, shipped = (step9.kernels(tmp_path, f) for f in (src, STEP8, STEP9))
    assert variant["128"] == step8["128"]
    assert step9.consumer_ops(variant["144"])[1] == step9.consumer_ops(shipped["144"])[1]


def claimed_ops(probe, tmp_path, name: str) -> dict[str, tuple[list[str], list[str], bool]]:
    """Variant `name` of step 8 built (0 spills, both kernels): per kernel width, the variant's opcodes,
    step 8's, and whether the consumers' math and sync instructions are step 8's."""
    src = tmp_path / name
    src.write_text(probe.variants(STEP8.read_text())[name])
    builds_without_spills(src, tmp_path, kernels=2)
    step9 = load_script(ROOT / "tests" / "scripts" / "test_fp8_gemm_step9.py")
    variant, step8 = step9.kernels(tmp_path, src), step9.kernels(tmp_path, STEP8)
    return {w: ([step9.opcode(t) for t, _, _ in variant[w]], [step9.opcode(t) for t, _, _ in step8[w]],
                step9.consumer_ops(variant[w])[1] == step9.consumer_ops(step8[w])[1]) for w in ("128", "144")}


@nvcc_test
@needs_cuobjdump
def test_the_claimed_variant_claims_per_cluster_and_keeps_the_consumers_math(probe, tmp_path):
    """Both kernels: 0 spills, two ATOMG (the claim a tile, the clusters' end count), the tile handed to
    both CTAs by a distributed store and a release.cluster arrive; the consumers' math and sync
    instructions are step 8's."""
    for width, (ops, base, same_math) in claimed_ops(probe, tmp_path, "claimed.cu").items():
        assert sum(op.startswith("ATOMG") for op in ops) == 2, width
        assert not any(op.startswith("ATOMG") for op in base)
        assert same_math, width


@nvcc_test
@needs_cuobjdump
def test_the_async_claimed_variant_hands_over_without_gpu_fences(probe, tmp_path):
    """claimed_async.cu: the tile goes to both CTAs by two st.async (STAS), so its kernels have no more
    MEMBAR and CCTL than step 8's (claimed.cu's release.cluster arrive and acquire.cluster waits add
    both); still two ATOMG, 0 spills, the consumers' math and sync instructions step 8's."""
    for width, (ops, base, same_math) in claimed_ops(probe, tmp_path, "claimed_async.cu").items():
        assert sum(op.startswith("ATOMG") for op in ops) == 2, width
        assert sum(op == "STAS" for op in ops) == 2, width
        for fence in ("MEMBAR", "CCTL"):
            assert sum(op.startswith(fence) for op in ops) == sum(op.startswith(fence) for op in base), (width, fence)
        assert same_math, width



@nvcc_test
@needs_cuobjdump
@pytest.mark.parametrize("name", ["step9_no_loads.cu", "step9_no_shared_loads.cu"])
def test_the_load_cutting_variants_keep_step_9s_math(probe, tmp_path, name):
    """For timing only: step 9 with its loads (or the shared operand's multicast) cut after the first
    round. Both kernels build without spills and keep step 9's TMA loads (the first round's) and its
    consumers' math and sync instructions; step9_no_loads adds an arrival without bytes beside each
    expect_tx, step9_no_shared_loads a branch around each multicast."""
    src = tmp_path / name
    src.write_text(probe.variants(STEP8.read_text(), STEP9.read_text())[name])
    builds_without_spills(src, tmp_path, kernels=2)
    step9 = load_script(ROOT / "tests" / "scripts" / "test_fp8_gemm_step9.py")
    variant, shipped = step9.kernels(tmp_path, src), step9.kernels(tmp_path, STEP9)
    for width in ("128", "144"):
        ops = Counter(step9.opcode(t) for t, _, _ in variant[width])
        base = Counter(step9.opcode(t) for t, _, _ in shipped[width])
        for load in ("UTMALDG.2D", "UTMALDG.2D.MULTICAST"):
            assert ops[load] == base[load] > 0, (width, load)
        if name == "step9_no_loads.cu":
            assert ops["SYNCS.ARRIVE.TRANS64"] == 2 * base["SYNCS.ARRIVE.TRANS64"] > 0, width
        else:
            assert ops["BRA"] > base["BRA"], width
        assert step9.consumer_ops(variant[width])[1] == step9.consumer_ops(shipped[width])[1], width


def test_spreads_measures_the_sharers_of_a_round(probe):
    # round 0: two CTAs read rows 0 (one GPC, 300 ns apart at k-step 0), two read rows 128 (two GPCs,
    # 100 ns apart); round 1: one CTA alone on its rows (no set). gpc[sm]: SMs 0-1 one GPC, 2 another.
    entries = [(1000, 5000, 9000, 0, 0, 0), (1300, 5600, 9900, 1, 0, 0),
               (1100, 5100, 9100, 0, 0, 128), (1200, 5300, 9500, 2, 0, 128),
               (20000, 24000, 28000, 1, 1, 0)]
    got = probe.spreads(entries, gpc=[0, 0, 2])
    assert got["sharer sets"] == 2 and got["sharers a set (median)"] == 2
    assert got["in one GPC (share of sets)"] == 0.5
    assert got["GPCs a set's CTAs on mapped SMs run in (median)"] == 1  # SM 2 alone: its GPC unknown
    assert got["spread at k-step 0 (us)"] == pytest.approx(0.2)  # median of 0.3 and 0.1
    assert got["spread at k-step K/2 (us)"] == pytest.approx(0.4)  # 0.6 and 0.2
    assert got["spread at the last k-step (us)"] == pytest.approx(0.65)  # 0.9 and 0.4
    assert got["a round's spread at k-step 0 (us)"] == pytest.approx(0.15)  # round 0: 0.3; round 1: 0
    assert got["tile time, first to last k-step (us)"] == pytest.approx(8.0)
    assert probe.spreads(entries[-1:], gpc=[0, 0, 2]) == {}


@pytest.mark.parametrize("argv", [["call", "cublas"], ["call", "cublas", "8192", "8192", "8192"]])
def test_call_of_the_baseline_needs_no_library_and_says_so_without_a_gpu(argv):
    # `call cublas` times torch._scaled_mm instead of a built answer: no .so is looked for, and on a
    # machine without CUDA it stops at the device check (one line, exit 2), not at a missing file.
    r = subprocess.run([sys.executable, str(PROBE), *argv], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "fp8_coalescing.py: no CUDA device answered (this probe runs on a GPU machine)"]


def test_call_of_a_missing_library_is_one_line_and_exit_2(tmp_path):
    r = subprocess.run([sys.executable, str(PROBE), "call", str(tmp_path / "none.so")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "none.so" in r.stderr
