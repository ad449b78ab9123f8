"""`judge validate`'s rules (judge/problem/validate.py, cpu_rules.py), one broken copy of a complete toy
problem per rule: the validator rejects it with that rule and a message naming the file to fix.
Every real problem passing them all is tests/problem/test_problems.py::test_validates."""
from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT
from toy_problem import COMPLETE, REFERENCE_PY, write_complete
from typer.testing import CliRunner

from cli.app import app
from judge.build import toolchain
from judge.problem import validate

LANGUAGES = list(toolchain.REGISTRY.values())


def findings(d: Path, cpu: bool = True) -> list[validate.Finding]:
    return validate.validate(d, LANGUAGES, cpu=cpu)


def test_the_complete_toy_passes(tmp_path):
    assert findings(write_complete(tmp_path)) == []


def spec_with(**changes) -> Callable[[Path], dict]:
    return lambda root: {**copy.deepcopy(COMPLETE), **changes}


def yaml_data(d: Path) -> dict:
    import yaml

    return yaml.safe_load((d / "problem.yaml").read_text())


def rewrite(d: Path, **changes) -> None:
    import yaml

    (d / "problem.yaml").write_text(yaml.safe_dump({**yaml_data(d), **changes}, sort_keys=False))


def control(d: Path, name: str, first_line: str) -> None:
    (d / "wrong" / name).write_text(first_line + "\nextern \"C\" void solve() {}\n")


BIG = {"M": 4096, "K": 4096, "alpha": 1.0}  # 16.8M elements: not under SMALL_NUMEL
HUGE = {"M": 8192, "K": 8192, "alpha": 1.0}  # 67M elements: not under MAX_NUMEL either


def _add_input_copy_case(d: Path) -> None:
    """An extra input B with C's dtype and element count: a flat copy of B is a classic answer."""
    data = yaml_data(d)
    data["signature"].insert(1, {"name": "B", "type": "const float*", "shape": ["M"]})
    rewrite(d, signature=data["signature"], bytes="2*M*K + 8*M")
    (d / "reference.py").write_text(
        "import torch\n\n\ndef reference(A, B, M, K, alpha):\n"
        "    return alpha * A.to(torch.promote_types(A.dtype, torch.float32)).sum(dim=1)\n\n\n"
        "def baseline(A, B, C, M, K, alpha):\n    C.copy_(alpha * A.float().sum(dim=1))\n")


