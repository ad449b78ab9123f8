"""What a submission language's toolchain is (`Toolchain`), and what it makes of a file (`Prepared`).

The registry of toolchains and the functions every caller uses are judge/build/toolchain.py.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from judge.contract.report import BuildInfo
from judge.contract.verdict import Status
from judge.problem.spec import Problem

Progress = Callable[[int, int, str], None]  # (done, total, what): a build's progress


@dataclass
class Prepared:
    """A submission made ready for the worker, or the verdict that stops it before any GPU."""

    source: Path
    language: str
    status: Status | None = None  # None: ready; else COMPILE_ERROR, REJECTED or INTERNAL_ERROR
    message: str = ""
    build: BuildInfo | None = None  # what the build did (None where it never ran)
    load: dict = field(default_factory=dict)  # what the worker's `init` needs to load it

    @property
    def ok(self) -> bool:
        return self.status is None


class Toolchain(Protocol):
    name: str  # shown in reports and leaderboards: "cuda"
    suffixes: tuple[str, ...]  # the files it takes: (".cu",)
    comment: str  # a line comment: "//" (control files declare `<comment> expected: STATUS`)
    worker: str  # its GPU worker: "native" (judge/worker/native) | "triton" (judge/worker/triton_gpu.py)

    def starter(self, problem: Problem) -> str:
        """A file that builds and loads as is: the exact signature, a comment per tensor."""
        ...

    def prototype(self, problem: Problem) -> str:
        """solve()'s signature in this language, as `judge show` and drills print it."""
        ...

    def flags(self, arch: str) -> str:
        """The build's flags for `arch`, as the report's environment shows them."""
        ...

    def check_source(self, problem: Problem, source: Path) -> str | None:
        """The static policy on the source alone (fast, before any build): the REJECTED message, or None."""
        ...

    def prepare_many(self, jobs: Sequence[tuple[Problem, Path]], arch: str, *, sass: bool = False,
                     on_progress: Progress | None = None) -> list[Prepared]:
        """TimingPolicy, build and policy on the result for every (problem, source), in order."""
        ...


class UnknownLanguage(ValueError):
    """No toolchain takes this file."""
