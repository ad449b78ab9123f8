"""`judge profile` (judge/runner/profile.py, cli/tools_cmd.py) without a GPU: the ncu CSV parser on a
recorded-format fixture, the ncu command line, the choice of workload, the missing-ncu error, and
the whole command through a stand-in `ncu` that answers with the fixture."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import PROBLEMS_DIR, ROOT, SOLUTIONS_DIR, nvcc_test
from typer.testing import CliRunner

import cli.tools_cmd  # noqa: F401  (registers `judge profile`)
from cli.app import app
from judge.problem import spec
from judge.runner import profile as prof

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ncu_raw.csv"  # hand-written in ncu's format
runner = CliRunner()


def test_parse_raw_csv_fixture():
    kernels = prof.parse_csv(FIXTURE.read_text())
    assert [k.id for k in kernels] == [0, 1]
    h, t = kernels
    assert h.kernel == "void hgemm_kernel<true>(const __half *, const __half *, __half *, int, int, int)"
    assert (h.grid, h.block) == ("(16, 16, 1)", "(256, 1, 1)")
    assert h.duration_ns == 1_104_576 and h.duration_us == pytest.approx(1104.576)
    assert (h.dram_pct, h.sm_pct, h.occupancy_pct) == (11.82, 63.95, 12.48)
    assert h.tensor_hmma_pct == 47.31 and h.tensor_gmma_pct is None  # n/a
    assert h.tensor_pct == 47.31
    assert (h.smem_conflicts_ld, h.smem_conflicts_st) == (1_572_864, 98_304)
    assert h.registers == 119 and (h.local_ld_bytes, h.local_st_bytes) == (0, 0)
    assert t.kernel.startswith("tail_kernel(") and t.duration_ns == 2336
    assert (t.local_ld_bytes, t.local_st_bytes, t.registers) == (2048, 4096, 255)
    assert t.tensor_pct == 0


def test_parse_scaled_units_and_missing_columns():
    text = ('"ID","Kernel Name","gpu__time_duration.sum","l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"\n'
            '"","","usecond","Kbyte"\n'
            '"3","k(int, float)","1,024.50","2.5"\n')
    (k,) = prof.parse_csv(text)
    assert k.id == 3 and k.kernel == "k(int, float)"
    assert k.duration_ns == pytest.approx(1_024_500) and k.local_st_bytes == pytest.approx(2500)
    assert k.dram_pct is None and k.registers is None  # not asked for: None, not 0


def test_parse_without_a_table():
    assert prof.parse_csv("==PROF== Connected to process 1\n==ERROR== no kernels were profiled\n") == []


def test_refused_metrics():
    ms = [prof.METRICS["sm_pct"], prof.METRICS["dram_pct"], prof.METRICS["smem_conflicts_ld"],
          prof.METRICS["smem_conflicts_st"]]
    out = ("==PROF== Connected to process 7\n"
           "==ERROR== Failed to find metric regex:^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st\\.sum$\n"
           "sm__throughput is mentioned here, outside an error line\n")
    assert prof.refused_metrics(ms, out) == [prof.METRICS["smem_conflicts_st"]]
    assert prof.refused_metrics(ms, "==ERROR== Failed to find metric regex:^sm__throughput\\.avg$") == [ms[0]]
    assert prof.refused_metrics(ms, "==ERROR== The application returned an error code (1).") == []


def test_number():
    assert prof.number("1,234", "") == 1234
    assert prof.number("n/a", "%") is None and prof.number("", "") is None
    assert prof.number("2", "msecond") == 2e6


def test_ncu_command():
    cmd = prof.ncu_command("/opt/ncu", ["a.sum", "b.pct"], ["python3", "-m", "judge.runner.profile_target", "X"])
    assert cmd[0] == "/opt/ncu" and cmd[-4:] == ["python3", "-m", "judge.runner.profile_target", "X"]
    joined = " ".join(cmd)
    for flag in ("--target-processes all", "--profile-from-start off", "--clock-control none", "--csv",
                 "--page raw", "--print-units base", "--metrics a.sum,b.pct"):
        assert flag in joined, flag
    assert "--kernel-name" not in cmd
    cmd = prof.ncu_command("ncu", ["a.sum"], ["t"], kernel_regex="hgemm.*")
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:hgemm.*" and cmd[-1] == "t"
    assert set(prof.METRICS.values()) >= {"gpu__time_duration.sum", "launch__registers_per_thread"}


def test_pick_workload():
    p = spec.load_problem(PROBLEMS_DIR / "hgemm")
    benches = p.spec.benchmarks
    assert prof.pick_workload(p, None) == benches[0]
    assert prof.pick_workload(p, "1") == benches[1]
    wid = spec.workload_id(benches[-1])
    assert prof.pick_workload(p, wid) == benches[-1]
    assert prof.pick_workload(p, wid.replace(",", ", ")) == benches[-1]
    assert prof.pick_workload(p, spec.workload_id(p.spec.tests[0])) == p.spec.tests[0]
    with pytest.raises(prof.ShapeError, match="benchmark workloads"):
        prof.pick_workload(p, str(len(benches)))
    with pytest.raises(prof.ShapeError, match="no workload"):
        prof.pick_workload(p, "M=1")


@pytest.fixture
def no_ncu(tmp_path, monkeypatch):
    """A PATH without ncu, and no toolkit or /opt install to fall back on."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(prof.toolkit, "cuda_home", lambda: None)
    monkeypatch.setattr(prof.glob, "glob", lambda pattern: [])
    assert prof.ncu_path() is None


