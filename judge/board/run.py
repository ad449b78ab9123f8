"""A leaderboard run, decided here and shown by the command line (cli/leaderboard_cmd.py locally,
cli/cluster_cmd.py on a Ray cluster, with judge/board/cluster_run.py): which files to judge (the
plan), which GPUs, recording each result and finding regressions, the run's exit code and its
machine-readable rows.

Nothing here prints or exits: a run that cannot start raises a `RunError` carrying the exit code
(`BadRequest`: 2, `Unavailable`: 3); a run that ran returns its `Tally`, whose `exit_code` the
command line exits with.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from judge.board import jobs
from judge.board import submissions as leaderboard
from judge.board.errors import BadRequest, Unavailable
from judge.board.rank import score
from judge.board.submissions import Regression, StoredResult, Submission
from judge.contract.report import Report
from judge.contract.verdict import EXIT_NOT_YOUR_CODE, Status

if TYPE_CHECKING:
    from judge.gpu.device import GpuInfo
    from judge.store import Store


class FailOn(str, Enum):
    """`--fail-on`: exit 1 when a file judged in this run is not ACCEPTED, or a result regressed."""
    wrong = "wrong"
    regression = "regression"


# -- what to judge --------------------------------------------------------------------------------

def discover(folder: Path, problems: Sequence[str]) -> list[Submission]:
    """The submissions of `folder` (SUBMISSIONS_DIR/<participant>/<problem>.cu, or `.py` for
    Triton); BadRequest when the folder cannot be used at all."""
    try:
        return leaderboard.discover(folder, problems)
    except leaderboard.LeaderboardError as e:
        raise BadRequest(str(e)) from None


def with_references(subs: list[Submission], solutions_root: Path, problems: Sequence[str]) -> list[Submission]:
    """`subs` and the repository's fastest model answer in each language of each problem they have,
    as `reference` (CUDA) and `reference-triton` (submissions.reference_name)."""
    return subs + leaderboard.references(solutions_root, {s.problem for s in subs}, problems)


class Devices(NamedTuple):
    chosen: list[int]  # NVML indices
    kind: str  # their GPU kind (one kind per run: results are ranked per kind)
    first: GpuInfo


def choose_devices(found: Sequence[GpuInfo], gpus: int | None = None, devices: str | None = None) -> Devices:
    """The local GPUs to judge on: all of `found`, the first `gpus`, or the `devices` named
    (indices separated by commas). Unavailable without a GPU; BadRequest for a bad choice."""
    by_index = {g.index: g for g in found}
    if not by_index:
        raise Unavailable("no CUDA device: judging a leaderboard needs an NVIDIA GPU (run `judge doctor`)")
    if gpus is not None and devices is not None:
        raise BadRequest("pass --gpus or --device, not both")
    if devices is not None:
        try:
            chosen = [int(d) for d in devices.split(",") if d.strip()]
        except ValueError:
            raise BadRequest(f"--device takes GPU indices separated by commas (e.g. 0,1), not {devices!r}") from None
        if not chosen or len(set(chosen)) != len(chosen):
            raise BadRequest(f"--device {devices!r}: name each GPU once")
    else:
        n = len(by_index) if gpus is None else gpus
        if n < 1:
            raise BadRequest("--gpus must be at least 1")
        chosen = sorted(by_index)[:n]
        if len(chosen) < n:
            raise BadRequest(f"--gpus {n}: only {len(by_index)} GPU(s) here")
    missing = [d for d in chosen if d not in by_index]
    if missing:
        raise BadRequest(f"no GPU with index {', '.join(map(str, missing))} "
                         f"(GPUs here: {', '.join(map(str, sorted(by_index)))})")
    kinds = sorted({by_index[d].name for d in chosen})
    if len(kinds) > 1:
        raise BadRequest(f"the chosen GPUs are of different kinds ({'; '.join(kinds)}): results are ranked per "
                         "kind, so pick GPUs of one kind with --device")
    return Devices(chosen, kinds[0], by_index[chosen[0]])


class Plan(NamedTuple):
    todo: list[Submission]  # to judge
    skipped: list[Submission]  # already judged on this GPU kind (unchanged files)
    previous: dict[tuple[str, str, str], StoredResult]  # the latest timed result per (kind, problem, participant)


def plan(store: Store, subs: Sequence[Submission], kind: str) -> Plan:
    """What to judge on GPU kind `kind`: the files not judged on it yet (INTERNAL_ERROR rows do not
    count), and what their new results are compared with."""
    history = leaderboard.rows(store, gpu_kind=kind)
    done = leaderboard.judged(history, kind)
    return Plan([s for s in subs if s.key not in done], [s for s in subs if s.key in done],
                leaderboard.latest(history, timed_only=True))


# -- judging and recording ------------------------------------------------------------------------

class Finished(Protocol):
    """A finished job of either runner (jobs.JobDone locally, cluster.TaskDone on a cluster)."""
    @property
    def submission(self) -> Submission: ...
    @property
    def report(self) -> Report | None: ...


def record(store: Store, done: Finished, kind: str,
           previous: dict[tuple[str, str, str], StoredResult]) -> Regression | None:
    """Record a finished job's report under its GPU kind; its regression, if it is one."""
    s, report = done.submission, done.report
    assert report is not None  # a build check is recorded by cluster_run.record
    store.record(report, participant=s.participant, gpu_kind=kind)
    before = previous.get((kind, s.problem, s.participant))
    return leaderboard.regression(s.participant, s.problem, kind, before.report if before else None, report)


