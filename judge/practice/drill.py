"""Interview drills: pick unsolved problems, start a clock, attribute attempts, hints, summaries, history.

Pure functions over the Store. Time always comes from the caller (`now`), so tests inject a clock.
A drill is a row of the `drills` table; it is active until `end` (an expired drill stays active:
attempts after its deadline still belong to it and are marked late).
"""
from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from judge.build import toolchain
from judge.contract.verdict import Status
from judge.problem.spec import LEVELS, Problem
from judge.store import Store

Clock = Callable[[], datetime]
MINUTES_BY_LEVEL = {"easy": 20, "medium": 30, "hard": 45, "hard+": 60, "hard++": 60}  # one problem
SET_MINUTES = 60  # a set of several problems


class DrillError(Exception):
    """A drill cannot do what was asked: a bad level, tag or set, nothing left, one already running, none running."""


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def stamp(t: datetime) -> str:
    return t.astimezone(timezone.utc).isoformat(timespec="seconds")


def parse_time(text: str) -> datetime:
    t = datetime.fromisoformat(text)
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Drill:
    id: int
    started_at: datetime
    minutes: float
    problems: tuple[str, ...]
    ended_at: datetime | None = None

    @property
    def deadline(self) -> datetime:
        return self.started_at + timedelta(minutes=self.minutes)

    @staticmethod
    def from_row(row: dict) -> Drill:
        return Drill(row["id"], parse_time(row["started_at"]), row["minutes"], tuple(row["problems"]),
                     parse_time(row["ended_at"]) if row["ended_at"] else None)


# --- picking and starting ---------------------------------------------------------------------------

def pick(problems: list[Problem], solved: set[str], level: str | None = None, tag: str | None = None,
         set_spec: str | None = None, seed: int | None = None) -> list[Problem]:
    """The problems of a new drill. One unsolved problem (of `level`, with `tag`; default: the lowest
    level that has an unsolved one), or with `set_spec` ("easy,medium,hard" or problem names) one per
    item. Deterministic for a given `seed` and solved set."""
    ordered = sorted(problems, key=lambda p: (LEVELS.index(p.spec.level), p.name))
    by_name = {p.name: p for p in ordered}
    if level is not None and set_spec is not None:
        raise DrillError("--level and --set exclude each other (a set names its levels: --set easy,medium)")
    if level is not None and level not in LEVELS:
        raise DrillError(f"unknown level {level!r} (levels: {', '.join(LEVELS)})")
    tags = sorted({t for p in ordered for t in p.spec.tags})
    if tag is not None and tag not in tags:
        raise DrillError(f"unknown tag {tag!r} (tags: {', '.join(tags)})")
    rng = random.Random(seed)
    pool = [p for p in ordered if p.name not in solved and (tag is None or tag in p.spec.tags)]
    with_tag = f" with tag {tag!r}" if tag else ""
    if set_spec is None:
        if level is None:
            cands = [p for p in pool if p.spec.level == pool[0].spec.level] if pool else []
        else:
            cands = [p for p in pool if p.spec.level == level]
        if not cands:
            where = f"at level {level}" if level else "at any level"
            raise DrillError(f"nothing unsolved left {where}{with_tag}: every such problem has an ACCEPTED result")
        return [rng.choice(cands)]
    items = [x.strip() for x in set_spec.split(",") if x.strip()]
    if not items:
        raise DrillError("--set is empty: give levels or problem names, e.g. --set easy,medium,hard")
    chosen: list[Problem] = []
    for item in items:
        if item in by_name:
            if by_name[item] in chosen:
                raise DrillError(f"--set names {item} twice")
            chosen.append(by_name[item])
            continue
        if item not in LEVELS:
            raise DrillError(f"--set: {item!r} is neither a level ({', '.join(LEVELS)}) nor a problem")
        taken = {p.name for p in chosen}
        cands = [p for p in pool if p.spec.level == item and p.name not in taken]
        if not cands:
            raise DrillError(f"nothing unsolved left at level {item}{with_tag} for --set {set_spec}")
        chosen.append(rng.choice(cands))
    return chosen


def default_minutes(problems: list[Problem]) -> float:
    return SET_MINUTES if len(problems) > 1 else MINUTES_BY_LEVEL[problems[0].spec.level]


def active(store: Store) -> Drill | None:
    rows = store.drills(active_only=True)
    return Drill.from_row(rows[-1]) if rows else None


