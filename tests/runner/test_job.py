"""The job protocol (judge/runner/job.py): a typed JobSpec in on stdin with a nonce, one Reply back on
a file descriptor named by the environment, never argv or stdout. Real child processes (no GPU,
no nvcc: the files are refused by the static source policy before any build), and children that
misbehave: a malformed, foreign or oversized reply, a child that dies, exits or hangs."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from conftest import PROBLEMS_DIR, ROOT

from judge.contract.verdict import Status
from judge.runner import job
from judge.runner.build_check import BuildCheck

REFUSED = "#include <fstream>\n"  # static source policy: REJECTED before any build


@pytest.fixture
def refused(tmp_path):
    f = tmp_path / "vector_add.cu"
    f.write_text(REFUSED)
    return f


def spec(solution, mode="submit", **kw) -> job.JobSpec:
    return job.JobSpec(problem=PROBLEMS_DIR / "vector_add", solution=solution, mode=mode, **kw)


def fake(body: str) -> list[str]:
    """A child that reads the request like the real one, then runs `body` (fd, req: the request)."""
    return [sys.executable, "-c", "import json, os, sys, signal\n"
            "fd = int(os.environ['JUDGE_JOB_FD'])\nreq = json.loads(sys.stdin.read())\n" + body]


def test_a_real_child_round_trip(refused):
    child = job.Child(spec(refused, budget_s=0.1))
    assert child.proc.args == [sys.executable, "-m", "judge.runner.job"]  # nothing of the protocol in argv
    assert child.nonce not in " ".join(child.proc.args)
    report = child.result(120)
    assert report.status is Status.REJECTED and "fstream" in report.message
    assert report.problem == "vector_add" and report.mode == "submit" and report.solution == str(refused)


def test_a_real_child_build_check_and_stray_output(refused):
    """Output on the child's stdout (here before the job module even starts) never reaches the channel."""
    command = [sys.executable, "-c", "print('a stray line on stdout', flush=True); import runpy; "
               "runpy.run_module('judge.runner.job', run_name='__main__', alter_sys=True)"]
    check = job.run(spec(refused, mode="build", device=None, arch="sm_90a"), 120, command=command)
    assert isinstance(check, BuildCheck) and check.outcome == "REJECTED" and check.arch == "sm_90a"


def test_a_job_the_child_refuses(tmp_path):
    with pytest.raises(job.JobFailed) as e:
        job.run(spec(tmp_path / "missing.cu"), 120)
    assert e.value.kind == "refused" and "no such file" in e.value.message


def test_a_malformed_reply_is_a_clear_failure(refused):
    with pytest.raises(job.JobFailed) as e:
        job.run(spec(refused), 30, command=fake("os.write(fd, b'not json at all')"))
    assert e.value.kind == "protocol" and "malformed reply" in e.value.message
    with pytest.raises(job.JobFailed) as e:  # valid JSON, not a Reply
        job.run(spec(refused), 30, command=fake("os.write(fd, json.dumps({'nonce': req['nonce']}).encode())"))
    assert e.value.kind == "protocol" and "malformed reply" in e.value.message


def test_a_reply_without_the_nonce_or_of_the_wrong_kind(refused):
    check = BuildCheck(problem="vector_add", solution="x.cu", source_sha256="0" * 64, arch="sm_90a", outcome="BUILT")
    other = job.Reply(nonce="f" * 32, check=check).model_dump_json()
    with pytest.raises(job.JobFailed) as e:
        job.run(spec(refused, mode="build"), 30, command=fake(f"os.write(fd, {other!r}.encode())"))
    assert e.value.kind == "protocol" and "nonce" in e.value.message
    body = ("from judge.runner.job import Reply; from judge.runner.build_check import BuildCheck\n"
            f"c = BuildCheck.model_validate_json({check.model_dump_json()!r})\n"
            "os.write(fd, Reply(nonce=req['nonce'], check=c).model_dump_json().encode())")
    assert job.run(spec(refused, mode="build"), 30, command=fake(body)).outcome == "BUILT"
    with pytest.raises(job.JobFailed) as e:  # a build check where a report was asked for
        job.run(spec(refused, mode="submit"), 30, command=fake(body))
    assert e.value.kind == "protocol"


def test_an_oversized_reply_is_cut_off(refused, monkeypatch):
    monkeypatch.setattr(job, "REPLY_CAP_BYTES", 1000)
    t0 = time.monotonic()
    with pytest.raises(job.JobFailed) as e:
        job.run(spec(refused), 30, command=fake("os.write(fd, b'x' * 100000); import time; time.sleep(30)"))
    assert e.value.kind == "protocol" and "cap" in e.value.message and time.monotonic() - t0 < 20


def test_a_child_that_dies_or_exits_without_a_reply(refused):
    with pytest.raises(job.JobFailed) as e:
        job.run(spec(refused), 30, command=fake("print('last words', file=sys.stderr, flush=True)\n"
                                               "os.kill(os.getpid(), signal.SIGKILL)"))
    assert e.value.kind == "died" and "died of signal 9 (SIGKILL)" in e.value.message
    assert "last words" in e.value.log_tail and "last words" in e.value.detail()
    with pytest.raises(job.JobFailed) as e:
        job.run(spec(refused), 30, command=fake("sys.exit(4)"))
    assert e.value.kind == "died" and "exited 4 without a report" in e.value.message


def test_a_hanging_child_is_killed_at_the_deadline(refused):
    t0 = time.monotonic()
    with pytest.raises(job.JobFailed) as e:
        job.run(spec(refused), 0.5, command=["sleep", "30"])
    assert e.value.kind == "timeout" and "within 0.5 s" in e.value.message and time.monotonic() - t0 < 10


def test_the_module_is_no_command_and_needs_a_request():
    r = subprocess.run([sys.executable, "-m", "judge.runner.job"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, input="")
    assert r.returncode == 2 and "no result fd" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(job.JobFailed) as e:  # a request that is not a JobSpec: no reply, a clear tail
        command = [sys.executable, "-c", "import sys, runpy; sys.stdin = open('/dev/null'); "
                   "runpy.run_module('judge.runner.job', run_name='__main__', alter_sys=True)"]
        job.run(spec(ROOT / "x.cu"), 30, command=command)
    assert e.value.kind == "died" and "malformed request" in e.value.log_tail and "Traceback" not in e.value.log_tail


def test_the_spec_is_typed():
    with pytest.raises(ValueError):
        job.JobSpec.model_validate({"problem": "p", "solution": "s.cu", "runner": {"kind": "docker", "gpus": "all"}})
    s = job.JobSpec.model_validate_json(json.dumps({"problem": "p", "solution": "s.cu", "runner": {"kind": "docker"}}))
    assert isinstance(s.runner, job.DockerRunner) and s.runner.gpus == "auto" and s.budget_s is None
