"""problem.yaml loading: every error at once, each with its file and field path; safe expressions."""
from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
from toy_problem import VALID, write_problem

from judge.problem import spec
from judge.problem.checks import CHECKS
from judge.problem.expr import ExprError, parse
from judge.problem.spec import ProblemError, load_problem


def errors_of(path: Path) -> tuple[ProblemError, dict[str, list[str]]]:
    with pytest.raises(ProblemError) as info:
        load_problem(path)
    by_loc: dict[str, list[str]] = {}
    for loc, msg in info.value.errors:
        by_loc.setdefault(loc, []).append(msg)
    return info.value, by_loc


def assert_names_file(e: ProblemError, d: Path) -> None:
    file = str(d.resolve() / "problem.yaml")
    assert Path(e.file) == Path(file)
    lines = str(e).splitlines()
    assert len(lines) >= len(e.errors)
    for loc, _ in e.errors:
        assert any(line.startswith(f"{file}: {loc}: ") for line in lines), (loc, lines)


# -- a valid problem -------------------------------------------------------------------------------

def test_valid_problem_loads_and_evaluates(tmp_path):
    p = load_problem(write_problem(tmp_path, VALID))
    assert p.name == "toy"
    assert p.prototype() == 'extern "C" void solve(const half* A, float* C, int M, int K, float alpha)'
    w = {"M": 3, "K": 5, "alpha": 1.0}
    assert p.shape_of("A", w) == (3, 5)
    assert p.shape_of("C", w) == (3,)
    assert p.flops(w) == 15
    assert p.bytes(w) == 2 * 15 + 12
    assert math.isclose(p.scales["A"](w), 5 ** -0.5)
    assert [x.name for x in p.scalars] == ["M", "K", "alpha"]
    assert [x.name for x in p.tensors] == ["A", "C"]
    assert [x.name for x in p.outputs] == ["C"]
    assert [b.name for b in p.baselines] == ["torch.sum"]
    assert p.shape_text("A") == "[M, K]"
    assert spec.workload_id(p.spec.benchmarks[0]) == "M=4096,K=4096,alpha=1.0"
    path, func = p.impl_path(p.spec.reference)
    assert path == p.root / "reference.py" and func == "reference"


def test_problem_yaml_path_and_folder_both_load(tmp_path):
    d = write_problem(tmp_path, VALID)
    assert load_problem(d / "problem.yaml").root == load_problem(d).root == d.resolve()


def test_minimal_problem_defaults(tmp_path):
    minimal = {k: VALID[k] for k in ("name", "title", "level", "signature", "reference", "check", "bytes", "tests")}
    p = load_problem(write_problem(tmp_path, minimal))
    assert p.spec.flops == 0 and p.spec.benchmarks == [] and p.baselines == ()
    assert p.spec.timeout_s == 10.0 and p.spec.compute == "fp32"


def test_baseline_list(tmp_path):
    data = copy.deepcopy(VALID)
    data["baseline"] = [{"name": "first", "impl": "reference.py:baseline"},
                        {"name": "second", "impl": "reference.py:reference"}]
    p = load_problem(write_problem(tmp_path, data))
    assert [b.name for b in p.baselines] == ["first", "second"]


# -- file-level errors -----------------------------------------------------------------------------

def test_bad_yaml(tmp_path):
    d = write_problem(tmp_path, "name: toy\nsignature: [\n  - {name: A\n")
    e, by_loc = errors_of(d)
    assert list(by_loc) == ["-"] and "not valid YAML" in by_loc["-"][0]
    assert_names_file(e, d)


def test_yaml_that_is_not_a_mapping(tmp_path):
    e, by_loc = errors_of(write_problem(tmp_path, "- just\n- a list\n"))
    assert "mapping" in by_loc["-"][0]


def test_no_problem_yaml(tmp_path):
    (tmp_path / "empty").mkdir()
    e, by_loc = errors_of(tmp_path / "empty")
    assert "no problem.yaml" in by_loc["-"][0]


# -- schema errors (pydantic stage): all at once, each with its path --------------------------------