def start(store: Store, problems: list[Problem], now: datetime, minutes: float | None = None) -> Drill:
    """Open a drill on `problems` (the clock starts at `now`); one active drill at a time."""
    if not problems:
        raise DrillError("a drill needs at least one problem")
    minutes = default_minutes(problems) if minutes is None else minutes
    if not minutes > 0:
        raise DrillError(f"--minutes must be positive, got {minutes}")
    drill_id = store.start_drill(stamp(now), minutes, [p.name for p in problems])
    if drill_id is None:
        running = active(store)
        raise DrillError(f"drill {running.id if running else '?'} is still running"
                         + (f" ({', '.join(running.problems)})" if running else "")
                         + ": finish it first with `judge drill end`")
    return Drill(drill_id, parse_time(stamp(now)), minutes, tuple(p.name for p in problems))


def write_starters(problems: list[Problem], folder: Path, language: str = toolchain.DEFAULT) -> list[tuple[Path, bool]]:
    """A `judge init` starter in `language` per problem in `folder`, never overwriting: (path,
    written) pairs. An unknown language is toolchain.UnknownLanguage, before anything is written."""
    toolchain.for_name(language)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for p in problems:
        target, text = toolchain.starter_file(p, folder, language)
        try:
            with open(target, "x") as f:
                f.write(text)
            out.append((target, True))
        except FileExistsError:
            out.append((target, False))
    return out


def attempt_drill(store: Store, problem: str) -> int | None:
    """The drill an attempt on `problem` belongs to: the active drill when it contains the problem."""
    running = active(store)
    return running.id if running is not None and problem in running.problems else None


def end(store: Store, now: datetime) -> Drill:
    running = active(store)
    if running is None:
        raise DrillError("no active drill (start one with `judge drill`)")
    store.end_drill(running.id, stamp(now))
    return Drill(running.id, running.started_at, running.minutes, running.problems, parse_time(stamp(now)))


def require_active(store: Store) -> Drill:
    running = active(store)
    if running is None:
        raise DrillError("no active drill (start one with `judge drill`)")
    return running


# --- summaries ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProblemSummary:
    problem: str
    level: str | None
    attempts: int
    late_attempts: int  # made after the deadline
    first_accepted_s: float | None  # from the drill's start to the first ACCEPTED attempt
    first_accepted_late: bool
    best_speedup: float | None  # best timed ACCEPTED speedup in this drill
    hints_used: int
    hints_total: int | None
    last_status: str | None

    @property
    def solved(self) -> bool:
        return self.first_accepted_s is not None


@dataclass(frozen=True)
class Summary:
    drill: Drill
    now: datetime
    problems: list[ProblemSummary]

    @property
    def elapsed_s(self) -> float:
        return ((self.drill.ended_at or self.now) - self.drill.started_at).total_seconds()

    @property
    def left_s(self) -> float:
        return max(0.0, self.drill.minutes * 60 - self.elapsed_s)

    @property
    def over_s(self) -> float:
        return max(0.0, self.elapsed_s - self.drill.minutes * 60)

    @property
    def hints_used(self) -> int:
        return sum(p.hints_used for p in self.problems)


def summarize(drill: Drill, attempts: list[dict], hints: list[dict], problems: dict[str, Problem],
              now: datetime) -> Summary:
    """`attempts` and `hints` are this drill's rows (Store.drill_attempts, Store.hints)."""
    rows = []
    for name in drill.problems:
        mine = [a for a in attempts if a["problem"] == name]
        ok = [a for a in mine if a["status"] == Status.ACCEPTED.value]
        first = parse_time(ok[0]["created_at"]) if ok else None
        speedups = [a["speedup"] for a in ok if a["speedup"] is not None]
        p = problems.get(name)
        rows.append(ProblemSummary(
            problem=name, level=p.spec.level if p else None, attempts=len(mine),
            late_attempts=sum(parse_time(a["created_at"]) > drill.deadline for a in mine),
            first_accepted_s=(first - drill.started_at).total_seconds() if first else None,
            first_accepted_late=first is not None and first > drill.deadline,
            best_speedup=max(speedups) if speedups else None,
            hints_used=sum(h["problem"] == name for h in hints),
            hints_total=len(p.spec.hints) if p else None,
            last_status=mine[-1]["status"] if mine else None))
    return Summary(drill, now, rows)


