"""How a leaderboard run looks on the terminal, local (cli/leaderboard_cmd.py) and on a cluster
(cli/cluster_cmd.py): the progress display, one line per finished job, the closing summary."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from judge.board.rank import score
from judge.board.render import interval, times
from judge.board.run import Result
from judge.board.submissions import Regression, Submission
from judge.contract.verdict import Status

from .common import err, out


def progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=err)


def line(ev: Result, reg: Regression | None, where: Optional[str] = None) -> str:
    """One finished job: its mark, file, verdict, speedup and where it ran."""
    report = ev.report
    assert report is not None
    st = report.status
    mark = "[green]✓[/]" if st is Status.ACCEPTED else "[yellow]![/]" if st is Status.INTERNAL_ERROR else "[red]✗[/]"
    s = score(report)
    speed = f" {times(s.point)} ({interval(s)})" if s else ""
    where = where or (f"GPU {ev.device}, {ev.seconds:.1f} s" if ev.device is not None else "not run")
    msg = "" if st is Status.ACCEPTED else ": " + escape(next(iter(report.message.splitlines()), "")[:120])
    return (f"{mark} {escape(ev.submission.label)} [dim]{escape(ev.submission.path.name)}[/] {st.value}{speed}{msg} "
            f"[dim]({where})[/]" + (" [red]regression[/]" if reg else ""))


def print_summary(results: Sequence[Result], skipped: Sequence[Submission], regressions: Sequence[Regression],
                  db: Optional[Path]) -> None:
    statuses = [e.report.status for e in results if e.report is not None]
    n_ok = statuses.count(Status.ACCEPTED)
    n_internal = statuses.count(Status.INTERNAL_ERROR)
    out.print(f"judged {len(results)}: {n_ok} ACCEPTED, {len(results) - n_ok - n_internal} not accepted, "
              f"{n_internal} judge failures (INTERNAL_ERROR); skipped {len(skipped)} unchanged; "
              f"{len(regressions)} regression(s)")
    for r in regressions:
        out.print(f"[red]regression[/] {escape(r.participant)}/{escape(r.problem)}: {times(r.after.point)} "
                  f"({interval(r.after)}) after {times(r.before.point)} ({interval(r.before)})")
    out.print("rankings: judge leaderboard show" + (f" --db {escape(str(db))}" if db else ""))
