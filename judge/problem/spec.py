"""problem.yaml → typed models (docs/problem-format.md). Parse once at the edge; everything else gets a Problem.

`load_problem(dir)` raises `ProblemError` carrying every error found (file, field path, message),
so `judge validate` can report them all at once. Loading never imports torch or the reference:
the reference function's existence is checked with `ast`. The `check:` field is the union of the
checks registered in judge/problem/checks/ (nothing here names them).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from judge.problem import abi, checks, pyfile
from judge.problem.checks import AllClose, Custom, Exact  # noqa: F401 (re-exported: spec.AllClose, ...)
from judge.problem.expr import Expr, ExprError, parse

Level = Literal["easy", "medium", "hard", "hard+", "hard++"]
LEVELS: tuple[str, ...] = ("easy", "medium", "hard", "hard+", "hard++")
Number = int | float


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Param(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    type: str
    shape: list[str | int] | None = None

    @field_validator("type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        abi.parse_ctype(v)  # ValueError names the allowed types
        return v

    @cached_property
    def ctype(self) -> abi.CType:
        return abi.parse_ctype(self.type)


class InputSpec(_Strict):
    """How one input tensor is drawn. `scale` may be an expression over the scalars."""

    init: Literal["randn", "rand", "randint"] = "randn"
    scale: Number | str = 1.0  # randn: std; rand: multiplies U[low, high)
    low: Number | str = 0  # expressions too: `high: vocab` draws class indices
    high: Number | str = 1


class Impl(_Strict):
    name: str
    impl: str = Field(pattern=pyfile.REF_PATTERN)


if TYPE_CHECKING:
    CheckSpec = checks.Check  # every check is one; which one is decided by `name` at validation
else:
    CheckSpec = checks.union()  # the registered checks, told apart by `name`
Workload = dict[str, Number]


class ClassicWrong(_Strict):
    """A classic wrong answer this problem's tolerance accepts on some test workloads, and why
    (tests/problem/test_classic_wrong.py: `always` ones must pass there, `chance` ones are not asserted)."""

    answer: str = Field(pattern=r"^(zeros|copy:[A-Za-z_][A-Za-z0-9_]*)$")  # all zeros, a flat input copy
    when: str  # a condition over the scalars: "n == 1", "rows == 1 or cols == 1"
    kind: Literal["always", "chance"] = "always"
    why: str = Field(min_length=1)


class Spec(_Strict):
    name: str
    title: str
    level: Level
    tags: list[str] = []
    signature: list[Param] = Field(min_length=1)
    inputs: dict[str, InputSpec] = {}
    reference: str = Field(pattern=pyfile.REF_PATTERN)
    baseline: Impl | list[Impl] | None = None
    check: CheckSpec
    flops: str | Number = 0
    bytes: str | Number
    tests: list[Workload] = Field(min_length=1)
    benchmarks: list[Workload] = []
    hints: list[str] = []
    # Extensions (not in the contract's example, documented in docs/problem-format.md).
    compute: Literal["fp32", "fp16_tensor", "bf16_tensor", "fp8_tensor", "int"] = "fp32"
    seed: int = 0
    timeout_s: float = Field(default=10.0, gt=0)  # one call of solve()
    allow: list[Literal["cublas", "cublasLt", "cudnn", "nccl"]] = []  # libraries the static policy lets through
    accepts_classic_wrong: list[ClassicWrong] = []  # declared exceptions to "the classics must fail"


@dataclass(frozen=True)
class Problem:
    """A validated problem: the spec plus everything derived from it."""

    root: Path
    spec: Spec
    shapes: dict[str, tuple[Expr, ...]]
    flops: Expr
    bytes: Expr
    scales: dict[str, Expr]
    baselines: tuple[Impl, ...] = field(default=())
    bounds: dict[str, tuple[Expr, Expr]] = field(default_factory=dict)  # inputs' (low, high)
    classic_wrong: tuple[tuple[ClassicWrong, Expr], ...] = ()  # spec.accepts_classic_wrong, parsed

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def params(self) -> list[tuple[str, abi.CType]]:
        return [(p.name, p.ctype) for p in self.spec.signature]

    @property
    def scalars(self) -> list[Param]:
        return [p for p in self.spec.signature if not p.ctype.is_tensor]

    @property
    def tensors(self) -> list[Param]:
        return [p for p in self.spec.signature if p.ctype.is_tensor]

    @property
    def outputs(self) -> list[Param]:
        return [p for p in self.spec.signature if p.ctype.is_output]

    def shape_of(self, name: str, workload: Workload) -> tuple[int, ...]:
        return tuple(int(e(workload)) for e in self.shapes[name])

    def numel(self, workload: Workload) -> int:
        """Elements over all tensors of a workload: how big it is."""
        return sum(math.prod(self.shape_of(t.name, workload)) for t in self.tensors)

    def prototype(self) -> str:
        return abi.prototype(self.params)

    def shape_text(self, name: str) -> str:
        return "[" + ", ".join(str(e) for e in self.shapes[name]) + "]"

    def impl_path(self, ref: str) -> tuple[Path, str]:
        return pyfile.split(self.root, ref)

    def accepts_classic(self, answer: str, workload: Workload) -> ClassicWrong | None:
        """The declaration that `answer` ("zeros", "copy:X") is right on this workload, if any."""
        return next((c for c, when in self.classic_wrong if c.answer == answer and when(workload)), None)

    @property
    def wrong_dir(self) -> Path:
        return self.root / "wrong"

    @property
    def statement_path(self) -> Path:
        return self.root / "README.md"


def workload_id(workload: Workload) -> str:
    """`M=4096,N=4096,K=4096`"""
    return ",".join(f"{k}={v}" for k, v in workload.items())


class ProblemError(Exception):
    """Every error of one problem: (file, field path, message) triples."""

    def __init__(self, file: Path, errors: list[tuple[str, str]]):
        self.file = file
        self.errors = errors
        super().__init__("\n".join(f"{file}: {loc}: {msg}" for loc, msg in errors))


def load_problem(path: str | Path) -> Problem:
    """Load and validate `path/problem.yaml` (or a problem.yaml path); raise ProblemError."""
    root = Path(path).resolve()
    file = root if root.name == "problem.yaml" else root / "problem.yaml"
    root = file.parent
    if not file.is_file():
        raise ProblemError(file, [("-", "no problem.yaml here (is this a problem folder?)")])
    try:
        raw = yaml.safe_load(file.read_text())
    except yaml.YAMLError as e:
        raise ProblemError(file, [("-", f"not valid YAML: {e}")]) from None
    if not isinstance(raw, dict):
        raise ProblemError(file, [("-", "must be a mapping of fields")])
    errors: list[tuple[str, str]] = []
    bad: set[str] = set()
    try:
        spec = Spec.model_validate(raw, context={"root": root})
    except ValidationError as e:
        errors = [(_loc(err["loc"]), _msg(err)) for err in e.errors()]
        bad = {str(err["loc"][0]) for err in e.errors() if err["loc"]}
        repaired = _repaired(raw, bad, root)  # so the checks below still report their errors
        if repaired is None:
            raise ProblemError(file, errors) from None
        spec = repaired
    problem = _derive(root, spec, errors, bad)
    if errors or problem is None:
        raise ProblemError(file, errors)
    return problem


_PLACEHOLDERS = {"title": "-", "level": "easy", "reference": "reference.py:reference",
                 "check": {"name": "exact"}, "bytes": 0, "tests": [{}]}


def _repaired(raw: dict[str, Any], bad: set[str], root: Path) -> Spec | None:
    """The spec with its invalid fields replaced by placeholders (their checks are skipped)."""
    fixed = {k: v for k, v in raw.items() if k in Spec.model_fields and k not in bad}
    params = []
    for p in raw.get("signature") or [] if isinstance(raw.get("signature"), list) else []:
        try:
            params.append(Param.model_validate(p))
        except ValidationError:
            pass
    fixed["signature"] = params or [Param(name="_", type="float*", shape=[1])]
    fixed.setdefault("name", root.name)
    for k, v in _PLACEHOLDERS.items():
        fixed.setdefault(k, v)
    try:
        return Spec.model_validate(fixed, context={"root": root})
    except ValidationError:
        return None


_BRANCHES = checks.registry.branch_names() | {"str", "int", "float", "Impl", "list[Impl]"}


def _loc(loc: tuple[int | str, ...]) -> str:
    parts = []
    for p in loc:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif p in _BRANCHES:
            continue  # union-branch names pydantic puts in the path
        else:
            parts.append(("." if parts else "") + str(p))
    return "".join(parts) or "-"


def _msg(err: ErrorDetails) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown field"
    if err["type"] == "missing":
        return "required field is missing"
    if err["loc"] == ("check",) and err["type"] in ("union_tag_invalid", "union_tag_not_found"):
        known = ", ".join(checks.CHECKS)
        if err["type"] == "union_tag_invalid":
            return f"unknown check {err.get('ctx', {}).get('tag')!r}: name one of {known}"
        return f"needs a name: one of {known}"
    return err["msg"].removeprefix("Value error, ")


def _derive(root: Path, spec: Spec, errors: list[tuple[str, str]], bad: frozenset[str] | set[str] = frozenset()
            ) -> Problem | None:
    """Checks across fields; those of fields in `bad` (already reported) are skipped."""
    if "signature" in bad:  # expressions and workloads name scalars that may be missing
        bad = bad | {"inputs", "flops", "bytes", "tests", "benchmarks", "shapes", "accepts_classic_wrong"}
    if spec.name != root.name and "name" not in bad:
        errors.append(("name", f"is {spec.name!r} but the folder is {root.name!r}"))
    names = [p.name for p in spec.signature]
    for n in {n for n in names if names.count(n) > 1}:
        errors.append(("signature", f"parameter {n!r} appears twice"))
    scalars = {p.name: p for p in spec.signature if not p.ctype.is_tensor}
    tensors = {p.name: p for p in spec.signature if p.ctype.is_tensor}
    allowed = set(scalars)

    def expr(where: str, text: str | int | float) -> Expr | None:
        try:
            return parse(text, allowed)
        except ExprError as e:
            errors.append((where, str(e)))
            return None

    shapes: dict[str, tuple[Expr, ...]] = {}
    for i, p in enumerate(spec.signature if "shapes" not in bad else []):
        if p.ctype.is_tensor and not p.shape:
            errors.append((f"signature[{i}].shape", f"tensor {p.name!r} needs a shape"))
        elif not p.ctype.is_tensor and p.shape:
            errors.append((f"signature[{i}].shape", f"scalar {p.name!r} cannot have a shape"))
        elif p.shape:
            dims = [expr(f"signature[{i}].shape[{j}]", d) for j, d in enumerate(p.shape)]
            if all(dims):
                shapes[p.name] = tuple(dims)  # type: ignore[arg-type]
    if "signature" not in bad and not any(p.ctype.is_output for p in tensors.values()):
        errors.append(("signature", "no output tensor (a non-const pointer)"))
    scales: dict[str, Expr] = {}
    bounds: dict[str, tuple[Expr, Expr]] = {}
    for name, inp in (spec.inputs if "inputs" not in bad else {}).items():
        t = tensors.get(name)
        if t is None or t.ctype.is_output:
            errors.append((f"inputs.{name}", "is not an input tensor of the signature"))
            continue
        s = expr(f"inputs.{name}.scale", inp.scale)
        if s:
            scales[name] = s
        lo, hi = expr(f"inputs.{name}.low", inp.low), expr(f"inputs.{name}.high", inp.high)
        if lo and hi:
            bounds[name] = (lo, hi)
        if inp.init == "randint" and t.ctype.element and t.ctype.element.is_float:
            errors.append((f"inputs.{name}.init", "randint needs an integer tensor"))
    flops = expr("flops", spec.flops) if "flops" not in bad else None
    nbytes = expr("bytes", spec.bytes) if "bytes" not in bad else None
    for key in ("tests", "benchmarks"):
        for i, w in enumerate(getattr(spec, key) if key not in bad else []):
            if _check_workload(f"{key}[{i}]", w, scalars, errors):
                _check_shapes(f"{key}[{i}]", w, shapes, errors)
    baselines = tuple(spec.baseline if isinstance(spec.baseline, list) else
                      [spec.baseline] if spec.baseline else [])
    if spec.benchmarks and not baselines and not bad & {"baseline", "benchmarks"}:
        errors.append(("baseline", "benchmarks need a baseline to compare with"))
    if "reference" not in bad:
        _check_impl(root, "reference", spec.reference, errors)
    if "check" not in bad:
        errors.extend((f"check.{loc}", msg) for loc, msg in spec.check.problems(root))
    classic_wrong = []
    for i, c in enumerate(spec.accepts_classic_wrong if "accepts_classic_wrong" not in bad else []):
        source = c.answer.removeprefix("copy:") if c.answer.startswith("copy:") else None
        if source is not None and (source not in tensors or tensors[source].ctype.is_output):
            errors.append((f"accepts_classic_wrong[{i}].answer", f"{source!r} is not an input tensor "
                           f"of the signature"))
        try:
            classic_wrong.append((c, parse(c.when, allowed, condition=True)))
        except ExprError as e:
            errors.append((f"accepts_classic_wrong[{i}].when", str(e)))
    for i, b in enumerate(baselines if "baseline" not in bad else []):
        where = "baseline.impl" if not isinstance(spec.baseline, list) else f"baseline[{i}].impl"
        _check_impl(root, where, b.impl, errors)
    if errors or flops is None or nbytes is None:
        return None
    return Problem(root, spec, shapes, flops, nbytes, scales, baselines, bounds, tuple(classic_wrong))


def workload_errors(problem: Problem, w: Workload) -> list[str]:
    """What makes `w` no workload of `problem`, as problem.yaml's tests are checked: each of the
    signature's scalars given once, as a number of its type, every tensor dimension a positive
    whole number. Empty when it is one."""
    errors: list[tuple[str, str]] = []
    if _check_workload("", w, {p.name: p for p in problem.scalars}, errors):
        _check_shapes("", w, problem.shapes, errors)
    return [f"{loc.lstrip('.')} {msg}" if loc else msg for loc, msg in errors]


def _check_workload(where: str, w: Workload, scalars: dict[str, Param], errors: list) -> bool:
    before = len(errors)
    for k, v in w.items():
        if k not in scalars:
            errors.append((f"{where}.{k}", f"is not a scalar of the signature ({', '.join(scalars)})"))
        elif scalars[k].ctype.scalar == "int" and not (isinstance(v, int) and not isinstance(v, bool)):
            errors.append((f"{where}.{k}", f"must be an integer, got {v!r}"))
        elif not isinstance(v, (int, float)) or isinstance(v, bool):
            errors.append((f"{where}.{k}", f"must be a number, got {v!r}"))
    for k in scalars:
        if k not in w:
            errors.append((f"{where}", f"missing scalar {k!r}"))
    return len(errors) == before


def _check_shapes(where: str, w: Workload, shapes: dict[str, tuple[Expr, ...]], errors: list) -> None:
    """Every tensor dimension must come out a positive whole number on this workload."""
    for name, dims in shapes.items():
        for j, d in enumerate(dims):
            try:
                v = d(w)
            except (ZeroDivisionError, OverflowError, ValueError) as e:
                errors.append((where, f"shape of {name}[{j}] = {d}: {e}"))
                continue
            if v != int(v) or v < 1:
                errors.append((where, f"shape of {name}[{j}] = {d} is {v}, not a positive whole number"))


def _check_impl(root: Path, where: str, ref: str, errors: list[tuple[str, str]]) -> None:
    try:
        pyfile.function_def(root, ref)
    except ValueError as e:
        errors.append((where, str(e)))


def find_problems(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/problem.yaml"))
