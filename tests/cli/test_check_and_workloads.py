"""`judge check FILE [PROBLEM]`: build and static policy, no GPU; `judge test --workload N` and
`--shape` run one test workload or a shape of your own, checked against the signature."""
from __future__ import annotations

import json

import pytest
from conftest import PROBLEMS_DIR, nvcc_test
from typer.testing import CliRunner

import judge.engine.run as engine_run
from cli.app import app
from judge.contract.events import Finished
from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.problem import workload_arg
from judge.problem.spec import load_problem

runner = CliRunner()
OK = """\
// judge: vector_add
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* A, const float* B, float* C, int n) { add<<<(n + 255) / 256, 256>>>(A, B, C, n); }
"""
BROKEN = 'extern "C" void solve(const float* A, const float* B, float* C, int n) { nope; }\n'
FORBIDDEN = '#include <fstream>\nextern "C" void solve(const float* A, const float* B, float* C, int n) {}\n'


def cu(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    return f


# -- judge check -------------------------------------------------------------------------------------

@nvcc_test
def test_check_passes_a_good_file_without_a_gpu(tmp_path):
    r = runner.invoke(app, ["check", str(cu(tmp_path, "ok.cu", OK)), "--json", "--arch", "sm_90a"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["ok"] and data["status"] == "OK" and data["problem"] == "vector_add"
    assert [k["kernel"] for k in data["build"]["kernels"]] and data["build"]["kernels"][0]["registers"] > 0
    r = runner.invoke(app, ["check", str(tmp_path / "ok.cu"), "--arch", "sm_90a"])
    assert r.exit_code == 0 and "OK" in r.output and "regs" in r.output


@nvcc_test
def test_check_fails_a_file_that_does_not_build(tmp_path):
    r = runner.invoke(app, ["check", str(cu(tmp_path, "bad.cu", BROKEN)), "vector_add", "--arch", "sm_90a"])
    assert r.exit_code == 1, r.output
    assert "COMPILE_ERROR" in r.output and "bad.cu" in r.output


def test_check_fails_a_file_the_policy_refuses(tmp_path):
    r = runner.invoke(app, ["check", str(cu(tmp_path, "f.cu", FORBIDDEN)), "vector_add", "--json"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.stdout)
    assert not data["ok"] and data["status"] == "REJECTED" and "fstream" in data["message"]


def test_check_takes_the_problem_first_too(tmp_path):
    """`judge test` and `judge submit` take PROBLEM FILE: `judge check PROBLEM FILE` is understood,
    not "no such file: PROBLEM"; a file and a problem that disagree are still a usage error."""
    f = cu(tmp_path, "f.cu", FORBIDDEN)
    folder = str(PROBLEMS_DIR / "vector_add")  # a problem's folder exists too: not taken for the file
    for args in (["vector_add", str(f)], [str(f), "vector_add"], [folder, str(f)]):
        r = runner.invoke(app, ["check", *args, "--json"])
        assert r.exit_code == 1 and json.loads(r.stdout)["status"] == "REJECTED", r.output
    r = runner.invoke(app, ["check", "relu", str(cu(tmp_path, "ok.cu", OK))])
    assert r.exit_code == 2 and "says it is for vector_add" in r.output, r.output
    r = runner.invoke(app, ["check", "vector_add", str(tmp_path / "missing.cu")])
    assert r.exit_code == 2 and "no such file" in r.output and "missing.cu" in r.output, r.output


def test_check_says_what_it_checked_of_a_triton_file(tmp_path):
    r = runner.invoke(app, ["init", "vector_add", "--lang", "triton", "-o", str(tmp_path / "add.py")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["check", str(tmp_path / "add.py")])
    assert r.exit_code == 0, r.output
    assert "its solve() takes the problem's parameters and it passes the static policy" in r.output
    assert "on CPU with --cpu" in r.output
    assert "it builds" not in r.output  # nothing is built for Triton


# -- --workload and --shape -------------------------------------------------------------------------

@pytest.fixture
def seen(monkeypatch):
    """evaluate() replaced: records the problem's tests and the options it was given."""
    got = {}

    def fake_evaluate(problem, source, opts):
        got.update(tests=problem.spec.tests, hidden=opts.hidden, mode=opts.mode)
        yield Finished(Report(problem=problem.name, solution=str(source), source_sha256="x", mode=opts.mode,
                              status=Status.ACCEPTED))

    monkeypatch.setattr(engine_run, "evaluate", fake_evaluate)
    return got


def test_workload_runs_one_test_and_records_nothing(tmp_path, seen):
    db = tmp_path / "j.db"
    vector_add = load_problem("problems/vector_add")
    r = runner.invoke(app, ["test", str(cu(tmp_path, "ok.cu", OK)), "--workload", "3", "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert seen == {"tests": [vector_add.spec.tests[2]], "hidden": 0, "mode": "test"}
    assert "only n=" in r.output and "not recorded" in r.output and not db.exists()


def test_shape_runs_a_workload_of_your_own(tmp_path, seen):
    r = runner.invoke(app, ["test", "vector_add", str(cu(tmp_path, "ok.cu", OK)), "--shape", "n=12345", "--json"])
    assert r.exit_code == 0, r.output
    assert seen["tests"] == [{"n": 12345}] and seen["hidden"] == 0


@pytest.mark.parametrize("args, says", [(["--workload", "99"], "tests 1 to"), (["--workload", "0"], "--workload"),
                                        (["--shape", "n=0"], "positive whole number"),
                                        (["--shape", "m=3"], "not a scalar"),
                                        (["--shape", "n=2.5"], "integer"),
                                        (["--workload", "1", "--shape", "n=3"], "one of them")])
def test_bad_workloads_are_usage_errors(tmp_path, seen, args, says):
    r = runner.invoke(app, ["test", str(cu(tmp_path, "ok.cu", OK)), *args])
    assert r.exit_code == 2, r.output
    assert says in r.output and not seen


def test_shape_text_is_read_and_checked():
    sgemm = load_problem("problems/sgemm")
    assert workload_arg.parse(sgemm, " M=64, N=32 ,K=16") == {"M": 64, "N": 32, "K": 16}
    with pytest.raises(workload_arg.WorkloadError) as e:
        workload_arg.parse(sgemm, "M=64,N=32")
    assert "missing scalar 'K'" in str(e.value) and "M (int), N (int), K (int)" in str(e.value)
    for bad in ("M=1,M=2,N=1,K=1", "junk", "M=x,N=1,K=1"):
        with pytest.raises(workload_arg.WorkloadError):
            workload_arg.parse(sgemm, bad)


def test_show_numbers_the_tests():
    r = runner.invoke(app, ["show", "vector_add"])
    assert "--workload N" in r.output and "1 n=" in r.output
