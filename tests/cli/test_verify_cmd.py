"""`judge verify` decides up front: without a GPU it says so and exits 3 at once (nothing built);
`--build-only` builds every control and runs the static policy, no GPU needed; progress goes to
stderr as plain lines when it is not a terminal."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from conftest import PROBLEMS_DIR, SOLUTIONS_DIR, control_files, declares_compile_error, nvcc_test
from rich.console import Console
from toy_problem import VALID, write_problem
from typer.testing import CliRunner

from cli import render
from cli.app import app
from judge.gpu import device

runner = CliRunner()
NO_GPU = not device.gpus()


@pytest.mark.skipif(not NO_GPU, reason="the no-GPU answer of `judge verify`")
@pytest.mark.parametrize("as_json", [False, True])
def test_verify_without_gpu_exits_at_once_without_building(monkeypatch, as_json):
    from judge.build import toolchain

    def no_build(*a, **k):
        raise AssertionError("judge verify built files on a machine without a GPU")

    monkeypatch.setattr(toolchain, "prepare_many", no_build)
    r = runner.invoke(app, ["verify", "vector_add"] + (["--json"] if as_json else []))
    assert r.exit_code == 3, r.output
    text = json.loads(r.stdout)["error"] if as_json else r.stderr
    assert "no GPU" in text and "--build-only" in text
    assert "Traceback" not in r.output


def test_build_only_does_not_take_table():
    r = runner.invoke(app, ["verify", "vector_add", "--build-only", "--table"])
    assert r.exit_code == 2, r.output
    assert "--build-only" in r.stderr


@nvcc_test
def test_build_only_builds_every_control():
    """vector_add's controls (one of them a COMPILE_ERROR) built for sm_90a and policy-checked: the
    COMPILE_ERROR one reaches its verdict, every other one builds; progress lines on stderr."""
    names = ["vector_add"]
    r = runner.invoke(app, ["verify", *names, "--build-only", "--json", "--arch", "sm_90a"])
    rows = json.loads(r.stdout)
    files = [f for n in names for f in control_files(n)]  # the .cu ones (what nvcc builds), and Triton's:
    files += [f for n in names for d in (SOLUTIONS_DIR / n, PROBLEMS_DIR / n / "wrong") for f in d.glob("*.py")]
    assert sorted(row["file"] for row in rows) == sorted(str(f) for f in files)
    for row in rows:
        if declares_compile_error(Path(row["file"])):
            assert row["got"] == "COMPILE_ERROR" and row["ok"] and row["settled"], row
        else:
            assert row["got"] in ("BUILT", "REJECTED") and row["ok"], row
    assert r.exit_code == 0, r.output
    assert "building" in r.stderr
    assert sum(line.startswith("✓ ") for line in r.stderr.splitlines()) == len(files)


@nvcc_test
def test_build_only_fails_on_a_model_answer_that_does_not_build(tmp_path, monkeypatch):
    d = write_problem(tmp_path / "problems", VALID)
    answers = tmp_path / "reference_solutions" / d.name
    answers.mkdir(parents=True)
    (answers / "01_broken.cu").write_text("this is not C++\n")
    monkeypatch.setenv("JUDGE_PROBLEMS", str(tmp_path / "problems"))
    r = runner.invoke(app, ["verify", "--build-only", "--arch", "sm_90a"])
    assert r.exit_code == 1, r.output
    assert "FAIL" in r.stdout and "01_broken.cu" in r.stdout and "COMPILE_ERROR" in r.stdout


def test_steps_print_plain_lines_off_a_terminal():
    buf = io.StringIO()
    console = Console(file=buf, width=80)
    assert not console.is_terminal
    with render.Steps(console, every_s=3600) as steps:
        steps.update("building 1/3: a.cu", first=True)
        steps.update("building 2/3: b.cu")  # within every_s of the last line: skipped
        steps.update("building 3/3: c.cu", last=True)
        steps.line("✓ done")
    assert buf.getvalue().splitlines() == ["building 1/3: a.cu", "building 3/3: c.cu", "✓ done"]
