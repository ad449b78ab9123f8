"""Ranking: speedup intervals, ties, per-problem boards and the overall ranking. Pure functions.

Score of one result (docs/timing.md): the geomean over benchmark shapes of baseline median / candidate
median. Its interval combines the per-shape confidence intervals of the candidate's median:
low = geomean(baseline median / candidate ci_high), high = geomean(baseline median / candidate
ci_low). The baseline's own median is taken as exact (it is timed in the same run, twice).

Ties: results are sorted by speedup; a result whose interval overlaps the interval of the first
result of the current tie group joins that group and shares its rank (competition ranking, shown
"=2"); otherwise it starts a new group whose rank is its position (1, =2, =2, 4).

Overall (per GPU kind): first key, the number of problems a participant solved (an ACCEPTED,
timed latest result); second key, the geomean of its speedups over those problems, with the
interval given by the geomeans of the per-problem interval ends. Equal counts and overlapping
intervals tie, as above.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.engine.score import geomean


@dataclass(frozen=True)
class Score:
    point: float  # geomean speedup over the baseline
    low: float
    high: float
    shapes: int = 0

    def overlaps(self, other: Score) -> bool:
        return self.low <= other.high and other.low <= self.high


def _geomean(values: Iterable[float]) -> float:
    """The geomean of values known to be positive (speedups, never empty here)."""
    g = geomean(values)
    if g is None:
        raise ValueError("the geomean of no positive value")
    return g


def score(report: Report) -> Score | None:
    """The speedup interval of an ACCEPTED, timed report; None when there is nothing to rank."""
    if report.status is not Status.ACCEPTED:
        return None
    pts, lows, highs = [], [], []
    for b in report.benchmarks:
        s = b.stats
        if not b.baselines or min(s.median_ms, s.ci_low_ms, s.ci_high_ms) <= 0:
            continue
        base = b.baselines[0].median_ms
        if base <= 0:
            continue
        pts.append(base / s.median_ms)
        lows.append(base / s.ci_high_ms)
        highs.append(base / s.ci_low_ms)
    if not pts:
        return None
    return Score(_geomean(pts), _geomean(lows), _geomean(highs), len(pts))


def ranks(scores: Sequence[Score]) -> list[tuple[int, bool]]:
    """(rank, tied) for each of `scores`, which must be sorted best first."""
    out: list[tuple[int, bool]] = []
    leader = 0
    for i, s in enumerate(scores):
        if i and not s.overlaps(scores[leader]):
            leader = i
        out.append((leader + 1, False))
    sizes: dict[int, int] = {}
    for r, _ in out:
        sizes[r] = sizes.get(r, 0) + 1
    return [(r, sizes[r] > 1) for r, _ in out]


def rank_text(rank: int, tied: bool) -> str:
    return f"={rank}" if tied else str(rank)


class RowLike(Protocol):
    """A stored result (judge.board.submissions.StoredResult): read-only."""
    @property
    def id(self) -> int: ...
    @property
    def participant(self) -> str: ...
    @property
    def gpu_kind(self) -> str: ...
    @property
    def report(self) -> Report: ...


@dataclass(frozen=True)
class Ranked:
    rank: int
    tied: bool
    participant: str
    score: Score
    report: Report

    @property
    def rank_text(self) -> str:
        return rank_text(self.rank, self.tied)


@dataclass(frozen=True)
class Unranked:
    participant: str
    report: Report  # not ACCEPTED, or ACCEPTED without timings


@dataclass
class ProblemBoard:
    problem: str
    gpu_kind: str
    ranking: list[Ranked] = field(default_factory=list)
    unranked: list[Unranked] = field(default_factory=list)


@dataclass(frozen=True)
class OverallEntry:
    rank: int
    tied: bool
    participant: str
    solved: int
    attempted: int
    score: Score

    @property
    def rank_text(self) -> str:
        return rank_text(self.rank, self.tied)


@dataclass
class KindBoard:
    gpu_kind: str
    problems: list[ProblemBoard]
    overall: list[OverallEntry]


def _sort_key(name: str, s: Score) -> tuple:
    return (-s.point, name)


def problem_board(problem: str, gpu_kind: str, latest: Iterable[RowLike]) -> ProblemBoard:
    board = ProblemBoard(problem, gpu_kind)
    scored = []
    for r in latest:
        s = score(r.report)
        if s is None:
            board.unranked.append(Unranked(r.participant, r.report))
        else:
            scored.append((r.participant, s, r.report))
    scored.sort(key=lambda t: _sort_key(t[0], t[1]))
    for (name, s, rep), (rk, tied) in zip(scored, ranks([t[1] for t in scored])):
        board.ranking.append(Ranked(rk, tied, name, s, rep))
    board.unranked.sort(key=lambda u: (u.report.status.value, u.participant))
    return board


def overall(problems: Iterable[ProblemBoard]) -> list[OverallEntry]:
    solved: dict[str, list[Score]] = {}
    attempted: dict[str, int] = {}
    for pb in problems:
        for r in pb.ranking:
            solved.setdefault(r.participant, []).append(r.score)
        for name in [r.participant for r in pb.ranking] + [u.participant for u in pb.unranked]:
            attempted[name] = attempted.get(name, 0) + 1
    agg = {name: Score(_geomean(s.point for s in ss), _geomean(s.low for s in ss),
                       _geomean(s.high for s in ss), sum(s.shapes for s in ss))
           for name, ss in solved.items()}
    order = sorted(agg, key=lambda n: (-len(solved[n]),) + _sort_key(n, agg[n]))
    out: list[OverallEntry] = []
    i = 0
    while i < len(order):  # tie groups only within the same solved count
        j = i
        while j < len(order) and len(solved[order[j]]) == len(solved[order[i]]):
            j += 1
        group = order[i:j]
        for name, (rk, tied) in zip(group, ranks([agg[n] for n in group])):
            out.append(OverallEntry(rk + i, tied, name, len(solved[name]), attempted[name], agg[name]))
        i = j
    return out


def boards(latest: Iterable[RowLike]) -> list[KindBoard]:
    """Boards per GPU kind (sorted by name), each with its problems (sorted by name) and overall."""
    by_kind: dict[str, dict[str, list[RowLike]]] = {}
    for r in latest:
        by_kind.setdefault(r.gpu_kind, {}).setdefault(r.report.problem, []).append(r)
    out = []
    for kind in sorted(by_kind):
        pbs = [problem_board(p, kind, rs) for p, rs in sorted(by_kind[kind].items())]
        out.append(KindBoard(kind, pbs, overall(pbs)))
    return out