# rule → [(what is broken, how, a part of the file's path, a part of the message)]
BREAKS: dict[str, list[tuple[str, Callable[[Path], None], str, str]]] = {
    "spec": [("an unknown field", lambda d: rewrite(d, colour="blue"), "problem.yaml", "colour: unknown field")],
    "statement": [("no README", lambda d: (d / "README.md").unlink(), "README.md", "missing"),
                  ("an empty README", lambda d: (d / "README.md").write_text("\n"), "README.md", "is empty")],
    "hints": [("one hint", lambda d: rewrite(d, hints=["one warp per row"]), "problem.yaml",
               "hints: 1 given; give at least 2")],
    "benchmarks": [("no benchmarks", lambda d: rewrite(d, benchmarks=[]), "problem.yaml", "benchmarks: none")],
    "largest-benchmark": [
        ("the largest benchmark not among the tests",
         lambda d: rewrite(d, benchmarks=[*COMPLETE["benchmarks"], {"M": 128, "K": 256, "alpha": 1.0}]),
         "problem.yaml", "tests: add the largest benchmark workload {M=128,K=256,alpha=1.0}")],
    "model-answer": [("no model answer", lambda d: (d.parents[1] / "reference_solutions/toy/01_naive.cu").unlink(),
                      "reference_solutions/toy", "no model answer")],
    "wrong-controls": [("one control", lambda d: (d / "wrong" / "no_alpha.cu").unlink(), "wrong",
                        "1 known-wrong control(s); add at least 2")],
    "control-header": [
        ("no status line", lambda d: control(d, "no_alpha.cu", "// forgets alpha"), "wrong/no_alpha.cu",
         "the first line must be `// expected: STATUS`"),
        ("a control that declares ACCEPTED", lambda d: control(d, "no_alpha.cu", "// expected: ACCEPTED — fine"),
         "wrong/no_alpha.cu", "declares ACCEPTED"),
        ("no reason", lambda d: control(d, "no_alpha.cu", "// expected: WRONG_ANSWER"), "wrong/no_alpha.cu",
         "say why it is wrong"),
    ],
    "classic-controls": [
        ("no all-zeros control", lambda d: (d / "wrong" / "all_zeros.cu").rename(d / "wrong" / "zeros.cu"),
         "wrong/all_zeros.cu", "a kernel that writes zeros"),
        ("no input-copy control where a copy fits", _add_input_copy_case, "wrong/input_copy.cu",
         "an output can be a flat copy of an input"),
    ],
    "cpu-workload": [
        ("no small test workload", lambda d: rewrite(d, tests=[BIG], benchmarks=[BIG]), "problem.yaml",
         "tests: no workload under 4,000,000 elements"),
        ("no test workload cheap enough for the classic answers", lambda d: rewrite(d, tests=[HUGE], benchmarks=[HUGE]),
         "problem.yaml", "no workload under 40,000,000 elements"),
    ],
    "reference-runs": [
        ("a reference that raises", lambda d: (d / "reference.py").write_text(
            "def reference(A, M, K, alpha):\n    raise RuntimeError('boom')\n\n\ndef baseline(A, C, M, K, alpha):\n"
            "    pass\n"), "reference.py", "reference.py:reference raised on tests[0] {M=3,K=5,alpha=1.0}: "
         "RuntimeError: boom"),
        ("a reference with the wrong output shape", lambda d: (d / "reference.py").write_text(
            "import torch\n\n\ndef reference(A, M, K, alpha):\n    return A.double().sum(dim=1, keepdim=True)\n\n\n"
            "def baseline(A, C, M, K, alpha):\n    pass\n"), "reference.py", "returned C with shape (3, 1)"),
    ],
    "reference-float64": [("a reference that computes in float32 always",
                           lambda d: (d / "reference.py").write_text(REFERENCE_PY), "reference.py",
                           "C is torch.float32 when the inputs are float64")],
    "reference-accuracy": [("a tolerance tighter than float32 rounding", lambda d: rewrite(
        d, check={"name": "allclose", "rtol": 0, "atol": 0},
        tests=[{**w, "alpha": 0.1} for w in COMPLETE["tests"]], benchmarks=[{"M": 64, "K": 256, "alpha": 0.1}]),
        "problem.yaml",
        "the reference in the real dtypes fails it against the same reference in float64")],
    "classic-wrong": [
        ("a tolerance that accepts zeros", lambda d: rewrite(d, check={"name": "allclose", "rtol": 1, "atol": 1e3}),
         "problem.yaml",
         "check: accepts a classic wrong answer on tests[0] {M=3,K=5,alpha=1.0}: zeros → C (17 of 17 draws)"),
        ("an `always` declaration that is false", lambda d: rewrite(d, accepts_classic_wrong=[
            {"answer": "zeros", "when": "M == 2", "why": "no reason"}]), "problem.yaml",
         "accepts_classic_wrong says zeros → C is always right on tests[1] {M=2,K=3,alpha=0.5}, but the check "
         "refuses it (17 of 17 draws)"),
    ],
    "classic-somewhere": [("zeros accepted everywhere by a `chance` declaration", lambda d: rewrite(
        d, check={"name": "allclose", "rtol": 1, "atol": 1e3},
        accepts_classic_wrong=[{"answer": "zeros", "when": "M >= 1", "kind": "chance", "why": "loose"}]),
        "problem.yaml", "check: zeros never refused on a test workload checked on CPU")],
    "classic-declaration": [
        ("a declaration that matches no workload", lambda d: rewrite(d, accepts_classic_wrong=[
            {"answer": "zeros", "when": "M == 999", "kind": "chance", "why": "never"}]), "problem.yaml",
         "accepts_classic_wrong[0] (zeros when M == 999): matches no test workload"),
        ("a declaration whose answer is not a classic one there", lambda d: rewrite(d, accepts_classic_wrong=[
            {"answer": "copy:A", "when": "M == 2", "kind": "chance", "why": "A is half, C float"}]),
         "problem.yaml", "copy:A is not a classic answer on the workloads it matches"),
    ],
}

