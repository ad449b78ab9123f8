"""`judge leaderboard run --cluster ADDRESS`: the same run on a Ray cluster, shown on the terminal.

Called by cli/leaderboard_cmd.py's `run`; the run itself (connecting, the plan per GPU kind,
recording, the exit code, the rows) is judge/board/cluster_run.py's. Ray is imported only from
there on, never by the local path.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from rich.markup import escape
from rich.progress import Progress, TaskID
from rich.table import Table

from judge.board.run import FailOn
from judge.board.submissions import Regression, Submission
from judge.contract.verdict import Status
from judge.runner.job import Runner

from . import board_view
from .common import out, problems_root, store_path

if TYPE_CHECKING:
    from judge.board.cluster_run import Job, TaskDone, TaskStarted


def run_on_cluster(subs: list[Submission], address: str, kinds_text: Optional[str], build_only: bool, as_json: bool,
                   db: Optional[Path], fail_on: Optional[Sequence[FailOn]], budget: Optional[float],
                   arch: Optional[str], timeout: float, runner: Runner) -> int:
    """Judge `subs` on every chosen GPU kind of the cluster; record; print; return the exit code.
    The library's RunErrors (a bad address or kind: 2; no cluster: 3) reach the caller's `errors`."""
    from judge.board import cluster_run
    from judge.store import Store

    session = cluster_run.open_session(address, kinds_text)
    try:
        where = store_path(db)
        with Store(where) as store:
            tally = cluster_run.plan_jobs(store, subs, session, build_only)
            board = _Board(session.kinds, tally.jobs, None if as_json else board_view.progress())
            if not as_json:
                what = "build-check (no timing)" if build_only else "judge"
                out.print(f"{len(tally.jobs)} to {what} on {escape(address)} ("
                          + ", ".join(f"{sum(j.kind == k for j in tally.jobs)} on {session.declared[k]} × {escape(k)}"
                                      for k in session.kinds)
                          + f"), {len(tally.skipped)} unchanged (already done)")
            events = cluster_run.judge_on_cluster(store, tally, problems_root(), budget, arch, timeout, runner)
            with board, closing(events):
                for ev in events:
                    if isinstance(ev, cluster_run.TaskStarted):
                        board.started(ev)
                    else:
                        board.finished(ev.done, ev.regression)
        code = tally.exit_code(fail_on)
        if as_json:
            print(json.dumps({**tally.to_json(code), "store": str(where)}, indent=2))
            return code
        _kind_table(session.kinds, tally.results, tally.skipped, build_only)
        if build_only:
            out.print("build checks are not judgements: nothing was timed or ranked")
        else:
            board_view.print_summary(tally.results, [s for _, s in tally.skipped], [r for _, r in tally.regressions],
                                     db)
        return code
    finally:
        cluster_run.close()


class _Board:
    """Per GPU kind: queued, running, done (a verdict) and failed (INTERNAL_ERROR) jobs, live."""

    def __init__(self, kinds: list[str], jobs: list[Job], progress: Optional[Progress]):
        self.progress, self.kinds = progress, kinds
        self.queued: dict[str, set[int]] = {k: {j.id for j in jobs if j.kind == k} for k in kinds}
        self.running: dict[str, set[int]] = {k: set() for k in kinds}
        self.done = {k: 0 for k in kinds}
        self.failed = {k: 0 for k in kinds}
        self.bars: dict[str, TaskID] = {}

    def __enter__(self) -> _Board:
        if self.progress:
            self.progress.start()
            self.bars = {k: self.progress.add_task(self._text(k), total=len(self.queued[k])) for k in self.kinds}
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress:
            self.progress.stop()

    def _text(self, k: str) -> str:
        return (f"{escape(k)}: {len(self.queued[k])} queued, {len(self.running[k])} running, "
                f"{self.done[k]} done, {self.failed[k]} failed")

    def started(self, ev: TaskStarted) -> None:
        k = ev.job.kind
        self.queued[k].discard(ev.job.id)
        self.running[k].add(ev.job.id)
        self._update(k)

    def finished(self, ev: TaskDone, reg: Regression | None) -> None:
        from judge.board.cluster_run import where

        k = ev.job.kind
        self.queued[k].discard(ev.job.id)
        self.running[k].discard(ev.job.id)
        if ev.failed:
            self.failed[k] += 1
        else:
            self.done[k] += 1
        self._update(k, advance=1)
        if self.progress:
            self.progress.console.print(board_view.line(ev, reg, where(ev)) if ev.report is not None
                                        else _check_line(ev))

    def _update(self, k: str, advance: int = 0) -> None:
        if self.progress:
            self.progress.update(self.bars[k], description=self._text(k), advance=advance)


def _check_line(ev: TaskDone) -> str:
    from judge.board.cluster_run import where

    c = ev.check
    assert c is not None
    mark = "[green]✓[/]" if c.ok else "[yellow]![/]" if ev.failed else "[red]✗[/]"
    msg = "" if c.ok else ": " + escape(next(iter(c.message.splitlines()), "")[:120])
    regs = f" ({len(c.build.kernels)} kernel(s), {c.arch})" if c.ok and c.build else ""
    return f"{mark} {escape(ev.submission.label)} [dim]{escape(ev.submission.path.name)}[/] {c.outcome}{regs}{msg} " \
           f"[dim]({escape(where(ev))})[/]"


def _kind_table(kinds: list[str], results: list[TaskDone], skipped: list[tuple[str, Submission]],
                build_only: bool) -> None:
    from judge.board.cluster_run import status

    t = Table(title="build checks per GPU kind" if build_only else "results per GPU kind")
    cols = ["GPU kind", "run", "BUILT" if build_only else "ACCEPTED", "not accepted", "failed (INTERNAL_ERROR)",
            "skipped"]
    for c in cols:
        t.add_column(c)
    for k in kinds:
        mine = [e for e in results if e.job.kind == k]
        ok = sum(status(e) is Status.ACCEPTED for e in mine)
        failed = sum(e.failed for e in mine)
        t.add_row(escape(k), str(len(mine)), str(ok), str(len(mine) - ok - failed), str(failed),
                  str(sum(kk == k for kk, _ in skipped)))
    out.print(t)
