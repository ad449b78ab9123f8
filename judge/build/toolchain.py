"""The build seam: one `Toolchain` per submission language, found by the file's suffix.

A toolchain turns a submitted file into something the worker can load, or into the verdict that
stops it before any GPU: the static policy on the source, the build, the policy on what was built
(`prepare`). Everything that takes a solution (submit, test, verify, compare, profile, watch,
leaderboards local and on Ray, drills, solutions) goes through `for_source` and `prepare_many`,
so adding a language is one module that implements `Toolchain` plus one line in `REGISTRY`
(docs/architecture.md shows the diff).
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judge.build.cuda import CUDA
from judge.build.language import Prepared, Progress, Toolchain, UnknownLanguage
from judge.build.triton import TRITON
from judge.contract.verdict import Status
from judge.problem.spec import Problem

__all__ = ["DEFAULT", "REGISTRY", "Prepared", "Progress", "Toolchain", "UnknownLanguage", "check_source",
           "for_name", "for_source", "is_solution", "language_of", "prepare", "prepare_many", "solutions_in",
           "starter_file",
           "suffixes"]

REGISTRY: dict[str, Toolchain] = {t.name: t for t in (CUDA, TRITON)}  # one line per language
DEFAULT = "cuda"  # the language of `judge init` and drill starters unless asked otherwise


def suffixes() -> tuple[str, ...]:
    return tuple(s for t in REGISTRY.values() for s in t.suffixes)


def is_solution(path: Path) -> bool:
    return Path(path).suffix in suffixes()


def solutions_in(folder: Path) -> list[Path]:
    """The solution files of every language in `folder`, by name (hidden files left out)."""
    if not Path(folder).is_dir():
        return []
    return sorted(f for f in Path(folder).iterdir() if not f.is_dir() and is_solution(f) and not f.name.startswith("."))


def starter_file(problem: Problem, folder: Path, language: str = DEFAULT) -> tuple[Path, str]:
    """Where a starter for `problem` goes in `folder` (NAME + the language's suffix), and its text."""
    t = for_name(language)
    return Path(folder) / f"{problem.name}{t.suffixes[0]}", t.starter(problem)


def for_source(path: Path) -> Toolchain:
    suffix = Path(path).suffix
    for t in REGISTRY.values():
        if suffix in t.suffixes:
            return t
    raise UnknownLanguage(f"{Path(path).name}: no toolchain takes {suffix or 'a file without a suffix'} files "
                          f"(expected one of: {', '.join(suffixes())})")


def language_of(path: Path) -> str | None:
    """The name of the toolchain that takes `path` (`cuda`, `triton`), or None: no toolchain does."""
    try:
        return for_source(path).name
    except UnknownLanguage:
        return None


def for_name(name: str) -> Toolchain:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownLanguage(f"unknown language {name!r} (known: {', '.join(REGISTRY)})") from None


def prepare_many(jobs: Sequence[tuple[Problem, Path]], arch: str, *, sass: bool = False,
                 on_progress: Progress | None = None) -> list[Prepared]:
    """`prepare_many` of each file's toolchain (files of one language build together), in order.
    A file no toolchain takes is an INTERNAL_ERROR here: callers check `for_source` first."""
    out: list[Prepared | None] = [None] * len(jobs)
    groups: dict[str, list[int]] = {}
    for i, (_, src) in enumerate(jobs):
        try:
            groups.setdefault(for_source(src).name, []).append(i)
        except UnknownLanguage as e:
            out[i] = Prepared(Path(src), "?", Status.INTERNAL_ERROR, str(e))
    for name, idx in groups.items():
        done = REGISTRY[name].prepare_many([jobs[i] for i in idx], arch, sass=sass, on_progress=on_progress)
        for i, p in zip(idx, done):
            out[i] = p
    return [p for p in out if p is not None]


def prepare(problem: Problem, source: Path, arch: str, *, sass: bool = False) -> Prepared:
    return prepare_many([(problem, Path(source))], arch, sass=sass)[0]


def check_source(problem: Problem, source: Path) -> str | None:
    return for_source(source).check_source(problem, Path(source))