def test_schema_errors_all_reported_with_paths(tmp_path):
    data = copy.deepcopy(VALID)
    data["colour"] = "blue"                               # unknown top-level key
    data["check"]["foo"] = 1                              # unknown nested key
    data["signature"][0]["type"] = "double*"              # not in the ABI
    data["signature"][1]["type"] = "const float"          # not a pointer
    data["signature"][2]["unit"] = "elements"             # unknown key in a list item
    data["level"] = "impossible"
    del data["title"]
    data["inputs"]["A"]["init"] = "gaussian"
    d = write_problem(tmp_path, data)
    e, by_loc = errors_of(d)
    expected = {"colour", "check.foo", "signature[0].type", "signature[1].type", "signature[2].unit",
                "level", "title", "inputs.A.init"}
    assert expected <= set(by_loc), by_loc
    assert by_loc["colour"] == ["unknown field"]
    assert by_loc["check.foo"] == ["unknown field"]
    assert by_loc["title"] == ["required field is missing"]
    assert "double*" in by_loc["signature[0].type"][0] and "ABI" in by_loc["signature[0].type"][0]
    assert "const float" in by_loc["signature[1].type"][0]
    assert_names_file(e, d)


def test_unknown_check_name(tmp_path):
    data = copy.deepcopy(VALID)
    data["check"] = {"name": "roughly"}
    e, by_loc = errors_of(write_problem(tmp_path, data))
    assert "check" in by_loc, by_loc
    assert "unknown check 'roughly'" in by_loc["check"][0]
    assert all(name in by_loc["check"][0] for name in CHECKS)  # names every registered check


def test_check_without_a_name(tmp_path):
    data = copy.deepcopy(VALID)
    data["check"] = {"rtol": 1e-3, "atol": 1e-3}
    e, by_loc = errors_of(write_problem(tmp_path, data))
    assert "needs a name" in by_loc["check"][0]
    assert all(name in by_loc["check"][0] for name in CHECKS)


# -- accepts_classic_wrong -------------------------------------------------------------------------

def test_accepts_classic_wrong_parses_and_matches(tmp_path):
    data = copy.deepcopy(VALID)
    data["accepts_classic_wrong"] = [
        {"answer": "copy:A", "when": "M == 1 and K == 1", "why": "one element"},
        {"answer": "zeros", "when": "M <= 3 or K > 100", "kind": "chance", "why": "sometimes"},
    ]
    p = load_problem(write_problem(tmp_path, data))
    assert p.accepts_classic("copy:A", {"M": 1, "K": 1, "alpha": 1.0}).why == "one element"
    assert p.accepts_classic("copy:A", {"M": 1, "K": 2, "alpha": 1.0}) is None
    assert p.accepts_classic("zeros", {"M": 3, "K": 5, "alpha": 1.0}).kind == "chance"
    assert p.accepts_classic("zeros", {"M": 4, "K": 5, "alpha": 1.0}) is None
    assert load_problem(write_problem(tmp_path / "plain", VALID)).classic_wrong == ()


@pytest.mark.parametrize("entry, loc, fragment", [
    ({"answer": "copy:C", "when": "M == 1", "why": "x"}, "accepts_classic_wrong[0].answer", "not an input tensor"),
    ({"answer": "copy:Z", "when": "M == 1", "why": "x"}, "accepts_classic_wrong[0].answer", "not an input tensor"),
    ({"answer": "ones", "when": "M == 1", "why": "x"}, "accepts_classic_wrong[0].answer", "pattern"),
    ({"answer": "zeros", "when": "Q == 1", "why": "x"}, "accepts_classic_wrong[0].when", "unknown name 'Q'"),
    ({"answer": "zeros", "when": "M", "why": "x"}, "accepts_classic_wrong[0].when", "not a condition"),
    ({"answer": "zeros", "when": "M == 1", "why": "x", "kind": "often"}, "accepts_classic_wrong[0].kind", "always"),
    ({"answer": "zeros", "when": "M == 1"}, "accepts_classic_wrong[0].why", "missing"),
])
def test_accepts_classic_wrong_errors(tmp_path, entry, loc, fragment):
    data = copy.deepcopy(VALID)
    data["accepts_classic_wrong"] = [entry]
    e, by_loc = errors_of(write_problem(tmp_path, data))
    assert list(by_loc) == [loc], by_loc
    assert fragment in by_loc[loc][0]


def test_non_number_workload_value(tmp_path):
    data = copy.deepcopy(VALID)
    data["tests"][1]["K"] = "lots"
    e, by_loc = errors_of(write_problem(tmp_path, data))
    assert "tests[1].K" in by_loc, by_loc


# -- semantic errors (after the schema): all at once ---------------------------------------------