def test_missing_ncu_is_internal_error(no_ncu):
    args = ["profile", str(PROBLEMS_DIR / "vector_add"), str(SOLUTIONS_DIR / "vector_add" / "02_float4.cu")]
    r = runner.invoke(app, args)
    assert r.exit_code == 3, r.output
    assert "INTERNAL_ERROR: ncu not found; install Nsight Compute or put ncu on PATH" in r.output
    r = runner.invoke(app, args + ["--json"])
    assert r.exit_code == 3 and json.loads(r.stdout)["error"].startswith("INTERNAL_ERROR: ncu not found")


def test_a_language_the_profiled_program_cannot_load_is_usage(fake_ncu, monkeypatch):
    monkeypatch.setattr(prof, "PROFILED_WORKERS", {"native": "lib"})
    src = str(SOLUTIONS_DIR / "vector_add" / "triton_01_blocked.py")
    r = runner.invoke(app, ["profile", src])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert "judge profile loads CUDA (.cu) and Triton (.py) solutions" in r.output and "triton" in r.output
    r = runner.invoke(app, ["profile", src, "--json"])
    assert r.exit_code == 2 and "not built yet" in json.loads(r.stdout)["error"]
    assert not fake_ncu.exists()  # ncu never ran


def test_a_triton_file_is_profiled_from_its_checked_text(fake_ncu):
    src = SOLUTIONS_DIR / "vector_add" / "triton_01_blocked.py"
    r = runner.invoke(app, ["profile", str(src), "--json"])  # the problem from its `# judge:` line
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert len(data["kernels"]) == 2 and data["sass"] == {}  # Triton has no build to summarise
    (args,) = _calls(fake_ncu)
    target = args[args.index("judge.runner.profile_target") - 2:]
    assert Path(target[4]) == src.resolve() and target[-2:] == ["--worker", "triton"]
    assert Path(target[3]) == (ROOT / "problems" / "vector_add").resolve()