CASES = [pytest.param(rule, how, where, words, id=f"{rule}: {what}")
         for rule, breaks in BREAKS.items() for what, how, where, words in breaks]


def test_every_rule_has_a_broken_copy():
    assert set(BREAKS) | {"orphan-solutions"} == set(validate.RULES)


@pytest.mark.parametrize("rule, how, where, words", CASES)
def test_a_broken_copy_is_rejected_by_its_rule(tmp_path, rule, how, where, words):
    d = write_complete(tmp_path)
    how(d)
    got = findings(d)
    mine = [f for f in got if f.rule == rule]
    assert mine, f"no {rule} finding; got: {[str(f) for f in got]}"
    assert any(str(f.file).endswith(where) and words in f.message for f in mine), [str(f) for f in mine]


def test_cpu_false_skips_the_rules_that_run_the_reference(tmp_path):
    d = write_complete(tmp_path)
    (d / "reference.py").write_text(REFERENCE_PY)  # a reference-float64 finding, on CPU only
    assert [f.rule for f in findings(d)] == ["reference-float64"]
    assert findings(d, cpu=False) == []


def test_a_spec_that_does_not_load_still_gets_the_file_rules(tmp_path):
    d = write_complete(tmp_path)
    rewrite(d, colour="blue")
    (d / "README.md").unlink()
    (d / "wrong" / "no_alpha.cu").write_text("// forgot\n")
    assert {f.rule for f in findings(d)} == {"spec", "statement", "control-header"}


def test_not_a_problem_folder(tmp_path):
    (got,) = findings(tmp_path)
    assert got.rule == "spec" and "no problem.yaml here" in got.message


def test_orphan_solutions(tmp_path):
    write_complete(tmp_path)
    assert validate.validate_set(tmp_path / "problems") == []
    (tmp_path / "reference_solutions" / "toy_v1").mkdir()
    (got,) = validate.validate_set(tmp_path / "problems")
    assert got.rule == "orphan-solutions" and got.file.name == "toy_v1" and "belongs to no problem" in got.message


def test_docs_list_every_rule():
    """docs/problem-format.md's section names every rule the validator has."""
    text = (ROOT / "docs" / "problem-format.md").read_text()
    section = text.split("## What `judge validate` checks", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.M))
    assert listed >= set(validate.RULES), set(validate.RULES) - listed


# -- the command ---------------------------------------------------------------------------------
runner = CliRunner()


def test_validate_command_passes_the_complete_toy_and_names_the_rule(tmp_path, monkeypatch):
    d = write_complete(tmp_path)
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["validate", str(d)])
    assert r.exit_code == 0, r.output
    (d / "README.md").unlink()
    rewrite(d, hints=["only one"])
    r = runner.invoke(app, ["validate", str(d)])
    assert r.exit_code == 2, r.output
    assert "2 error(s)" in r.stderr and "problems/toy/README.md: missing" in r.stderr and "(statement)" in r.stderr
    r = runner.invoke(app, ["validate", str(d), "--json"])
    got = json.loads(r.stdout)
    assert r.exit_code == 2 and got["ok"] is False and got["set"] is None
    assert [(e["rule"], e["file"]) for e in got["problems"][0]["errors"]] == [
        ("statement", "problems/toy/README.md"), ("hints", "problems/toy/problem.yaml")]


def test_validate_without_arguments_checks_the_whole_set(tmp_path, monkeypatch):
    write_complete(tmp_path)
    monkeypatch.setenv("JUDGE_PROBLEMS", str(tmp_path / "problems"))
    r = runner.invoke(app, ["validate", "--json"])
    got = json.loads(r.stdout)
    assert r.exit_code == 0 and got["ok"] and [p["problem"] for p in got["problems"]] == ["toy"], r.output
    (tmp_path / "reference_solutions" / "ghost").mkdir()
    r = runner.invoke(app, ["validate"])
    assert r.exit_code == 2 and "reference_solutions/ghost" in r.stderr and "(orphan-solutions)" in r.stderr
