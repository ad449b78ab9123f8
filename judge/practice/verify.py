"""A problem folder tests itself: every reference solution must be ACCEPTED, every `wrong/*.cu` (and
Triton's `wrong/*.py`) must get the status its first line declares (`// expected: WRONG_ANSWER — tail
not handled`, `# expected: ...` in Python).

Without a GPU, `build_check` does what needs none: every control built and put through the static
policy, the COMPILE_ERROR and REJECTED controls to their verdict where it is reached there.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from judge import paths
from judge.build import toolchain
from judge.build.language import Prepared
from judge.contract.verdict import Status
from judge.engine.stats import TimingPolicy
from judge.problem.spec import Problem
from judge.problem.validate import ControlError, declared_status

if TYPE_CHECKING:
    from judge.contract.report import Report

__all__ = ["Checked", "Control", "ControlError", "controls", "expected_status", "reference_dir", "verify"]


@dataclass(frozen=True)
class Control:
    problem: Problem
    path: Path
    expected: Status
    reason: str
    kind: str  # "reference" | "wrong"


def expected_status(path: Path) -> tuple[Status, str]:
    """The status a known-wrong control declares on its first line, in its language's comment
    syntax (`judge validate` checks every control's line: judge/problem/validate.py)."""
    return declared_status(path, toolchain.for_source(path).comment)


def reference_dir(problem: Problem) -> Path:
    return paths.solutions_dir(problem.root)


def controls(problem: Problem) -> list[Control]:
    """The files a GPU verify judges: every model answer and known-wrong control, of every language."""
    out = [Control(problem, p, Status.ACCEPTED, "reference solution", "reference")
           for p in toolchain.solutions_in(reference_dir(problem))]
    for p in toolchain.solutions_in(problem.wrong_dir):
        status, reason = expected_status(p)
        out.append(Control(problem, p, status, reason, "wrong"))
    return out


@dataclass
class Checked:
    control: Control
    report: Report

    @property
    def ok(self) -> bool:
        return self.report.status == self.control.expected


def verify(problems: list[Problem], device_index: int = 0, arch: str | None = None,
           on_build: Callable[[int, int, str], None] | None = None,
           time_references: TimingPolicy | None = None,
           on_start: Callable[[Control, int, int], None] | None = None) -> Iterator[Checked]:
    """Build every control through one ninja run, then judge each: correctness only, or with
    `time_references` the reference solutions are also timed against the baseline (submit)."""
    from judge.build import nvcc as build
    from judge.build import toolchain
    from judge.contract.events import Finished
    from judge.engine.run import Options, evaluate
    from judge.gpu import device

    gpu = next((g for g in device.gpus() if g.index == device_index), None)
    arch = arch or (build.arch_for(gpu.major, gpu.minor) if gpu else "sm_90a")
    ctrls = [c for p in problems for c in controls(p)]
    results = toolchain.prepare_many([(c.problem, c.path) for c in ctrls], arch, on_progress=on_build)
    for i, (c, r) in enumerate(zip(ctrls, results)):
        if on_start:
            on_start(c, i, len(ctrls))
        opts = Options(mode="test", device=device_index, arch=arch, prepared=r)
        if time_references is not None and c.kind == "reference":
            opts.mode = "submit"
            opts.policy = time_references
            opts.baseline_policy = time_references.for_baseline()
        for ev in evaluate(c.problem, c.path, opts):
            if isinstance(ev, Finished):
                yield Checked(c, ev.report)


BUILT = "BUILT"  # `build_check`'s outcome of a file that built and passed the static policy


@dataclass
class BuildChecked:
    """One control after its build and static policy, no GPU: what it got, and whether that fits."""

    control: Control
    prepared: Prepared

    @property
    def got(self) -> str:
        return self.prepared.status.value if self.prepared.status is not None else BUILT

    @property
    def ok(self) -> bool:
        """A COMPILE_ERROR control must fail to build; a REJECTED one may be refused here or build
        (the runtime defences reject it on a GPU); every other control must build and pass."""
        expected = self.control.expected
        if expected is Status.COMPILE_ERROR:
            return self.got == Status.COMPILE_ERROR.value
        if expected is Status.REJECTED:
            return self.got in (Status.REJECTED.value, BUILT)
        return self.got == BUILT

    @property
    def settled(self) -> bool:
        """Whether this control reached its declared verdict here (else a GPU must judge it)."""
        return self.got == self.control.expected.value


def build_check(problems: list[Problem], arch: str = "sm_90a",
                on_build: Callable[[int, int, str], None] | None = None) -> list[BuildChecked]:
    """Every control of `problems` built for `arch` through one ninja run and policy-checked."""
    ctrls = [c for p in problems for c in controls(p)]
    results = toolchain.prepare_many([(c.problem, c.path) for c in ctrls], arch, on_progress=on_build)
    return [BuildChecked(c, r) for c, r in zip(ctrls, results)]
