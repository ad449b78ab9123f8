"""A leaderboard run on a Ray cluster (`judge leaderboard run --cluster ADDRESS`), decided here and
shown by cli/cluster_cmd.py: connecting and choosing the GPU kinds, the plan per kind, recording
each result (a Report, or a BuildCheck with --build-only), the exit code and the `--json` rows.
It shares the local run's planning, recording and rows (judge/board/run.py).

Ray is imported only from here on (judge/board/cluster.py), never by the local path. Nothing here
prints or exits: `RunError`s carry their exit code.
"""
from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judge.board import cluster
from judge.board.cluster import Job, TaskDone, TaskStarted
from judge.board.errors import BadRequest, Unavailable
from judge.board.run import (
    FailOn,
    exit_code,
    plan,
    record,
    regression_row,
    result_row,
    skipped_row,
)
from judge.board.submissions import Regression, StoredResult, Submission
from judge.contract.verdict import Status
from judge.runner.job import Runner

if TYPE_CHECKING:
    from judge.store import Store


@dataclass(frozen=True)
class Session:
    address: str
    declared: dict[str, int]  # GPU kind → GPUs the live nodes declare
    kinds: list[str]  # the kinds this run judges on


def open_session(address: str, kinds_text: str | None) -> Session:
    """Connect to the cluster at `address` and choose the kinds (`kinds_text`: e.g. "H100,A100";
    None: every kind it declares). BadRequest for a bad address or kind (exit 2); Unavailable
    when no cluster answers or Ray is missing (exit 3: the infrastructure, not the submissions)."""
    try:
        cluster.parse_address(address)
    except ValueError as e:
        raise BadRequest(str(e)) from None
    requested = [k.strip() for k in kinds_text.split(",") if k.strip()] if kinds_text is not None else None
    if requested == []:
        raise BadRequest("--kinds: name at least one GPU kind, e.g. --kinds H100,A100")
    try:
        cluster.connect(address)
        declared = cluster.declared_kinds()
        try:
            kinds = cluster.choose_kinds(declared, requested)
        except ValueError as e:
            cluster.disconnect()
            raise BadRequest(str(e)) from None
    except cluster.ClusterError as e:
        cluster.disconnect()
        raise Unavailable(str(e)) from None
    return Session(address, declared, kinds)


def close() -> None:
    cluster.disconnect()


@dataclass
class Tally:
    """A cluster run: its jobs, what was skipped (per kind), judged and regressed."""
    session: Session
    build_only: bool
    jobs: list[Job] = field(default_factory=list)
    skipped: list[tuple[str, Submission]] = field(default_factory=list)  # (kind, file)
    previous: dict[str, dict[tuple[str, str, str], StoredResult]] = field(default_factory=dict)
    results: list[TaskDone] = field(default_factory=list)
    regressions: list[tuple[str, Regression]] = field(default_factory=list)  # (kind, regression)

    @property
    def mode(self) -> str:
        return "build" if self.build_only else "submit"

    def exit_code(self, fail_on: Sequence[FailOn] | None) -> int:
        return exit_code([status(e) for e in self.results], [r for _, r in self.regressions], fail_on)

    def to_json(self, code: int) -> dict[str, Any]:
        """The run's `--json` summary."""
        return {"cluster": self.session.address, "mode": self.mode,
                "kinds": {k: self.session.declared[k] for k in self.session.kinds},
                "judged": [row(e) for e in self.results],
                "skipped": [dict(skipped_row(s), gpu_kind=k) for k, s in self.skipped],
                "regressions": [dict(regression_row(r), gpu_kind=k) for k, r in self.regressions],
                "exit_code": code}


def plan_jobs(store: Store, subs: Sequence[Submission], session: Session, build_only: bool) -> Tally:
    """One job per (file, kind) not yet judged (or build-checked) on that kind."""
    tally = Tally(session, build_only)
    for kind in session.kinds:
        if build_only:
            done = cluster.checked(store, kind)
            todo = [s for s in subs if s.key not in done]
            tally.skipped += [(kind, s) for s in subs if s.key in done]
        else:
            todo, skip, tally.previous[kind] = plan(store, subs, kind)
            tally.skipped += [(kind, s) for s in skip]
        tally.jobs += [Job(len(tally.jobs) + i, s, kind) for i, s in enumerate(todo)]
    return tally


@dataclass(frozen=True)
class Recorded:
    done: TaskDone
    regression: Regression | None


def judge_on_cluster(store: Store, tally: Tally, problems_root: Path, budget: float | None, arch: str | None,
                     timeout_s: float, runner: Runner | None = None) -> Generator[TaskStarted | Recorded, None, None]:
    """Run the tally's jobs, recording each result as it comes (and adding it to the tally).
    Abandoning the iterator cancels the tasks still queued or running."""
    events = cluster.run(tally.jobs, problems_root, "build" if tally.build_only else "submit", budget, arch,
                         timeout_s, runner)
    try:
        for ev in events:
            if isinstance(ev, TaskStarted):
                yield ev
                continue
            reg = None
            if ev.check is not None:
                cluster.record_check(store, ev.check, ev.submission.participant, ev.job.kind, ev.node)
            else:
                reg = record(store, ev, ev.job.kind, tally.previous[ev.job.kind])
                if reg:
                    tally.regressions.append((ev.job.kind, reg))
            tally.results.append(ev)
            yield Recorded(ev, reg)
    finally:
        events.close()


def status(e: TaskDone) -> Status:
    """The job's verdict, or its build check's outcome as one (for the exit code and the counts)."""
    if e.report is not None:
        return e.report.status
    assert e.check is not None
    return Status.ACCEPTED if e.check.ok else Status(e.check.outcome)


def where(e: TaskDone) -> str:
    if e.node is None:
        return f"{e.job.kind}, not run"
    return f"{e.job.kind}, {e.host} GPU {e.device}, {e.seconds:.1f} s"


def row(e: TaskDone) -> dict[str, Any]:
    """One judged (or build-checked) file of the `--json` summary."""
    place = {"gpu_kind": e.job.kind, "node": e.node, "host": e.host}
    if e.report is not None:
        return dict(result_row(e), **place)
    c = e.check
    assert c is not None
    return {"participant": e.submission.participant, "problem": e.submission.problem, "file": str(e.submission.path),
            "language": e.submission.language, "sha256": e.submission.sha256, "outcome": c.outcome,
            "message": c.message[:2000], "arch": c.arch,
            "kernels": [k.model_dump() for k in c.build.kernels] if c.build else [], "device": e.device,
            "seconds": round(e.seconds, 3), **place}
