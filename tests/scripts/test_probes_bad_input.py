"""The GPU probes (scripts/probes/) on bad input, without a GPU: one line on stderr and exit 2,
never a traceback, before anything needs CUDA."""
from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, gcc_build, load_script

PROBES = ROOT / "scripts" / "probes"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args,says", [
    (["attention_ncu.py"], "usage: attention_ncu.py ANSWER.so"),
    (["attention_ncu.py", "{bad}"], "is not a built model answer"),
    (["gemm_ncu.py", "{bad}"], "usage: gemm_ncu.py HGEMM.so FP8.so"),
    (["gemm_ncu.py", "{bad}", "{bad}"], "is not a built model answer"),
    (["verdict_phases.py", "no_such_problem", "x.cu"], "no problem.yaml here"),
    (["verdict_phases.py", "vector_add", "{missing}"], "no such file"),
    (["repeatability.py", "no_such_problem", "x.cu"], "no problem.yaml here"),
    (["repeatability.py", "vector_add", "{missing}"], "no such file"),
    (["hgemm_path.py"], "usage: hgemm_path.py LIB.so"),
    (["hgemm_path.py", "{missing}"], "no such file"),
    (["hgemm_path.py", "{bad}"], "is not a built model answer"),
    (["hgemm_path.py", "{libm}"], "does not export hgemm_one_wave_config"),
    (["clocks_under_load.py", "--fp8", "{bad}"], "is not a built model answer"),
    (["attention_tail.py", "{bad}"], "is not a built model answer"),
    (["event_window.py", "{bad}"], "is not event_window.cu built"),
    (["event_window.py", "{libm}"], "is not event_window.cu built"),
    (["flash_attn_split_tail.py", "--out", "{bad}"], "is not a folder"),
    (["flash_attn_check.py", "{missing}"], "no such file"),
    (["flash_attn_check.py", "{bad}"], "is not a built model answer"),
    (["flash_attn_check.py", "{libm}"], "is not a built model answer"),
    (["l2_state.py", "no_such_problem", "{bad}"], "no such problem: no_such_problem"),
    (["l2_state.py", "softmax", "{missing}"], "no such library"),
    (["l2_state.py", "softmax", "{bad}", "--calls", "0"], "--calls 0: from 1 to 1000"),
    (["graph_kernels.py", "no_such_problem"], "no such problem: no_such_problem"),
    (["ipc_mapping.py", "sgemv"], "usage: ipc_mapping.py"),
    (["ipc_mapping.py", "no_such_problem", "baseline"], "no such problem: no_such_problem"),
    (["ipc_mapping.py", "sgemv", "{missing}"], "no such library"),
    (["graph_kernels.py", "sgemv", "--calls", "0"], "--calls 0: from 1 to 1000"),
    (["graph_kernels.py", "sgemv", "--shape", "3"], "--shape 3: sgemv has benchmark shapes 0 to 2"),
    (["hgemm_stream_k.py", "{missing}"], "no such file"),
    (["hgemm_stream_k.py", "{bad}"], "is not a built model answer"),
    (["hgemm_stream_k.py", "{libm}"], "does not export hgemm_stream_k_config"),
    (["hgemm_stream_k.py", "{bad}", "--calls", "0"], "--calls 0: from 1 to 100"),
    (["hgemm_tail_trace.py", "--calls", "101"], "--calls 101: from 1 to 100"),
    (["hgemm_tail_trace.py", "--min-saved", "-1"], "--min-saved -1: 0 or more"),
    (["hgemm_tail_trace.py", "--out", "{bad}"], "is not a folder"),
    (["fp8_coalescing.py"], "usage: fp8_coalescing.py write DIR"),
    (["fp8_coalescing.py", "write", "{bad}"], "is not a folder"),
    (["fp8_coalescing.py", "call", "{missing}"], "no such file"),
    (["fp8_coalescing.py", "call", "{bad}", "1", "2", "x"], "M N K must be three whole numbers"),
    (["fp8_coalescing.py", "call", "{bad}", "64", "64", "40"], "K a multiple of 16"),
    (["fp8_coalescing.py", "call", "{bad}"], "is not a built model answer"),
    (["fp8_coalescing.py", "trace", "{missing}"], "no such file"),
    (["fp8_coalescing.py", "trace", "{bad}", "8", "8", "x"], "M N K must be three whole numbers"),
    (["fp8_coalescing.py", "trace", "{libm}"], "does not export solve"),
    (["lrc_gpc.py"], "usage: lrc_gpc.py LIB.so [STEPS SET]"),
    (["lrc_gpc.py", "{bad}", "1"], "usage: lrc_gpc.py"),
    (["lrc_gpc.py", "{bad}", "a", "4"], "STEPS and SET must be whole numbers"),
    (["lrc_gpc.py", "{bad}", "0", "4"], "STEPS 0: from 1 to 1024"),
    (["lrc_gpc.py", "{bad}", "256", "9"], "SET 9: from 2 to 8"),
    (["lrc_gpc.py", "{missing}"], "no such file"),
    (["lrc_gpc.py", "{libm}"], "does not export gpc_groups"),
])
def test_one_line_and_exit_2(tmp_path, args, says):
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"not a shared library")
    libm = ctypes.util.find_library("m") or "libm.so.6"  # a real library without step 9's functions
    libm_path = next((p for p in (Path("/lib/x86_64-linux-gnu") / libm, Path("/usr/lib64") / libm) if p.is_file()), bad)
    argv = [a.format(bad=bad, missing=tmp_path / "missing.cu", libm=libm_path) for a in args]
    r = _run(str(PROBES / argv[0]), *argv[1:])
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [["--runs", "0"], ["--runs", "x"], ["--device", "-1"], ["--seed"]])
def test_triton_ready_bad_options_are_usage_errors(args):
    r = _run(str(PROBES / "triton_ready.py"), *args)
    assert r.returncode == 2 and "error:" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [[], ["missing.so"], ["x.so", "--rounds", "2"], ["x.so", "--heads", "4,x"],
                                  ["x.so", "--heads", "16"], ["x.so", "--heads", "0,8"]])