def summary(store: Store, drill: Drill, problems: dict[str, Problem], now: datetime) -> Summary:
    return summarize(drill, store.drill_attempts(drill.id), store.hints(drill.id), problems, now)


# --- history -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class History:
    drills: int  # ended drills counted
    solved_in_drills: int  # problems with an ACCEPTED attempt inside their drill
    problems_in_drills: int
    median_first_accepted_s: dict[str, float]  # per level, over solved drill problems
    hints_per_drill: float | None  # mean
    best_speedups: list[tuple[str, float]]  # all-time best timed speedup per problem, best first
    solved_per_level: dict[str, tuple[int, int]]  # level: (solved, problems)


def history(store: Store | None, problems: dict[str, Problem], now: datetime, exclude: int | None = None) -> History:
    """The local user's record: ended drills (except `exclude`), and all-time progress per level.
    `store` None: no store yet, an empty record."""
    attempts = store.drill_attempts() if store else []
    hints = store.hints(every_drill=True) if store else []
    past = [Drill.from_row(r) for r in (store.drills() if store else []) if r["ended_at"] and r["id"] != exclude]
    sums = [summarize(d, [a for a in attempts if a["drill_id"] == d.id],
                      [h for h in hints if h["drill_id"] == d.id], problems, now) for d in past]
    times: dict[str, list[float]] = {}
    for s in sums:
        for p in s.problems:
            if p.solved and p.level:
                times.setdefault(p.level, []).append(p.first_accepted_s)  # type: ignore[arg-type]
    progress = store.progress() if store else {}
    best = sorted(((n, x.best_speedup) for n, x in progress.items() if x.best_speedup is not None),
                  key=lambda t: -t[1])
    per_level = {lv: (sum(1 for p in problems.values() if p.spec.level == lv and p.name in progress
                          and progress[p.name].solved),
                      sum(1 for p in problems.values() if p.spec.level == lv)) for lv in LEVELS}
    return History(
        drills=len(sums), solved_in_drills=sum(p.solved for s in sums for p in s.problems),
        problems_in_drills=sum(len(s.problems) for s in sums),
        median_first_accepted_s={lv: statistics.median(times[lv]) for lv in LEVELS if lv in times},
        hints_per_drill=statistics.fmean(s.hints_used for s in sums) if sums else None,
        best_speedups=best, solved_per_level={lv: n for lv, n in per_level.items() if n[1]})


# --- hints -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Hint:
    problem: str
    index: int  # 1-based
    total: int
    text: str
    drill_id: int | None


def hint_problem(store: Store, name: str | None) -> str:
    """The problem `judge hint` is about: `name`, or the active drill's first problem not yet
    ACCEPTED in it."""
    if name is not None:
        return name
    running = active(store)
    if running is None:
        raise DrillError("no active drill: name a problem (judge hint PROBLEM) or start a drill (judge drill)")
    done = {a["problem"] for a in store.drill_attempts(running.id) if a["status"] == Status.ACCEPTED.value}
    left = [p for p in running.problems if p not in done]
    if not left:
        raise DrillError(f"every problem of drill {running.id} is solved; name one: judge hint PROBLEM")
    return left[0]


def shown_hints(store: Store, problem: Problem) -> tuple[int | None, list[Hint]]:
    """(drill id the hints count against, hints of `problem` shown so far there). Hints are counted per
    drill: inside the active drill that contains the problem, otherwise among hints shown outside drills."""
    drill_id = attempt_drill(store, problem.name)
    rows = store.hints(drill_id, problem.name)
    texts = problem.spec.hints
    shown = [Hint(problem.name, r["hint_index"] + 1, len(texts), texts[r["hint_index"]], drill_id)
             for r in rows if r["hint_index"] < len(texts)]
    return drill_id, shown


def next_hint(store: Store, problem: Problem, now: datetime) -> Hint | None:
    """Reveal (and record) the next hint of `problem`; None when every hint has been shown."""
    drill_id, shown = shown_hints(store, problem)
    index = len(shown)
    if index >= len(problem.spec.hints):
        return None
    store.record_hint(drill_id, problem.name, index, stamp(now))
    return Hint(problem.name, index + 1, len(problem.spec.hints), problem.spec.hints[index], drill_id)


def guarding(store: Store, problem: str) -> Drill | None:
    """The active drill that contains `problem` (its solutions would be a spoiler), if any."""
    running = active(store)
    return running if running is not None and problem in running.problems else None
