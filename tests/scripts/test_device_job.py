"""scripts/device_job.sh without a GPU: a batch runs detached in a copy of the repository, one step
after another, each skipped when the budget left is short of what it needs, each one's exit status and
output kept; `wait` prints the steps and says DONE, and packs the logs into $OUT; bad input is one
line and exit 2."""
from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT

SCRIPT = ROOT / "scripts" / "device_job.sh"


def _repo(tmp_path: Path) -> Path:
    """A stand-in repository: the script where it expects itself, and a file the steps read."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "scripts" / "device_job.sh")
    (repo / "marker.txt").write_text("from the copy\n")
    return repo


def _run(repo: Path, tmp_path: Path, *args: str, out: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "KJ_COPY": str(tmp_path / "copy"), "KJ_LOGS": str(tmp_path / "kj" / "logs")}
    env.pop("OUT", None)
    if out is not None:
        env["OUT"] = str(out)
    return subprocess.run(["bash", "scripts/device_job.sh", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.slow  # its last step runs into the 4 s budget
def test_a_batch_runs_detached_in_a_copy_and_skips_what_the_budget_cannot_hold(tmp_path):
    repo = _repo(tmp_path)
    steps = tmp_path / "steps.txt"
    steps.write_text("# a comment, then a blank line\n\n"
                     "first 0 cat marker.txt; echo \"$PWD\"\n"
                     "too_long 100000 echo never\n"
                     "fails 0 echo some output; exit 3\n"
                     "slow 0 sleep 30\n")
    started = _run(repo, tmp_path, "start", "4", str(steps))
    assert started.returncode == 0, started.stderr
    (repo / "marker.txt").write_text("changed after the start\n")  # the batch reads its own copy
    out = tmp_path / "out"
    out.mkdir()
    waited = _run(repo, tmp_path, "wait", "30", out=out)
    lines = waited.stdout.splitlines()
    assert waited.returncode == 0 and lines[-1] == "== DONE", waited.stdout
    said = "\n".join(lines)
    assert "== first rc=0" in said and "== fails rc=3" in said
    assert "== too_long SKIPPED (left" in said
    assert "== slow rc=124" in said  # cut at the 4 s budget by timeout, not left running
    logs = tmp_path / "kj" / "logs"
    assert (logs / "first.log").read_text() == f"from the copy\n{tmp_path / 'copy'}\n"
    assert (logs / "fails.log").read_text() == "some output\n"
    assert not (logs / "too_long.log").exists()
    with tarfile.open(out / "logs.tgz") as tar:
        assert "logs/steps" in tar.getnames() and "logs/first.log" in tar.getnames()


@pytest.mark.parametrize("args,says", [
    ([], "usage: device_job.sh"),
    (["start", "x", "{steps}"], "BUDGET_S must be a whole number of seconds, not 'x'"),
    (["start", "10", "{missing}"], "no such steps file"),
    (["start", "10", "{bad}"], "line 2: want NAME NEED_S COMMAND"),
    (["wait", "-1"], "SECONDS must be a whole number of seconds, not '-1'"),
    (["launch"], "usage: device_job.sh"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    repo = _repo(tmp_path)
    (tmp_path / "steps.txt").write_text("a 0 true\n")
    (tmp_path / "bad.txt").write_text("a 0 true\nb soon true\n")
    argv = [a.format(steps=tmp_path / "steps.txt", missing=tmp_path / "none.txt", bad=tmp_path / "bad.txt")
            for a in args]
    r = _run(repo, tmp_path, *argv)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "copy").exists()  # nothing started