def test_attention_tail_bad_options_are_usage_errors(args):
    r = _run(str(PROBES / "attention_tail.py"), *args)
    assert r.returncode == 2 and "error:" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [[], ["--fp8", "missing.so"], ["--attn", "x", "--window", "0"], ["--rounds", "x"]])
def test_clocks_under_load_bad_options_are_usage_errors(args):
    r = _run(str(PROBES / "clocks_under_load.py"), *args)
    assert r.returncode == 2 and "error:" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [["--runs", "1"], ["--min-wall", "-0.1"], ["--device", "-1"], ["--rest", "x"],
                                  ["--min-samples", "-1"], ["--min-samples", "1.5"]])
def test_repeatability_bad_options_are_usage_errors(args):
    r = _run(str(PROBES / "repeatability.py"), "vector_add", "x.cu", *args)
    assert r.returncode == 2 and "error:" in r.stderr and "Traceback" not in r.stderr


def test_repeatability_policy_takes_the_options_given_and_defaults_the_rest():
    mod = load_script(PROBES / "repeatability.py")
    from judge.engine.stats import TimingPolicy

    p = mod.policy_of(mod.parse(["vector_add", "x.cu", "--min-wall", "0.15", "--warmup-ms", "10",
                                 "--min-samples", "20"]))
    default = TimingPolicy()
    assert (p.min_wall_s, p.warmup_ms, p.min_samples) == (0.15, 10.0, 20)
    assert (p.min_time_s, p.rest, p.noise) == (default.min_time_s, default.rest, default.noise)
    assert p.for_baseline().min_wall_s == 0.075  # each baseline run: half the candidate's window


# -- sass_stalls.py: the control bits of cuobjdump's SASS, no GPU ------------------------------------
_SASS = """
\t\tFunction : _Z4loopv
    /*0000*/    S2R R2, SR_TID.X ;    /* 0x0000000000027919 */
    /* 0x000e220000002100 */
    /*0010*/    FMNMX R6, R2, R3, !PT ;    /* 0x0000000302067209 */
    /* 0x001fc80007800000 */
    /*0020*/    @P0 BRA 0x10 ;    /* 0xfffffffc00000947 */
    /* 0x000fea000383ffff */
    /*0030*/    EXIT ;    /* 0x000000000000794d */
    /* 0x000fea0003800000 */
"""


def _sass_stalls():
    return load_script(PROBES / "sass_stalls.py")


