"""A user's mistake on the command line is a usage error (exit 2, one clear message) found before
anything is built or recorded, never an INTERNAL_ERROR or a verdict."""
from __future__ import annotations

import pytest
import typer
from conftest import skip_no_nvcc
from typer.testing import CliRunner

from cli.app import app

runner = CliRunner()
OK = 'extern "C" void solve(const float* A, const float* B, float* C, int n) {}\n'


@pytest.fixture
def no_build(monkeypatch):
    from judge.build import toolchain

    def refuse(*a, **k):
        raise AssertionError("built although the command line was wrong")

    monkeypatch.setattr(toolchain, "prepare_many", refuse)


@pytest.fixture
def src(tmp_path):
    f = tmp_path / "x.cu"
    f.write_text(OK)
    return f


def commands_with_arch(src):
    s = str(src)
    return [["submit", "vector_add", s], ["test", "vector_add", s], ["verify", "vector_add"],
            ["compare", "vector_add", s, s], ["watch", "vector_add", s], ["profile", "vector_add", s]]


@pytest.mark.parametrize("arch", ["90", "sm90", "hopper"])
def test_an_arch_that_is_not_one_is_a_usage_error(src, no_build, arch):
    for args in commands_with_arch(src):
        r = runner.invoke(app, [*args, "--arch", arch])
        assert r.exit_code == 2, (args, r.output)
        assert "sm_90a" in r.output and "INTERNAL_ERROR" not in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["submit", "vector_add", str(src), "--arch", "90"])
    assert "sm_90 or sm_90a" in r.output


@skip_no_nvcc
def test_an_arch_this_nvcc_cannot_build_is_a_usage_error_and_no_attempt(src, no_build, tmp_path):
    db = tmp_path / "j.db"
    r = runner.invoke(app, ["submit", "vector_add", str(src), "--arch", "sm_999", "--db", str(db)])
    assert r.exit_code == 2, r.output
    assert "sm_999" in r.output and "sm_90" in r.output and "COMPILE_ERROR" not in r.output
    assert not db.exists()  # nothing recorded


@pytest.mark.parametrize("args", [["submit", "vector_add", "{src}", "--budget", "-3"],
                                  ["submit", "vector_add", "{src}", "--budget", "0"],
                                  ["submit", "vector_add", "{src}", "--device", "-1"],
                                  ["test", "vector_add", "{src}", "--device", "-1"],
                                  ["verify", "vector_add", "--device", "-1"],
                                  ["compare", "vector_add", "{src}", "{src}", "--budget", "-3"],
                                  ["watch", "vector_add", "{src}", "--device", "-1"]])
def test_negative_budget_and_device_are_usage_errors(src, no_build, args):
    r = runner.invoke(app, [a.format(src=src) for a in args])
    assert r.exit_code == 2, r.output
    assert args[-2] in r.output


def test_init_into_a_missing_folder_is_a_clear_error(tmp_path):
    r = runner.invoke(app, ["init", "vector_add", "-o", str(tmp_path / "nowhere" / "x.cu")])
    assert r.exit_code == 2, r.output
    assert "cannot write" in r.output and "No such file or directory" in r.output
    assert "INTERNAL_ERROR" not in r.output and "--debug" not in r.output


def _commands(group, prefix: str = ""):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):  # a group (typer's own click or click's)
            yield from _commands(cmd, f"{prefix}{name} ")
            if cmd.callback is not None:
                yield f"{prefix}{name}", cmd
        else:
            yield f"{prefix}{name}", cmd


def test_every_command_that_can_fail_inside_the_judge_takes_debug():
    """An INTERNAL_ERROR says "run with --debug": every command must have one. `validate` reports
    every error of a problem itself and never says it."""
    group = typer.main.get_command(app)
    lacking = [name for name, cmd in _commands(group)
               if name != "validate" and not any("--debug" in p.opts for p in cmd.params)]
    assert not lacking


def test_an_internal_error_suggests_debug_and_debug_shows_the_traceback(monkeypatch):
    from judge.problem import spec

    def broken(root):
        raise RuntimeError("the judge's own bug")

    monkeypatch.setattr(spec, "find_problems", broken)
    r = runner.invoke(app, ["list"])
    assert r.exit_code == 3, r.output
    assert "INTERNAL_ERROR" in r.output and "--debug" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["list", "--debug"])
    assert r.exit_code == 3 and "Traceback" in r.output
