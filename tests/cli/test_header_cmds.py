"""Commands take the problem from the file's header (`// judge: vector_add`) when no problem is
named; a named problem that differs from the header is a usage error; `judge init` writes one."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.app import app
from judge.build import header

runner = CliRunner()
REJECTED = '#include "/etc/passwd"\n'  # refused by the static policy: no build, no GPU


@pytest.fixture
def headed(tmp_path):
    f = tmp_path / "mine.cu"
    f.write_text("// judge: vector_add\n" + REJECTED)
    return f


@pytest.mark.parametrize("command", ["submit", "test"])
def test_the_header_names_the_problem(headed, command):
    r = runner.invoke(app, [command, str(headed), "--json", "--no-record"])
    report = json.loads(r.stdout)
    assert report["problem"] == "vector_add" and report["status"] == "REJECTED" and report["mode"] == command
    assert r.exit_code == 1


def test_a_named_problem_that_agrees_is_fine(headed):
    r = runner.invoke(app, ["test", "vector_add", str(headed), "--json", "--no-record"])
    assert json.loads(r.stdout)["status"] == "REJECTED"


@pytest.mark.parametrize("args", [["submit", "relu", "{f}"], ["test", "relu", "{f}"], ["check", "{f}", "relu"],
                                  ["compare", "relu", "{f}", "{f}"], ["watch", "relu", "{f}"],
                                  ["profile", "relu", "{f}"]])
def test_a_named_problem_that_differs_is_a_usage_error(headed, args):
    r = runner.invoke(app, [a.format(f=headed) for a in args])
    assert r.exit_code == 2, r.output
    assert "vector_add" in r.output and "relu" in r.output and "line 1" in r.output


def test_without_header_or_problem_it_says_how_to_name_it(tmp_path):
    f = tmp_path / "plain.cu"
    f.write_text(REJECTED)
    r = runner.invoke(app, ["submit", str(f)])
    assert r.exit_code == 2 and "judge submit PROBLEM" in r.output and "// judge: PROBLEM" in r.output


def test_a_problem_without_a_file_is_a_usage_error():
    r = runner.invoke(app, ["submit", "vector_add"])
    assert r.exit_code == 2 and "missing the solution file" in r.output


def test_a_malformed_header_is_a_usage_error(tmp_path):
    f = tmp_path / "bad.cu"
    f.write_text("// judge: vector_add fast\n")
    r = runner.invoke(app, ["test", str(f)])
    assert r.exit_code == 2 and "bad.cu:1" in r.output


def test_init_writes_the_header(tmp_path):
    f = tmp_path / "s.cu"
    assert runner.invoke(app, ["init", "softmax", "-o", str(f)]).exit_code == 0
    assert header.read(f) == header.Header("softmax", None, 1)


class FakeWatch:
    """Stands for the warm watch session: records how it was made, judges nothing."""

    made: list[FakeWatch] = []

    def __init__(self, problem, opts, timed=True, submit=False, triton=False):
        self.problem, self.timed, self.submit = problem, timed, submit
        FakeWatch.made.append(self)

    def start(self):
        pass

    def run(self, source, saved_at, on_event=None):
        from judge.contract.report import Report
        from judge.practice.watch import Judged

        return Judged(Report(problem=self.problem.name, solution=str(source), source_sha256="x", mode="test",
                             status="ACCEPTED"), 0.1, 0.1, 0.0)

    def close(self):
        pass


@pytest.mark.parametrize("line, flags, timed, submit", [
    ("// judge: vector_add", [], True, False),
    ("// judge: vector_add test", [], False, False),
    ("// judge: vector_add submit", [], True, True),
    ("// judge: vector_add submit", ["--no-submit"], True, False),  # the command line wins
    ("// judge: vector_add test", ["--time"], True, False),
])
def test_watch_takes_its_mode_from_the_header(tmp_path, monkeypatch, line, flags, timed, submit):
    from judge.practice import watch as watching

    FakeWatch.made = []
    monkeypatch.setattr(watching, "WatchSession", FakeWatch)
    f = tmp_path / "w.cu"
    f.write_text(line + "\n")
    r = runner.invoke(app, ["watch", str(f), "--once", "--db", str(tmp_path / "j.db"), *flags])
    assert r.exit_code == 0, r.output
    made = FakeWatch.made[0]
    assert made.problem.name == "vector_add" and (made.timed, made.submit) == (timed, submit)