@dataclass(frozen=True)
class Judged:
    """A finished, recorded job of a local run, and its regression if it is one."""
    done: jobs.JobDone
    regression: Regression | None


def judge_locally(store: Store, todo: Sequence[Submission], devices: Sequence[int], kind: str,
                  judge: jobs.JudgeFn | None, previous: dict[tuple[str, str, str], StoredResult]
                  ) -> Iterator[jobs.JobStarted | Judged]:
    """Judge `todo` on the local `devices`, one job per GPU, recording each result as it comes.
    `judge` may be None when no file of `todo` can reach a GPU (each has an error)."""
    for ev in jobs.run(todo, devices, judge or _never, kind):
        if isinstance(ev, jobs.JobStarted):
            yield ev
        else:
            yield Judged(ev, record(store, ev, kind, previous))


def _never(sub: Submission, dev: int) -> Report:  # every file of the run had an error: nothing reaches a GPU
    raise AssertionError("no judgeable submission")


def exit_code(statuses: Iterable[Status], regressions: Sequence[Regression], fail_on: Iterable[FailOn] | None) -> int:
    """The exit code of a run (the codes of judge/contract/verdict.py): 3 when the judge failed on some
    file, 1 for a --fail-on that applies, else 0."""
    modes = set(fail_on or [])
    statuses = list(statuses)
    if any(s is Status.INTERNAL_ERROR for s in statuses):
        return EXIT_NOT_YOUR_CODE
    if (FailOn.wrong in modes and any(s is not Status.ACCEPTED for s in statuses)) or \
            (FailOn.regression in modes and regressions):
        return 1
    return 0


@dataclass
class Tally:
    """A local run's outcome: what was judged, skipped and regressed."""
    kind: str
    devices: list[int]
    skipped: list[Submission]
    results: list[jobs.JobDone] = field(default_factory=list)
    regressions: list[Regression] = field(default_factory=list)

    def add(self, judged: Judged) -> None:
        self.results.append(judged.done)
        if judged.regression:
            self.regressions.append(judged.regression)

    def exit_code(self, fail_on: Iterable[FailOn] | None) -> int:
        return exit_code([e.report.status for e in self.results], self.regressions, fail_on)

    def to_json(self, code: int) -> dict[str, Any]:
        """The run's `--json` summary."""
        return {"gpu_kind": self.kind, "devices": self.devices, "judged": [result_row(e) for e in self.results],
                "skipped": [skipped_row(s) for s in self.skipped],
                "regressions": [regression_row(r) for r in self.regressions], "exit_code": code}


# -- rows of the machine-readable summaries (local and cluster runs) ------------------------------

class Result(Protocol):
    """A finished job with a report (jobs.JobDone, or a cluster.TaskDone of mode submit)."""
    @property
    def submission(self) -> Submission: ...
    @property
    def report(self) -> Report | None: ...
    @property
    def device(self) -> int | None: ...
    @property
    def seconds(self) -> float: ...


def result_row(e: Result) -> dict[str, Any]:
    """One judged file of a run's `--json` summary."""
    assert e.report is not None
    s = score(e.report)
    return {"participant": e.submission.participant, "problem": e.submission.problem,
            "file": str(e.submission.path), "language": e.submission.language, "sha256": e.submission.sha256,
            "status": e.report.status.value,
            "message": e.report.message[:2000], "speedup": s.point if s else None,
            "ci_low": s.low if s else None, "ci_high": s.high if s else None,
            "device": e.device, "seconds": round(e.seconds, 3)}


def skipped_row(s: Submission) -> dict[str, Any]:
    return {"participant": s.participant, "problem": s.problem, "file": str(s.path), "language": s.language,
            "sha256": s.sha256}


def regression_row(r: Regression) -> dict[str, Any]:
    return {"participant": r.participant, "problem": r.problem, "before": vars(r.before), "after": vars(r.after)}