def test_sass_stalls_decodes_the_control_bits_and_finds_the_loop():
    ss = _sass_stalls()
    code = ss.parse(_SASS)["_Z4loopv"]
    assert [x.opcode for x in code] == ["S2R", "FMNMX", "BRA", "EXIT"]
    s2r, fmnmx, bra, _ = code
    assert (s2r.stall, s2r.write_barrier, s2r.wait_mask) == (1, 0, 0)  # sets barrier 0
    assert (fmnmx.stall, fmnmx.write_barrier, fmnmx.wait_mask) == (4, None, 1)  # waits on it, then 4 cycles
    assert bra.stall == 5 and ss.loops(code) == [(1, 2)]
    assert ss.loop_line(code, 1, 2).startswith("loop 0x0010-0x0020: 2 instructions, stall cycles 9; ")


@pytest.mark.parametrize("args,says", [
    (["sass_stalls.py", "{missing}"], "No such file"),
    (["sass_stalls.py", "{text}"], "no function with instructions"),
    (["sass_stalls.py", "{sass}", "--function", "nope"], "no function holding 'nope'"),
    (["sass_stalls.py", "{sass}", "--listing", "zz", "10"], "takes two hex addresses"),
])
def test_sass_stalls_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    (tmp_path / "k.sass").write_text(_SASS)
    (tmp_path / "t.txt").write_text("not SASS\n")
    paths = {"{missing}": str(tmp_path / "none.sass"), "{text}": str(tmp_path / "t.txt"),
             "{sass}": str(tmp_path / "k.sass")}
    r = _run(str(PROBES / args[0]), *[paths.get(x, x) for x in args[1:]])
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 2  # argparse's usage line may precede its error


def test_sass_stalls_prints_each_loop_and_a_listing(tmp_path):
    (tmp_path / "k.sass").write_text(_SASS)
    r = _run(str(PROBES / "sass_stalls.py"), str(tmp_path / "k.sass"), "--listing", "0", "10")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "_Z4loopv: 4 instructions, stall cycles 15"
    assert lines[1].startswith("  loop 0x0010-0x0020: 2 instructions, stall cycles 9")
    assert lines[2].startswith("00000 s1  wb0") and "w000001 FMNMX" in lines[3]


@pytest.mark.parametrize("args", [[], ["missing.so"], ["x.so", "--calls", "5"], ["x.so", "--mib", "x"],
                                  ["x.so", "--mib", "5000"], ["x.so", "--mib", ","]])
def test_event_window_bad_options_are_usage_errors(args):
    r = _run(str(PROBES / "event_window.py"), *args)
    assert r.returncode == 2 and "error:" in r.stderr and "Traceback" not in r.stderr


STUB = r"""
int hgemm_one_wave_config(int m, int n, int k) { return m + n + k > 0 ? 0 : -2; }
int hgemm_one_wave_resident(int c) { return c; }
int hgemm_stream_k_config(int m, int n, int k) { return 0; }
void solve(const void* a, const void* b, void* c, int m, int n, int k) {}
int fp8_trace(void* out, int n) { return 0; }
int lrc_gpc_run(const void* src, const void* region, int sms, int steps, int aligned) { return 0; }
int gpc_groups(void* group, int max_sm) { return 0; }
"""


@pytest.mark.parametrize("argv", [["hgemm_path.py", "{lib}"], ["hgemm_stream_k.py", "{lib}"], ["hgemm_tail_trace.py"],
                                  ["graph_kernels.py", "sgemv"], ["l2_state.py", "softmax", "{lib}"],
                                  ["flash_attn_split_tail.py"], ["fp8_coalescing.py", "call", "{lib}"],
                                  ["fp8_coalescing.py", "trace", "{lib}"], ["lrc_gpc.py", "{lib}"]])
def test_the_gpu_probes_say_so_where_no_gpu_answers(tmp_path, tmp_path_factory, argv):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU answers here")
    src = tmp_path / "stub.c"
    src.write_text(STUB)
    lib = gcc_build(tmp_path_factory, src, "stub.so", "-shared", "-fPIC")  # a library with hgemm step 10's exports
    r = _run(str(PROBES / argv[0]), *[a.format(lib=lib) for a in argv[1:]])
    assert r.returncode == 2, r.stderr
    assert "no CUDA device answered" in r.stderr or "needs nvcc and a CUDA device" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