def test_semantic_errors_all_reported_with_paths(tmp_path):
    data = copy.deepcopy(VALID)
    data["name"] = "other"                                                # != folder
    data["signature"][0]["shape"] = ["Q", "M*"]                           # unknown name, syntax error
    data["signature"][1]["shape"] = ["os.system('rm -rf /')"]             # a call
    data["flops"] = "M*Z"
    data["tests"] = [{"M": 3, "K": 5, "alpha": 1.0, "Z": 1},              # unknown scalar
                     {"M": 2.5, "K": 5, "alpha": 1.0},                    # non-int for int
                     {"K": 5, "alpha": 1.0}]                              # M missing
    del data["baseline"]                                                  # benchmarks need one
    data["reference"] = "missing.py:reference"                            # no such file
    d = write_problem(tmp_path, data)
    e, by_loc = errors_of(d)
    assert "folder is 'toy'" in by_loc["name"][0]
    assert "unknown name 'Q'" in by_loc["signature[0].shape[0]"][0]
    assert "cannot parse" in by_loc["signature[0].shape[1]"][0]
    assert "may be called" in by_loc["signature[1].shape[0]"][0]
    assert "unknown name 'Z'" in by_loc["flops"][0]
    assert "not a scalar" in by_loc["tests[0].Z"][0]
    assert "integer" in by_loc["tests[1].M"][0] and "2.5" in by_loc["tests[1].M"][0]
    assert "missing scalar 'M'" in by_loc["tests[2]"][0]
    assert "baseline" in by_loc["baseline"][0]
    assert "missing.py not found" in by_loc["reference"][0]
    assert len(e.errors) >= 10
    assert_names_file(e, d)


def test_missing_reference_function(tmp_path):
    data = copy.deepcopy(VALID)
    data["reference"] = "reference.py:nope"
    e, by_loc = errors_of(write_problem(tmp_path, data))
    assert list(by_loc) == ["reference"] and "no function 'nope'" in by_loc["reference"][0]


def test_reference_with_syntax_error(tmp_path):
    e, by_loc = errors_of(write_problem(tmp_path, VALID, reference="def reference(:\n"))
    assert "line 1" in by_loc["reference"][0]


def test_baseline_list_errors_name_the_item(tmp_path):
    data = copy.deepcopy(VALID)
    data["baseline"] = [{"name": "ok", "impl": "reference.py:baseline"},
                        {"name": "bad", "impl": "reference.py:missing"}]
    e, by_loc = errors_of(write_problem(tmp_path, data))
    assert list(by_loc) == ["baseline[1].impl"], by_loc


def _set(path: str, value):
    def mutate(d: dict) -> None:
        *head, last = path.split("/")
        node = d
        for k in head:
            node = node[int(k)] if k.isdigit() else node[k]
        if value is _DELETE:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value
    return mutate


_DELETE = object()


@pytest.mark.parametrize("mutate, loc, fragment", [
    (_set("signature/1/name", "A"), "signature", "appears twice"),
    (_set("signature/0/shape", _DELETE), "signature[0].shape", "needs a shape"),
    (_set("signature/2/shape", ["M"]), "signature[2].shape", "cannot have a shape"),
    (_set("signature/1/type", "const float*"), "signature", "no output tensor"),
    (_set("inputs/C", {"init": "randn"}), "inputs.C", "not an input tensor"),
    (_set("inputs/Z", {"init": "randn"}), "inputs.Z", "not an input tensor"),
    (_set("inputs/A/init", "randint"), "inputs.A.init", "integer tensor"),
    (_set("inputs/A/scale", "1/T"), "inputs.A.scale", "unknown name 'T'"),
    (_set("bytes", "import os"), "bytes", "cannot parse"),
    (_set("benchmarks/0/K", 4096.5), "benchmarks[0].K", "integer"),
    (_set("signature/0/type", "const __nv_bfloat16*"), None, None),  # valid: no error
])
def test_single_semantic_error(tmp_path, mutate, loc, fragment):
    data = copy.deepcopy(VALID)
    mutate(data)
    d = write_problem(tmp_path, data)
    if loc is None:
        assert load_problem(d).name == "toy"
        return
    e, by_loc = errors_of(d)
    assert loc in by_loc, by_loc
    assert any(fragment in m for m in by_loc[loc]), by_loc[loc]


def test_schema_and_semantic_errors_reported_together(tmp_path):
    data = copy.deepcopy(VALID)
    data["check"]["foo"] = 1          # schema error
    data["name"] = "other"            # semantic error
    data["reference"] = "missing.py:reference"
    e, by_loc = errors_of(write_problem(tmp_path, data))
    assert {"check.foo", "name", "reference"} <= set(by_loc), by_loc


