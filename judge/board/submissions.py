"""Leaderboards: which files a submissions folder holds, what the store already knows about them,
and whose new result regressed. Ranking lives in `board_rank`, rendering in `board_render` and
`board_html`, the parallel runner in `jobs`.

A submissions folder holds one folder per participant, with files of any language the judge
takes (judge/build/toolchain.py: `.cu`, and `.py` for Triton):

    SUBMISSIONS_DIR/<participant>/<problem>.cu       (or <problem>.py: one of them, never both)
    SUBMISSIONS_DIR/<participant>/<problem>/*.cu     (the last file by name counts, whatever its
                                                      language, like reference_solutions/<problem>/)

The repository's model answers take part as the participant `reference` (CUDA) and, one
participant per other language, `reference-triton` (`reference_name`): each language's fastest
answer is ranked, and compared with its own previous result, on its own.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from judge.board.rank import Score, score
from judge.build import toolchain
from judge.contract.report import Environment, Report
from judge.contract.verdict import Status

REFERENCE = "reference"  # the participant name of the repository's model answers (CUDA's)


def reference_name(language: str) -> str:
    """The participant name of the repository's model answers in `language`: `reference` for the
    default language (CUDA), `reference-<language>` for the others (`reference-triton`)."""
    return REFERENCE if language == toolchain.DEFAULT else f"{REFERENCE}-{language}"


RESERVED = frozenset(reference_name(language) for language in toolchain.REGISTRY)  # no participant's folder


def _file_names(problem: str) -> str:
    """`<problem>.cu or <problem>.py`: the names a participant's file for a problem may have."""
    return " or ".join(f"{problem}{suffix}" for suffix in toolchain.suffixes())


class LeaderboardError(Exception):
    """A submissions folder that cannot be used at all (missing, a reserved participant name)."""


@dataclass(frozen=True)
class Submission:
    participant: str
    problem: str
    path: Path
    sha256: str  # "" when the file cannot be read
    error: str | None = None  # a reason it cannot be judged (unknown problem, unreadable file, ...)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.participant, self.problem, self.sha256)

    @property
    def language(self) -> str | None:
        """The file's language by its suffix (`cuda`, `triton`); None for a folder with no file."""
        return toolchain.language_of(self.path)

    @property
    def label(self) -> str:
        return f"{self.participant}/{self.problem}"


def _sha256(path: Path) -> tuple[str, str | None]:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest(), None
    except OSError as e:
        return "", f"cannot read {path}: {e.strerror or e}"


def _submission(participant: str, problem: str, path: Path, known: set[str],
                error: str | None = None) -> Submission:
    sha, read_error = ("", None) if path.is_dir() else _sha256(path)
    if error is None and problem not in known:
        error = (f"unknown problem {problem!r}: name the file {_file_names('<problem>')} after one of "
                 f"{', '.join(sorted(known)) or '(no problems)'}")
    return Submission(participant, problem, path, sha, error or read_error)


def _visible(path: Path) -> bool:
    return not path.name.startswith((".", "_"))


def discover(root: Path, known_problems: Iterable[str]) -> list[Submission]:
    """Every submission under `root`, sorted by participant then problem. A file that cannot be
    judged (unknown problem, unreadable, an empty or ambiguous problem folder) is still returned,
    with `error` set: it becomes a row with a status, never a stop."""
    root = Path(root)
    if not root.is_dir():
        raise LeaderboardError(f"no submissions folder {root}")
    known = set(known_problems)
    out: list[Submission] = []
    for person in sorted(p for p in root.iterdir() if p.is_dir() and _visible(p)):
        if person.name in RESERVED:
            raise LeaderboardError(f"{person}: the participant name {person.name!r} is reserved for the "
                                   "repository's model answers; rename the folder")
        files: dict[str, list[Path]] = {}
        for f in toolchain.solutions_in(person):
            if _visible(f):
                files.setdefault(f.stem, []).append(f)
        folders = {d.name: d for d in person.iterdir() if d.is_dir() and _visible(d)}
        for problem in sorted(set(files) | set(folders)):
            found = files.get(problem, [])
            if len(found) > 1:  # vector_add.cu and vector_add.py: which one counts is the participant's call
                out.append(_submission(person.name, problem, found[-1], known,
                                       f"ambiguous: both {' and '.join(f.name for f in found)} exist; keep one"))
            elif found and problem in folders:
                out.append(_submission(person.name, problem, found[0], known,
                                       f"ambiguous: both {found[0].name} and {problem}/ exist; keep one"))
            elif found:
                out.append(_submission(person.name, problem, found[0], known))
            else:
                sources = [f for f in toolchain.solutions_in(folders[problem]) if _visible(f)]
                if sources:
                    out.append(_submission(person.name, problem, sources[-1], known))
                else:
                    out.append(_submission(person.name, problem, folders[problem], known,
                                           f"no solution file ({', '.join(toolchain.suffixes())}) in "
                                           f"{folders[problem]}"))
    return out


