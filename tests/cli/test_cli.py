"""The CLI through typer's CliRunner: exit codes (README.md, "Verdicts and exit codes"), --json, clear
errors without tracebacks."""
from __future__ import annotations

import copy
import json

import pytest
from conftest import PROBLEMS_DIR, nvcc_test
from toy_problem import COMPLETE, VALID, write_complete, write_problem
from typer.testing import CliRunner

import cli.verify_cmd  # noqa: F401  (registers `judge verify`)
from cli.app import app
from judge.contract.report import Report
from judge.gpu import device

runner = CliRunner()

VECTOR_ADD_OK = """\
#include <cuda_runtime.h>
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* A, const float* B, float* C, int n) {
    add<<<(n + 255) / 256, 256>>>(A, B, C, n);
}
"""
VECTOR_ADD_BROKEN = """\
#include <cuda_runtime.h>
extern "C" void solve(const float* A, const float* B, float* C, int n) { this is not C++; }
"""
NO_GPU = not device.gpus()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def no_traceback(result) -> None:
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


def test_list():
    r = invoke("list")
    assert r.exit_code == 0, r.output
    assert "vector_add" in r.output


def test_list_json():
    r = invoke("list", "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["problems"]
    by_name = {row["name"]: row for row in rows}
    assert by_name["vector_add"]["level"] == "easy" and by_name["vector_add"]["title"]
    levels = ["easy", "medium", "hard", "hard+", "hard++"]
    assert [levels.index(x["level"]) for x in rows] == sorted(levels.index(x["level"]) for x in rows)


def test_show():
    r = invoke("show", "vector_add")
    assert r.exit_code == 0, r.output
    assert 'extern "C" void solve(const float* A, const float* B, float* C, int n);' in r.output
    assert "allclose" in r.output


def test_show_json():
    r = invoke("show", "vector_add", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["prototype"] == 'extern "C" void solve(const float* A, const float* B, float* C, int n)'
    assert data["shapes"] == {"A": "[n]", "B": "[n]", "C": "[n]"}


def test_show_by_path():
    r = invoke("show", str(PROBLEMS_DIR / "vector_add"), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["name"] == "vector_add"


def test_show_unknown_problem():
    r = invoke("show", "nope")
    assert r.exit_code == 2, r.output
    assert "no problem 'nope'" in r.output and "vector_add" in r.output  # names the known ones
    no_traceback(r)


def test_show_unknown_problem_json():
    r = invoke("show", "nope", "--json")
    assert r.exit_code == 2, r.output
    data = json.loads(r.stdout)
    assert data["exit_code"] == 2 and "nope" in data["error"]


def broken_problem(tmp_path):
    data = copy.deepcopy(VALID)
    data["check"]["foo"] = 1
    data["signature"][0]["type"] = "double*"
    data["colour"] = "blue"
    return write_problem(tmp_path, data)


def broken_complete_problem(tmp_path):
    """The complete toy (every file `judge validate` asks for) with the spec errors of broken_problem."""
    d = write_complete(tmp_path)
    data = copy.deepcopy(COMPLETE)
    data["check"]["foo"] = 1
    data["signature"][0]["type"] = "double*"
    data["colour"] = "blue"
    write_problem(tmp_path / "problems", data, reference=None)
    return d


def test_validate_broken_problem_prints_every_error(tmp_path):
    d = broken_complete_problem(tmp_path)
    r = invoke("validate", str(d))
    assert r.exit_code == 2, r.output
    for loc in ("check.foo", "signature[0].type", "colour"):
        assert loc in r.output, r.output
    assert "3 error(s)" in r.output
    no_traceback(r)


def test_validate_json(tmp_path):
    d = broken_complete_problem(tmp_path)
    r = invoke("validate", str(d), "vector_add", "--json", "--quick")
    assert r.exit_code == 2, r.output
    got = json.loads(r.stdout)
    rows = got["problems"]
    assert len(rows) == 2 and not got["ok"]
    assert len(rows[0]["errors"]) == 3 and {e["rule"] for e in rows[0]["errors"]} == {"spec"}
    assert rows[1] == {"problem": "vector_add", "path": str(PROBLEMS_DIR / "vector_add"), "errors": []}


def test_validate_good_problem(tmp_path):
    r = invoke("validate", str(write_complete(tmp_path)))
    assert r.exit_code == 0, r.output


def test_validate_rejects_control_without_expected_line(tmp_path):
    d = write_problem(tmp_path, VALID)
    (d / "wrong").mkdir()
    (d / "wrong" / "bad.cu").write_text("// no status here\n")
    r = invoke("validate", str(d))
    assert r.exit_code == 2, r.output
    assert "expected: STATUS" in r.output


def test_validate_missing_folder(tmp_path):
    r = invoke("validate", str(tmp_path / "nowhere"))
    assert r.exit_code == 2, r.output
    assert "nowhere" in r.output
    no_traceback(r)


def test_show_and_submit_on_a_broken_problem(tmp_path):
    d = broken_problem(tmp_path)
    r = invoke("show", str(d))
    assert r.exit_code == 2, r.output
    assert "invalid problem" in r.output and "check.foo" in r.output and "signature[0].type" in r.output
    no_traceback(r)
    f = tmp_path / "x.cu"
    f.write_text(VECTOR_ADD_OK)
    r = invoke("submit", str(d), str(f), "--json")
    assert r.exit_code == 2, r.output
    data = json.loads(r.stdout)
    assert len(data["details"]) == 3 and any("check.foo" in x for x in data["details"])


def test_list_skips_broken_problems(tmp_path, monkeypatch):
    write_problem(tmp_path, VALID, folder="toy")
    broken = copy.deepcopy(VALID)
    broken["name"] = "broken"
    broken["colour"] = "blue"
    write_problem(tmp_path, broken, folder="broken")
    monkeypatch.setenv("JUDGE_PROBLEMS", str(tmp_path))
    r = invoke("list", "--json")
    assert r.exit_code == 0, r.output
    assert [row["name"] for row in json.loads(r.stdout)["problems"]] == ["toy"]
    r = invoke("list")
    assert r.exit_code == 0, r.output
    assert "toy" in r.output and "skipped" in r.output and "broken" in r.output


def test_init_writes_a_starter_and_refuses_to_overwrite(tmp_path):
    target = tmp_path / "x.cu"
    r = invoke("init", "vector_add", "-o", str(target))
    assert r.exit_code == 0, r.output
    text = target.read_text()
    assert 'extern "C" void solve(const float* A, const float* B, float* C, int n) {' in text
    target.write_text("// my work")
    r = invoke("init", "vector_add", "-o", str(target))
    assert r.exit_code == 2, r.output
    assert "exists" in r.output and "--force" in r.output
    assert target.read_text() == "// my work"
    r = invoke("init", "vector_add", "-o", str(target), "--force")
    assert r.exit_code == 0, r.output
    assert target.read_text() == text


def test_submit_missing_file(tmp_path):
    r = invoke("submit", "vector_add", str(tmp_path / "missing.cu"))
    assert r.exit_code == 2, r.output
    assert "no such file" in r.output
    no_traceback(r)


def test_init_lang_triton_writes_a_py_starter_and_unknown_languages_are_usage_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = invoke("init", "vector_add", "--lang", "triton")
    assert r.exit_code == 0, r.output
    assert "judge test vector_add.py --cpu" in r.output
    text = (tmp_path / "vector_add.py").read_text()
    assert text.startswith("# judge: vector_add\n") and "def solve(A: torch.Tensor" in text
    r = invoke("init", "vector_add", "--lang", "cobol")
    assert r.exit_code == 2 and "unknown language 'cobol' (known: cuda, triton)" in r.output, r.output
    r = invoke("show", "vector_add", "--json")
    assert json.loads(r.stdout)["py_prototype"].startswith("def solve(A: torch.Tensor, B: torch.Tensor")


def test_submit_not_a_solution_file(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("print(1)")
    r = invoke("submit", "vector_add", str(f))
    assert r.exit_code == 2, r.output
    assert "not a .cu or .py file" in r.output


def test_submit_unknown_problem(tmp_path):
    f = tmp_path / "x.cu"
    f.write_text(VECTOR_ADD_OK)
    r = invoke("submit", "nope", str(f), "--json")
    assert r.exit_code == 2, r.output
    assert "nope" in json.loads(r.stdout)["error"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """Both files, prebuilt for sm_90a in one build_many: the CLI's builds below are cache hits."""
    from judge.build import nvcc as build
    from judge.build.cuda import CUDA
    from judge.problem.spec import load_problem

    d = tmp_path_factory.mktemp("cli-src")
    ok, broken = d / "ok.cu", d / "broken.cu"
    ok.write_text(VECTOR_ADD_OK)
    broken.write_text(VECTOR_ADD_BROKEN)
    p = load_problem(PROBLEMS_DIR / "vector_add")
    build.build_many([CUDA.request(p, ok, "sm_90a"), CUDA.request(p, broken, "sm_90a")])
    return ok, broken


@nvcc_test
@pytest.mark.skipif(not NO_GPU, reason="checks the verdict on a machine without a GPU")
@pytest.mark.parametrize("command", ["submit", "test"])
def test_submit_without_gpu_is_internal_error(sources, command):
    ok, _ = sources
    r = invoke(command, "vector_add", str(ok), "--json", "--arch", "sm_90a")
    assert r.exit_code == 3, r.output
    report = Report.model_validate_json(r.stdout)
    assert report.status.value == "INTERNAL_ERROR"
    assert "no CUDA device" in report.message
    assert report.build and report.build.ok and report.build.cached
    assert report.problem == "vector_add" and report.mode == command


@nvcc_test
@pytest.mark.skipif(not NO_GPU, reason="checks the verdict on a machine without a GPU")
def test_submit_without_gpu_text(sources):
    ok, _ = sources
    r = invoke("submit", "vector_add", str(ok), "--arch", "sm_90a")
    assert r.exit_code == 3, r.output
    assert "INTERNAL_ERROR" in r.output and "no CUDA device" in r.output
    no_traceback(r)


@nvcc_test
def test_submit_compile_error(sources):
    _, broken = sources
    r = invoke("submit", "vector_add", str(broken), "--json", "--arch", "sm_90a")
    assert r.exit_code == 1, r.output
    report = Report.model_validate_json(r.stdout)
    assert report.status.value == "COMPILE_ERROR"
    assert "broken.cu" in report.message and "command:" in report.message and "nvcc" in report.message
    assert report.build and not report.build.ok


@nvcc_test
def test_submit_compile_error_text(sources):
    _, broken = sources
    r = invoke("submit", "vector_add", str(broken), "--arch", "sm_90a")
    assert r.exit_code == 1, r.output
    assert "COMPILE_ERROR" in r.output and "nvcc" in r.output and "broken.cu" in r.output
    no_traceback(r)


@nvcc_test
def test_attempts_are_recorded_and_listed(sources, tmp_path):
    """A COMPILE_ERROR is an attempt: it is stored, and `judge list` counts it; the judge's own
    failures (INTERNAL_ERROR, e.g. no GPU) are not attempts and are not stored."""
    ok, broken = sources
    db = tmp_path / "j.db"
    r = invoke("submit", "vector_add", str(broken), "--json", "--arch", "sm_90a", "--db", str(db))
    assert r.exit_code == 1, r.output
    from judge.store import Store

    with Store(db) as s:
        assert [x.status.value for x in s.reports()] == ["COMPILE_ERROR"]
    rows = {x["name"]: x for x in json.loads(invoke("list", "--json", "--db", str(db)).stdout)["problems"]}
    assert rows["vector_add"]["attempts"] == 1 and not rows["vector_add"]["solved"]
    r = invoke("submit", "vector_add", str(broken), "--json", "--arch", "sm_90a", "--db", str(db), "--no-record")
    if NO_GPU:
        invoke("submit", "vector_add", str(ok), "--json", "--arch", "sm_90a", "--db", str(db))
    with Store(db) as s:
        assert s.count() == 1


def test_list_shows_solved(tmp_path):
    from judge.store import Store

    db = tmp_path / "j.db"
    r = invoke("list", "--db", str(db))
    assert r.exit_code == 0, r.output
    assert not db.exists(), "listing must not create a store"
    with Store(db) as s:
        s.record(Report(problem="relu", solution="r.cu", source_sha256="1", mode="submit", status="ACCEPTED",
                        geomean_speedup=1.37))
        s.record(Report(problem="gelu", solution="g.cu", source_sha256="2", mode="test", status="WRONG_ANSWER"))
    rows = {x["name"]: x for x in json.loads(invoke("list", "--json", "--db", str(db)).stdout)["problems"]}
    assert rows["relu"]["solved"] and rows["relu"]["best_speedup"] == 1.37
    assert not rows["gelu"]["solved"] and rows["gelu"]["attempts"] == 1
    assert not rows["vector_add"]["solved"] and rows["vector_add"]["attempts"] == 0
    r = invoke("list", "--db", str(db))
    assert "1.37×" in r.output and "1 attempt" in r.output and "1 of " in r.output, r.output


def test_doctor_json():
    r = invoke("doctor", "--json")
    findings = json.loads(r.stdout)
    names = {f["name"]: f for f in findings}
    assert {"GPU", "nvcc", "torch", "ninja", "docker", "pid namespace"} <= set(names)
    assert names["pid namespace"]["required"] is False  # judging goes on without one
    required_ok = all(f["ok"] for f in findings if f["required"])
    assert r.exit_code == (0 if required_ok else 3), r.output
    if NO_GPU:
        assert not names["GPU"]["ok"] and names["GPU"]["fix"] and r.exit_code == 3


def test_no_args_shows_help():
    r = invoke()
    assert "submit" in r.output and "validate" in r.output and "verify" in r.output


def test_unknown_option_is_usage_error():
    r = invoke("list", "--frobnicate")
    assert r.exit_code == 2, r.output


def test_the_text_report_names_what_the_timed_worker_tuned():
    """Under the timed worker's warm-up line, one line per configuration its autotuners kept (escaped:
    the text comes from the submission's process); the tests' worker's picks are not shown."""
    import io

    from rich.console import Console

    from cli import render
    from judge.contract.report import WarmUp
    from judge.contract.verdict import Status

    r = Report(problem="hgemm", solution="t.py", status=Status.ACCEPTED, source_sha256="0" * 64, mode="submit")
    r.warm_up = [WarmUp(phase="tests", workloads=1, seconds=1.0, compile_s=0.5, kernels=1, configs=2,
                        tuned=["M=1: k: BLOCK_M: 16"]),
                 WarmUp(phase="timed", workloads=1, seconds=2.0, compile_s=1.0, kernels=2, configs=2,
                        tuned=["M=4096: k: BLOCK_M: 128, [bold]num_warps: 8"])]
    buf = io.StringIO()
    render.report(Console(file=buf, width=200), r)
    out = buf.getvalue()
    assert "autotuner kept on M=4096: k: BLOCK_M: 128, [bold]num_warps: 8" in out and "BLOCK_M: 16" not in out