def test_find_problems(tmp_path):
    write_problem(tmp_path, VALID, folder="b")
    write_problem(tmp_path, VALID, folder="a")
    (tmp_path / "not_a_problem").mkdir()
    assert [p.name for p in spec.find_problems(tmp_path)] == ["a", "b"]


# -- judge.expr ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, scope, value", [
    ("2*M*N*K", {"M": 2, "N": 3, "K": 4}, 48),
    ("M + N - K", {"M": 2, "N": 3, "K": 4}, 1),
    ("M / N", {"M": 3, "N": 2}, 1.5),
    ("M // N", {"M": 7, "N": 2}, 3),
    ("M % N", {"M": 7, "N": 4}, 3),
    ("M ** 2", {"M": 5}, 25),
    ("K**-0.5", {"K": 4}, 0.5),
    ("-M + +N", {"M": 1, "N": 3}, 2),
    ("min(M, N) + max(M, N)", {"M": 1, "N": 3}, 4),
    ("ceil_div(M, 128)", {"M": 257}, 3),
    ("ceil_div(M, 128)", {"M": 256}, 2),
    ("sqrt(M)", {"M": 16}, 4.0),
    ("(M + 1) * (N - 1)", {"M": 1, "N": 3}, 4),
    (4096, {}, 4096),
    (0.25, {}, 0.25),
])
def test_expr_evaluates(text, scope, value):
    e = parse(text, set(scope))
    assert e(scope) == value
    assert e.names == frozenset(k for k in scope if k in str(text))
    assert str(e) == str(text)


@pytest.mark.parametrize("text, fragment", [
    ("M * Q", "unknown name 'Q'"),
    ("M *", "cannot parse"),
    ("os.system('ls')", "may be called"),
    ("__import__('os')", "may be called"),
    ("M.real", "not allowed"),
    ("(lambda: 1)()", "may be called"),
    ("[M][0]", "not allowed"),
    ("M < N", "not allowed"),
    ("M if N else 1", "not allowed"),
    ("'abc'", "only numbers"),
    ("True", "only numbers"),
    ("M << 2", "not allowed"),
    ("M & 1", "not allowed"),
    ("not M", "not allowed"),
    ("~M", "not allowed"),
    ("min(M, key=N)", "may be called"),
    ("M; N", "cannot parse"),
    ("", "cannot parse"),
])
def test_expr_rejects(text, fragment):
    with pytest.raises(ExprError) as info:
        parse(text, {"M", "N"})
    assert fragment in str(info.value)


@pytest.mark.parametrize("text, scope, value", [
    ("M == 1", {"M": 1, "N": 2}, True),
    ("M == 1", {"M": 2, "N": 2}, False),
    ("M == 1 or N == 1", {"M": 2, "N": 1}, True),
    ("M == 1 and N == 1", {"M": 1, "N": 2}, False),
    ("M <= 9", {"M": 9, "N": 0}, True),
    ("1 < M < N", {"M": 2, "N": 2}, False),
    ("not M != 1", {"M": 1, "N": 0}, True),
    ("M * N >= 2 ** 4", {"M": 4, "N": 4}, True),
])
def test_condition_evaluates(text, scope, value):
    assert parse(text, set(scope), condition=True)(scope) is value


@pytest.mark.parametrize("text, fragment", [
    ("M", "not a condition"),
    ("M + 1", "not a condition"),
    ("M is 1", "may compare"),
    ("M in (1, 2)", "may compare"),
    ("M == Q", "unknown name 'Q'"),
    ("M == 1 or os.system('ls')", "may be called"),
    ("M == 'a'", "only numbers"),
])
def test_condition_rejects(text, fragment):
    with pytest.raises(ExprError) as info:
        parse(text, {"M", "N"}, condition=True)
    assert fragment in str(info.value)


def test_expr_rejects_bare_function_name():
    with pytest.raises(ExprError):
        parse("max * 2", {"M"})


def test_input_bounds_may_be_expressions(tmp_path):
    data = {**VALID, "inputs": {"A": {"init": "rand", "low": "-K", "high": "M // 2"}}}
    p = load_problem(write_problem(tmp_path, data))
    lo, hi = p.bounds["A"]
    assert (lo({"M": 8, "K": 3, "alpha": 1.0}), hi({"M": 8, "K": 3, "alpha": 1.0})) == (-3, 4)
    bad = {**VALID, "inputs": {"A": {"init": "rand", "high": "vocab"}}}
    _, errs = errors_of(write_problem(tmp_path, bad, folder="bad"))
    assert any("inputs.A.high" in loc for loc in errs), errs