def references(solutions_root: Path, problems: Iterable[str], known_problems: Iterable[str]) -> list[Submission]:
    """The repository's fastest model answer in each language (the last file by name: the ladder's
    last step) for each of `problems`, each language's as a participant of its own
    (`reference_name`): ranked side by side, and never taken for the other's regression."""
    known = set(known_problems)
    out = []
    for problem in sorted(set(problems) & known):
        last: dict[str, Path] = {}
        for f in toolchain.solutions_in(Path(solutions_root, problem)):
            last[toolchain.for_source(f).name] = f
        out += [_submission(reference_name(language), problem, f, known) for language, f in last.items()]
    return out


def error_report(sub: Submission, status: Status, message: str, gpu_kind: str | None = None) -> Report:
    """A report for a submission the judge never ran (or whose judging process failed)."""
    return Report(problem=sub.problem, solution=str(sub.path), source_sha256=sub.sha256, mode="submit",
                  status=status, message=message, environment=Environment(gpu=gpu_kind),
                  started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))


# -- the store ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class StoredResult:
    """One leaderboard result from the store."""
    id: int
    participant: str
    gpu_kind: str
    report: Report


def rows(store, problem: str | None = None, gpu_kind: str | None = None) -> list[StoredResult]:
    """Every leaderboard result (participant set, mode submit), oldest first."""
    sql = ("SELECT id, participant, COALESCE(gpu_kind, gpu, '?'), report_json FROM results "
           "WHERE participant IS NOT NULL AND mode = 'submit'")
    args: list = []
    if problem is not None:
        sql, args = sql + " AND problem = ?", args + [problem]
    if gpu_kind is not None:
        sql, args = sql + " AND COALESCE(gpu_kind, gpu, '?') = ?", args + [gpu_kind]
    return [StoredResult(i, p, k, Report.model_validate_json(j))
            for i, p, k, j in store.db.execute(sql + " ORDER BY id", args)]


def gpu_kinds(store) -> list[str]:
    """The GPU kinds the store has leaderboard results on, by name."""
    return [k for (k,) in store.db.execute(
        "SELECT DISTINCT COALESCE(gpu_kind, gpu, '?') FROM results WHERE participant IS NOT NULL AND mode = 'submit' "
        "ORDER BY 1")]


class KindError(ValueError):
    """A GPU kind that names none, or several, of the store's."""


def match_kind(kinds: Iterable[str], text: str) -> str:
    """The one kind of `kinds` that `text` names: itself (any case), else the only one it is part of
    (`H100` for `NVIDIA H100 80GB HBM3`). KindError when none or several match, naming them."""
    kinds = list(kinds)
    exact = [k for k in kinds if k.lower() == text.lower()]
    found = exact or [k for k in kinds if text.lower() in k.lower()]
    if len(found) == 1:
        return found[0]
    if not found:
        raise KindError(f"no leaderboard results on a GPU kind matching {text!r} "
                        f"(the store has: {', '.join(kinds) or 'none'})")
    raise KindError(f"{text!r} matches several GPU kinds: {', '.join(found)}; name one")


def latest(all_rows: Iterable[StoredResult], timed_only: bool = False) -> dict[tuple[str, str, str], StoredResult]:
    """The newest row per (gpu_kind, problem, participant); with `timed_only`, the newest ACCEPTED
    row with a speedup interval (what a regression is measured against)."""
    out: dict[tuple[str, str, str], StoredResult] = {}
    for r in all_rows:
        if timed_only and score(r.report) is None:
            continue
        key = (r.gpu_kind, r.report.problem, r.participant)
        if key not in out or r.id > out[key].id:
            out[key] = r
    return out


def judged(all_rows: Iterable[StoredResult], gpu_kind: str) -> set[tuple[str, str, str]]:
    """(participant, problem, sha256) already judged on this GPU kind. INTERNAL_ERROR rows (the
    judge's fault) do not count: those files are judged again."""
    return {(r.participant, r.report.problem, r.report.source_sha256) for r in all_rows
            if r.gpu_kind == gpu_kind and r.report.status is not Status.INTERNAL_ERROR}


@dataclass(frozen=True)
class Regression:
    participant: str
    problem: str
    gpu_kind: str
    before: Score
    after: Score


REGRESSION_FLOOR = 0.02  # the same kernel judged twice: medians within 1% (docs/timing.md), the speedup's two runs 2%


def regression(participant: str, problem: str, gpu_kind: str, previous: Report | None,
               new: Report, floor: float = REGRESSION_FLOOR) -> Regression | None:
    """The new result is slower than the previous one: both timed and ACCEPTED, the new speedup
    interval lies wholly below the previous one (overlapping intervals are noise, not a regression),
    and the speedup fell by more than `floor` (the judge's run-to-run repeatability)."""
    if previous is None:
        return None
    before, after = score(previous), score(new)
    if before is None or after is None or after.high >= before.low or after.point >= before.point * (1 - floor):
        return None
    return Regression(participant, problem, gpu_kind, before, after)
