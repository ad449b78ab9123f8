"""Everything `judge validate` checks on a problem folder, in one place: the spec (`spec.load_problem`),
the files around it, and what running its reference on CPU shows (judge/problem/cpu_rules.py).
The test suite runs the same function on every problem; docs/problem-format.md ("What `judge
validate` checks") lists every rule of `RULES` and the few that need nvcc or a GPU.

Each `Finding` names its rule, the file to fix and what to do. Rules that need a loaded spec are
skipped when it does not load (its errors are the findings); the file rules still run, so one
pass reports everything.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from judge import paths
from judge.contract.verdict import Status
from judge.problem import spec
from judge.problem.finding import Finding

__all__ = ["RULES", "ControlError", "Finding", "Language", "declared_status", "solution_files", "validate",
           "validate_set"]

MIN_HINTS = 2
MIN_WRONG_CONTROLS = 2

# rule → what it requires (docs/problem-format.md lists them in this order)
RULES: dict[str, str] = {
    "spec": "problem.yaml parses and every field is valid",
    "statement": "README.md, the statement a candidate reads, exists and is not empty",
    "hints": f"at least {MIN_HINTS} hints",
    "benchmarks": "at least one benchmark workload",
    "largest-benchmark": "the tests include the largest benchmark workload",
    "model-answer": "reference_solutions/NAME/ holds at least one model answer",
    "wrong-controls": f"wrong/ holds at least {MIN_WRONG_CONTROLS} known-wrong controls",
    "control-header": "each wrong/ control's first line declares its status (not ACCEPTED) and why",
    "classic-controls": "wrong/all_zeros, and wrong/input_copy where an output can be a copy of an input",
    "cpu-workload": "a test workload small enough to check on CPU",
    "reference-runs": "the reference runs on the small test workloads and returns the outputs' shapes",
    "reference-float64": "the reference computes in promote_types(dtype, float32)",
    "reference-accuracy": "the reference in the real dtypes passes the check against itself in float64",
    "classic-wrong": "the check refuses all zeros and input copies on every CPU-checked test workload",
    "classic-somewhere": "all zeros and each input copy fail on at least one CPU-checked test workload",
    "classic-declaration": "each accepts_classic_wrong entry matches a CPU-checked workload where it applies",
    "orphan-solutions": "every reference_solutions/NAME/ belongs to a problem of the set",
}

_EXPECTED = r"^{comment}\s*expected:\s*([A-Z_]+)\s*(?:[—-]+\s*(.*))?$"  # in the file's comment syntax


class Language(Protocol):
    """What the validator needs of a submission language (judge.build's toolchains are ones)."""

    @property
    def suffixes(self) -> tuple[str, ...]: ...

    @property
    def comment(self) -> str: ...


class ControlError(ValueError):
    """A control file's first line does not declare its status."""


def declared_status(path: Path, comment: str) -> tuple[Status, str]:
    """The status a known-wrong control declares on its first line (`// expected: STATUS — why`)
    and the reason; ControlError when the line is not there."""
    first = Path(path).read_text(errors="replace").splitlines()[:1]
    m = re.match(_EXPECTED.format(comment=re.escape(comment)), first[0].strip()) if first else None
    if not m or m.group(1) not in Status.__members__:
        raise ControlError(f"{path}: the first line must be `{comment} expected: STATUS` "
                           f"(one of {', '.join(s.value for s in Status if s is not Status.ACCEPTED)})")
    return Status[m.group(1)], (m.group(2) or "").strip()


def validate(path: str | Path, languages: Sequence[Language], cpu: bool = True) -> list[Finding]:
    """Every finding on the problem folder `path` (empty: it passes). `languages` say which files
    are solutions and how their comments start; `cpu=False` skips the rules that run the reference."""
    root = Path(path).resolve()
    root = root.parent if root.name == "problem.yaml" else root
    found: list[Finding] = []
    try:
        problem: spec.Problem | None = spec.load_problem(root)
    except spec.ProblemError as e:
        problem = None
        found += [Finding("spec", e.file, f"{loc}: {msg}") for loc, msg in e.errors]
        if not e.file.is_file():
            return found  # not a problem folder: nothing else to say
    found += _statement(root)
    if problem is not None:
        found += _spec_rules(problem)
    found += _controls(root, languages, problem)
    if problem is not None and cpu:
        from judge.problem import cpu_rules  # imports torch

        found += cpu_rules.check(problem)
    return found


def validate_set(problems_root: Path) -> list[Finding]:
    """The rules of a problem set as a whole: every model-answer folder belongs to a problem."""
    names = {p.name for p in spec.find_problems(problems_root)}
    solutions = paths.solutions_root(problems_root)
    if not solutions.is_dir():
        return []
    return [Finding("orphan-solutions", d, f"belongs to no problem ({problems_root / d.name}/problem.yaml is "
                    "missing): rename it after its problem, or remove it")
            for d in sorted(solutions.iterdir())
            if d.is_dir() and not d.name.startswith((".", "_")) and d.name not in names]


def solution_files(folder: Path, languages: Iterable[Language]) -> list[Path]:
    """The files of `folder` that some language takes, by name (hidden files left out)."""
    suffixes = {s for lang in languages for s in lang.suffixes}
    if not folder.is_dir():
        return []
    return sorted(f for f in folder.iterdir() if f.is_file() and f.suffix in suffixes and not f.name.startswith("."))


# -- the rules ---------------------------------------------------------------------------------------

def _statement(root: Path) -> list[Finding]:
    readme = root / "README.md"
    if not readme.is_file():
        return [Finding("statement", readme, "missing: write the statement a candidate reads (`judge show` "
                        "prints it): the task, the inputs and outputs, the rules")]
    if not readme.read_text(errors="replace").strip():
        return [Finding("statement", readme, "is empty: write the statement a candidate reads")]
    return []


def _spec_rules(p: spec.Problem) -> list[Finding]:
    yaml_file = p.root / "problem.yaml"
    found = []
    if len(p.spec.hints) < MIN_HINTS:
        found.append(Finding("hints", yaml_file, f"hints: {len(p.spec.hints)} given; give at least {MIN_HINTS}, "
                             "each revealing more than the last (`judge hint` shows them one at a time)"))
    if not p.spec.benchmarks:
        found.append(Finding("benchmarks", yaml_file, "benchmarks: none; add at least one timed workload "
                             "(`judge submit` times the kernel on it against the baseline)"))
    else:
        size = max(p.numel(w) for w in p.spec.benchmarks)
        largest = [w for w in p.spec.benchmarks if p.numel(w) == size]  # ties: any of them
        if not any(w in p.spec.tests for w in largest):
            found.append(Finding("largest-benchmark", yaml_file, f"tests: add the largest benchmark workload "
                                 f"{{{spec.workload_id(largest[0])}}}: correctness must be checked on the "
                                 "biggest shape that is timed"))
    return found


def _controls(root: Path, languages: Sequence[Language], problem: spec.Problem | None) -> list[Finding]:
    found = []
    answers = paths.solutions_dir(root)
    if not solution_files(answers, languages):
        found.append(Finding("model-answer", answers, f"no model answer: add at least one "
                             f"({_names(languages)} file, simplest first: 01_naive{_suffix(languages)})"))
    wrong = root / "wrong"
    files = solution_files(wrong, languages)
    if len(files) < MIN_WRONG_CONTROLS:
        found.append(Finding("wrong-controls", wrong, f"{len(files)} known-wrong control(s); add at least "
                             f"{MIN_WRONG_CONTROLS}, each a kernel with a classic mistake that the judge must refuse"))
    comments = {s: lang.comment for lang in languages for s in lang.suffixes}
    for f in files:
        comment = comments[f.suffix]
        try:
            status, reason = declared_status(f, comment)
        except ControlError as e:
            found.append(Finding("control-header", f, str(e).removeprefix(f"{f}: ")
                                 + f", then why it is wrong: `{comment} expected: WRONG_ANSWER — tail not handled`"))
            continue
        if status is Status.ACCEPTED:
            found.append(Finding("control-header", f, "declares ACCEPTED: a control in wrong/ must be wrong (a right "
                                 f"answer belongs in {answers})"))
        elif not reason:
            found.append(Finding("control-header", f, f"say why it is wrong after the status: "
                                 f"`{comment} expected: {status.value} — why`"))
    stems = {f.stem for f in files}
    if "all_zeros" not in stems:
        found.append(Finding("classic-controls", wrong / f"all_zeros{_suffix(languages)}",
                             "missing: a kernel that writes zeros (`expected: WRONG_ANSWER`) proves on the "
                             "device that the check refuses it"))
    if problem is not None and "input_copy" not in stems and _copy_applies(problem):
        found.append(Finding("classic-controls", wrong / f"input_copy{_suffix(languages)}",
                             "missing: an output can be a flat copy of an input here (same dtype and element "
                             "count on every test workload); a kernel that copies it proves the check refuses it"))
    return found


def _copy_applies(p: spec.Problem) -> bool:
    """An input with an output's dtype and element count on every test workload."""
    for o in p.outputs:
        for t in p.tensors:
            if t.ctype.is_output or _dtype(t) != _dtype(o):
                continue
            if all(math.prod(p.shape_of(t.name, w)) == math.prod(p.shape_of(o.name, w)) for w in p.spec.tests):
                return True
    return False


def _dtype(param: spec.Param) -> str:
    return param.ctype.element.dtype if param.ctype.element else ""


def _suffix(languages: Sequence[Language]) -> str:
    return languages[0].suffixes[0] if languages else ""


def _names(languages: Sequence[Language]) -> str:
    return " or ".join(s for lang in languages for s in lang.suffixes) or "a solution"