def test_a_refused_triton_file_never_reaches_ncu(fake_ncu, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("# judge: vector_add\nimport os\n\n\ndef solve(A, B, C, n):\n    os.system('true')\n")
    r = runner.invoke(app, ["profile", str(bad)])
    assert r.exit_code == 1 and "REJECTED" in r.output and "os" in r.output, r.output
    assert not fake_ncu.exists()


def test_the_profiled_program_calls_a_triton_solve_by_name(tmp_path):
    from judge.runner.profile_target import solve_call

    p = spec.load_problem(PROBLEMS_DIR / "vector_add")
    names = [name for name, _ in p.params]
    src = tmp_path / "s.py"
    src.write_text(f"def solve({', '.join(names)}):\n    return ({', '.join(names)},)\n")
    tensors = {t.name: f"tensor {t.name}" for t in p.tensors}
    workload = {name: 7 for name, ct in p.params if not ct.is_tensor}
    got = solve_call(p, "triton", str(src), tensors, workload)()
    assert got == tuple(tensors[n] if ct.is_tensor else 7 for n, ct in p.params)
    src.write_text("import os\n\n\ndef solve(A, B, C, n):\n    pass\n")  # changed after the parent's check
    with pytest.raises(Exception, match="os"):
        solve_call(p, "triton", str(src), tensors, workload)


@pytest.mark.usefixtures("triton_installed")
def test_the_profiled_program_says_what_the_autotuner_kept(monkeypatch):
    from judge.runner.profile_target import solve_call, tuned

    p = spec.load_problem(PROBLEMS_DIR / "hgemm")
    monkeypatch.delitem(sys.modules, "submission", raising=False)
    assert tuned("triton") == ""  # nothing loaded
    tensors = {t.name: None for t in p.tensors}
    solve_call(p, "triton", str(SOLUTIONS_DIR / "hgemm" / "triton_01_tl_dot.py"), tensors, {"M": 1, "N": 1, "K": 1})
    kernel = sys.modules["submission"].hgemm_kernel
    kernel.cache[(4096, 4096, 4096)] = kernel.configs[0]  # as the warm-up call's autotuning keeps it
    assert tuned("triton").startswith("hgemm_kernel: BLOCK_M:") and tuned("native") == ""
    monkeypatch.delitem(sys.modules, "submission")


@pytest.mark.usefixtures("triton_installed")
def test_the_profiled_program_pins_what_tuned_names(monkeypatch):
    from judge.runner.profile_target import pinned, solve_call

    assert pinned("triton", []) is None and "only a Triton file" in pinned("native", ["k: x"])
    p = spec.load_problem(PROBLEMS_DIR / "hgemm")
    monkeypatch.delitem(sys.modules, "submission", raising=False)
    tensors = {t.name: None for t in p.tensors}
    solve_call(p, "triton", str(SOLUTIONS_DIR / "hgemm" / "triton_01_tl_dot.py"), tensors, {"M": 1, "N": 1, "K": 1})
    kernel = sys.modules["submission"].hgemm_kernel
    last = str(kernel.configs[-1])
    assert "no configuration" in pinned("triton", ["hgemm_kernel: BLOCK_M: 3"])
    assert pinned("triton", [f"hgemm_kernel: {last}"]) is None and [str(c) for c in kernel.configs] == [last]
    monkeypatch.delitem(sys.modules, "submission")


def test_tuned_passes_to_the_profiled_program_and_a_mismatch_is_a_usage_error(fake_ncu, monkeypatch):
    src = SOLUTIONS_DIR / "hgemm" / "triton_01_tl_dot.py"
    line = "hgemm_kernel: BLOCK_M: 128, num_warps: 8"
    r = runner.invoke(app, ["profile", "hgemm", str(src), "--arch", "sm_90a", "--tuned", line, "--json"])
    assert r.exit_code == 0, r.output
    (args,) = _calls(fake_ncu)
    assert args[-2:] == ["--tuned", line]
    monkeypatch.setenv("FAKE_NCU_MODE", "usage")
    r = runner.invoke(app, ["profile", "hgemm", str(src), "--arch", "sm_90a", "--tuned", "k: x"])
    assert r.exit_code == 2 and "no autotuned kernel 'k'" in r.output, r.output


def test_tuned_on_a_cuda_file_is_a_usage_error_before_ncu(fake_ncu):
    r = runner.invoke(app, ["profile", "vector_add", str(SOLUTIONS_DIR / "vector_add" / "02_float4.cu"),
                            "--tuned", "k: x"])
    assert r.exit_code == 2 and "not a Triton file" in r.output and not fake_ncu.exists(), r.output


def test_a_triton_files_autotuner_choice_is_in_the_profile(fake_ncu, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_TUNED", "hgemm_kernel: BLOCK_M: 128\x1b[2J")  # the program's claim, cleaned
    src = SOLUTIONS_DIR / "hgemm" / "triton_01_tl_dot.py"
    r = runner.invoke(app, ["profile", "hgemm", str(src), "--arch", "sm_90a", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["tuned"] == ["hgemm_kernel: BLOCK_M: 128[2J"]
    r = runner.invoke(app, ["profile", "hgemm", str(src), "--arch", "sm_90a"])
    assert r.exit_code == 0 and "autotuner kept: hgemm_kernel: BLOCK_M: 128" in r.output, r.output
    assert "may keep another" in r.output  # tuned here, not pinned: the hint says how to pin
    r = runner.invoke(app, ["profile", "hgemm", str(src), "--arch", "sm_90a", "--tuned", "hgemm_kernel: BLOCK_M: 128"])
    assert r.exit_code == 0 and "may keep another" not in r.output, r.output


def test_bad_shape_is_usage(no_ncu):
    r = runner.invoke(app, ["profile", str(PROBLEMS_DIR / "hgemm"),
                            str(SOLUTIONS_DIR / "hgemm" / "04_wmma_pipelined.cu"), "--shape", "99"])
    assert r.exit_code == 2 and "benchmark workloads" in r.output, r.output


# -- the whole command, with a stand-in ncu --------------------------------------------------------
FAKE_NCU = """#!{python}
# Stands in for ncu: records its arguments, plays the profiled program's part (the status file)
# and prints the fixture, or refuses a metric by name once, as ncu does for one it does not know.
import json, os, sys
args = sys.argv[1:]
log = os.environ["FAKE_NCU_LOG"]
calls = open(log).read().count("\\n") if os.path.exists(log) else 0
open(log, "a").write(json.dumps(args) + "\\n")
metrics = args[args.index("--metrics") + 1].split(",")
refuse = os.environ.get("FAKE_NCU_REFUSE")
if refuse and refuse in metrics:
    print("==ERROR== Failed to find metric regex:^" + refuse.replace(".", "\\\\.") + "$")
    sys.exit(1)
target = args[args.index("judge.runner.profile_target") - 2:]
status = target[6]
mode = os.environ.get("FAKE_NCU_MODE", "ok")
if mode == "hang":  # the profiled program hangs: ncu waits on it
    import subprocess
    child = subprocess.Popen(["sleep", "300"])
    open(os.environ["FAKE_NCU_CHILD"], "w").write(str(child.pid))
    child.wait()
if mode == "usage":  # the profiled program's --tuned matched nothing
    json.dump({{"ok": False, "kind": "usage", "error": "--tuned: no autotuned kernel 'k' in the file"}},
              open(status, "w"))
    sys.exit(2)
if mode == "solve":
    json.dump({{"ok": False, "kind": "solve", "error": "CudaError: an illegal memory access was encountered"}},
              open(status, "w"))
    sys.exit(1)
json.dump({{"ok": True, "tuned": os.environ.get("FAKE_NCU_TUNED", "")}}, open(status, "w"))
print("==PROF== Connected to process 1 (" + target[0] + ")")
sys.stdout.write(open(os.environ["FAKE_NCU_CSV"]).read())
"""


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ncu = bin_dir / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "ncu.log"))
    monkeypatch.setenv("FAKE_NCU_CSV", str(FIXTURE))
    return tmp_path / "ncu.log"


def _calls(log: Path) -> list[list[str]]:
    return [json.loads(ln) for ln in log.read_text().splitlines()]


@nvcc_test
def test_profile_command_end_to_end(fake_ncu):
    src = SOLUTIONS_DIR / "hgemm" / "04_wmma_pipelined.cu"
    r = runner.invoke(app, ["profile", "hgemm", str(src), "--shape", "1", "--arch", "sm_90a", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["workload"] == spec.workload_id(spec.load_problem(PROBLEMS_DIR / "hgemm").spec.benchmarks[1])
    assert [k["id"] for k in data["kernels"]] == [0, 1]
    assert data["kernels"][0]["duration_us"] == pytest.approx(1104.576)
    assert data["kernels"][0]["tensor_pct"] == 47.31
    (args,) = _calls(fake_ncu)
    target = args[args.index("judge.runner.profile_target") - 2:]
    assert target[0] == sys.executable and Path(target[4]).name == "lib.so" and Path(target[4]).is_absolute()
    assert Path(target[3]) == (ROOT / "problems" / "hgemm").resolve()  # the problem was named, not a path
    assert json.loads(target[5]) == data_workload(data["workload"])
    assert target[-4:] == ["--calls", "1", "--worker", "native"]

    r = runner.invoke(app, ["profile", "hgemm", str(src), "--arch", "sm_90a"])  # the human table
    assert r.exit_code == 0, r.output
    assert "hgemm_kernel<true>" in r.output and "1,104.6" in r.output and "47.3" in r.output
    assert "tail_kernel" in r.output and "16x16×256" in r.output
    assert "hgemm_kernel<true> sass: " in r.output and "HMMA" in r.output  # the build's SASS summary


def data_workload(wid: str) -> dict:
    return {k: int(v) for k, v in (kv.split("=") for kv in wid.split(","))}


@nvcc_test
def test_refused_metric_is_dropped_and_retried(fake_ncu, monkeypatch):
    gmma = prof.METRICS["tensor_gmma_pct"]
    monkeypatch.setenv("FAKE_NCU_REFUSE", gmma)
    p = spec.load_problem(PROBLEMS_DIR / "vector_add")
    result = prof.run(p, SOLUTIONS_DIR / "vector_add" / "02_float4.cu", arch="sm_90a")
    assert result.dropped_metrics == [gmma]
    first, second = _calls(fake_ncu)
    assert gmma in first[first.index("--metrics") + 1] and gmma not in second[second.index("--metrics") + 1]
    assert len(result.kernels) == 2


@nvcc_test
def test_cuda_error_in_solve_is_runtime_error(fake_ncu, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_MODE", "solve")
    r = runner.invoke(app, ["profile", "vector_add", str(SOLUTIONS_DIR / "vector_add" / "02_float4.cu"),
                            "--arch", "sm_90a"])
    assert r.exit_code == 1 and "RUNTIME_ERROR" in r.output and "illegal memory access" in r.output, r.output


def test_refused_include_is_rejected_before_ncu_runs(fake_ncu):
    r = runner.invoke(app, ["profile", "vector_add", str(ROOT / "tests" / "exploits" / "include_fstream.cu")])
    assert r.exit_code == 1 and "REJECTED" in r.output and "fstream" in r.output, r.output
    assert not fake_ncu.exists()  # ncu never ran


@nvcc_test
def test_compile_error(fake_ncu, tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" void solve(const float* A, const float* B, float* C, int n) { nope; }\n')
    r = runner.invoke(app, ["profile", "vector_add", str(bad), "--arch", "sm_90a"])
    assert r.exit_code == 1 and "COMPILE_ERROR" in r.output, r.output
    assert not fake_ncu.exists()



@nvcc_test
def test_timeout_kills_the_profiled_program(fake_ncu, monkeypatch, tmp_path):
    import os
    import time

    monkeypatch.setenv("FAKE_NCU_MODE", "hang")
    monkeypatch.setenv("FAKE_NCU_CHILD", str(tmp_path / "child.pid"))
    p = spec.load_problem(PROBLEMS_DIR / "vector_add")
    with pytest.raises(prof.ProfileError, match="did not finish within 3 s") as e:
        prof.run(p, SOLUTIONS_DIR / "vector_add" / "02_float4.cu", arch="sm_90a", timeout_s=3)
    assert e.value.status.exit_code == 3
    pid = int((tmp_path / "child.pid").read_text())
    for _ in range(50):  # killed with ncu's session
        try:
            os.kill(pid, 0)
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                break  # dead, not yet reaped
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail("ncu's child outlived the timeout")
