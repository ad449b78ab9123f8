"""The build seam (judge/build/toolchain.py): toolchains found by suffix, one registry, and a new
language plugged in with one registry entry reaching the engine, verify's controls and starters.
No nvcc needed: the CUDA toolchain's source policy runs before any build."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PROBLEMS_DIR, problem_dirs

from judge.build import toolchain
from judge.build.cuda import CUDA
from judge.build.language import Prepared
from judge.build.triton import TRITON
from judge.contract.events import Built, Finished
from judge.contract.report import BuildInfo
from judge.contract.verdict import Status
from judge.engine.run import Options, evaluate
from judge.problem import abi, spec


@pytest.fixture
def vector_add():
    return spec.load_problem(PROBLEMS_DIR / "vector_add")


class FooToolchain:
    """A language that 'builds' by reading a verdict from the file: enough to drive the seam."""

    name = "foo"
    suffixes: tuple[str, ...] = (".foo",)
    comment = "#"
    worker = "native"

    def __init__(self):
        self.prepared: list[Path] = []

    def starter(self, problem):
        return f"# {problem.name} in foo\n"

    def prototype(self, problem):
        return f"solve({', '.join(n for n, _ in problem.params)})"

    def flags(self, arch):
        return f"foo --target {arch}"

    def check_source(self, problem, source):
        return "no eval in foo" if "eval" in Path(source).read_text() else None

    def prepare_many(self, jobs, arch, *, sass=False, on_progress=None):
        out = []
        for problem, src in jobs:
            self.prepared.append(Path(src))
            refused = self.check_source(problem, src)
            if refused:
                out.append(Prepared(Path(src), self.name, Status.REJECTED, refused))
                continue
            info = BuildInfo(ok=False, cached=False, seconds=0.0, command="foo build", arch=arch)
            out.append(Prepared(Path(src), self.name, Status.COMPILE_ERROR, "foo: syntax error", build=info))
        return out


@pytest.fixture
def foo(monkeypatch):
    t = FooToolchain()
    monkeypatch.setitem(toolchain.REGISTRY, "foo", t)
    return t


def test_each_language_gives_solves_prototype_in_its_own_syntax(vector_add):
    assert CUDA.prototype(vector_add) == 'extern "C" void solve(const float* A, const float* B, float* C, int n)'
    assert TRITON.prototype(vector_add) == \
        "def solve(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, n: int) -> None"


def test_toolchains_by_suffix_and_by_name():
    assert toolchain.for_source(Path("x.cu")) is CUDA
    assert toolchain.for_name("cuda") is CUDA
    assert toolchain.for_source(Path("x.py")) is TRITON and toolchain.for_name("triton") is TRITON
    assert {".cu", ".py"} <= set(toolchain.suffixes())
    with pytest.raises(toolchain.UnknownLanguage, match=r"x\.txt: no toolchain takes \.txt files.*\.cu, \.py"):
        toolchain.for_source(Path("x.txt"))
    with pytest.raises(toolchain.UnknownLanguage, match="a file without a suffix"):
        toolchain.for_source(Path("Makefile"))
    with pytest.raises(toolchain.UnknownLanguage, match="unknown language 'cobol'"):
        toolchain.for_name("cobol")


def test_cuda_source_policy_refuses_before_any_build(vector_add, tmp_path):
    src = tmp_path / "x.cu"
    src.write_text('#include <fstream>\nextern "C" void solve(const float*, const float*, float*, int) {}\n')
    assert "fstream" in (toolchain.check_source(vector_add, src) or "")
    (p,) = toolchain.prepare_many([(vector_add, src)], "sm_90a")
    assert p.status is Status.REJECTED and p.build is None and not p.ok and p.load == {}


def test_an_unreadable_or_unknown_file_is_a_prepared_failure(vector_add, tmp_path):
    a, b = tmp_path / "gone.cu", tmp_path / "x.txt"
    b.write_text("")
    pa, pb = toolchain.prepare_many([(vector_add, a), (vector_add, b)], "sm_90a")
    assert pa.status is Status.INTERNAL_ERROR and "gone.cu" in pa.message
    assert pb.status is Status.INTERNAL_ERROR and "no toolchain takes .txt" in pb.message


def test_a_new_language_is_one_registry_entry(foo, vector_add, tmp_path):
    """Mixed files keep their order; each language prepares its own files."""
    cu, ok, bad = tmp_path / "a.cu", tmp_path / "b.foo", tmp_path / "c.foo"
    cu.write_text('#include <fstream>\n')
    ok.write_text("x = 1\n")
    bad.write_text("eval(x)\n")
    out = toolchain.prepare_many([(vector_add, cu), (vector_add, ok), (vector_add, bad)], "sm_90a")
    assert [p.source for p in out] == [cu, ok, bad]
    assert [p.status for p in out] == [Status.REJECTED, Status.COMPILE_ERROR, Status.REJECTED]
    assert [p.language for p in out] == ["cuda", "foo", "foo"]
    assert foo.prepared == [ok, bad]
    assert toolchain.is_solution(ok) and ".foo" in toolchain.suffixes()


def test_the_engine_judges_a_new_language_through_the_seam(foo, vector_add, tmp_path):
    src = tmp_path / "b.foo"
    src.write_text("x = 1\n")
    events = list(evaluate(vector_add, src, Options(mode="test", arch="sm_90a", sass=False)))
    report = events[-1].report
    assert isinstance(events[-1], Finished) and any(isinstance(e, Built) for e in events)
    assert report.status is Status.COMPILE_ERROR and "foo: syntax error" in report.message
    assert report.environment.flags == "foo --target sm_90a"
    src.write_text("eval(1)\n")
    report = list(evaluate(vector_add, src, Options(mode="test", arch="sm_90a")))[-1].report
    assert report.status is Status.REJECTED and report.message == "no eval in foo"


def test_solutions_and_starters_follow_the_registry(foo, vector_add, tmp_path):
    for name in ("01_a.cu", "02_b.foo", "notes.md", ".hidden.cu"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub.cu").mkdir()
    assert [p.name for p in toolchain.solutions_in(tmp_path)] == ["01_a.cu", "02_b.foo"]
    assert toolchain.solutions_in(tmp_path / "missing") == []
    path, text = toolchain.starter_file(vector_add, tmp_path, "foo")
    assert path == tmp_path / "vector_add.foo" and text == "# vector_add in foo\n"
    path, text = toolchain.starter_file(vector_add, tmp_path)
    assert path.suffix == ".cu" and 'extern "C" void solve(' in text


def test_controls_declare_their_status_in_their_language(foo, tmp_path):
    from judge.practice.solutions import one
    from judge.practice.verify import ControlError, expected_status

    f = tmp_path / "w.foo"
    f.write_text("# expected: WRONG_ANSWER — tail skipped\n")
    assert expected_status(f) == (Status.WRONG_ANSWER, "tail skipped")
    f.write_text("// expected: WRONG_ANSWER\n")
    with pytest.raises(ControlError, match="`# expected: STATUS`"):
        expected_status(f)
    s = tmp_path / "01_x.foo"
    s.write_text("# Title line\n#\n# The technique.\n")
    assert one(1, s, {}).title == "Title line" and one(1, s, {}).technique == "The technique."


@pytest.mark.parametrize("name", [d.name for d in problem_dirs()])
def test_every_problems_triton_starter_passes_the_policy_and_the_abi(name, tmp_path):
    p = spec.load_problem(PROBLEMS_DIR / name)
    src = tmp_path / f"{name}.py"
    src.write_text(TRITON.starter(p))
    prepared = TRITON.prepare_checks(p, src)
    assert prepared.ok, prepared.message
    assert src.read_text().startswith(f"# judge: {name}\n")
    assert abi.py_prototype(p.params) in src.read_text()


def test_triton_prepare_hands_the_worker_the_text_it_checked(vector_add, tmp_path):
    src = tmp_path / "x.py"
    src.write_text(TRITON.starter(vector_add))
    prepared = toolchain.prepare(vector_add, src, "sm_90a")  # `judge check`: the policy and the ABI pass
    assert prepared.ok and prepared.load == {"module": str(src.resolve()), "source": TRITON.starter(vector_add)}
    events = list(evaluate(vector_add, src, Options(mode="test")))  # this machine has no GPU: after the checks
    report = events[-1].report
    assert report.status is Status.INTERNAL_ERROR and "no CUDA device" in report.message
    src.write_text("import os\n" + TRITON.starter(vector_add))
    assert toolchain.prepare(vector_add, src, "sm_90a").status is Status.REJECTED
    src.write_text("def solve(A, B, C, m):\n    pass\n")
    p = toolchain.prepare(vector_add, src, "sm_90a")
    assert p.status is Status.COMPILE_ERROR and "solve takes (A, B, C, m)" in p.message
