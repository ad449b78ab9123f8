"""`judge leaderboard run --cluster ADDRESS`: the same run on a Ray cluster (judge/board/cluster.py).

Called by `leaderboard_cmd.run_cmd`; shares its planning, recording, regression and summary code.
Ray is imported only from here on (judge.board.cluster), never by the local path.
"""
from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Optional

from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from judge.contract.verdict import Status

from .app import Usage, out, problems_root
from .leaderboard_cmd import (_line, _no_gpu, _progress, exit_code, plan, print_summary, record, regression_row,
                              result_row, skipped_row)


def run_on_cluster(subs, address: str, kinds_text: Optional[str], build_only: bool, as_json: bool,
                   db: Optional[Path], fail_on, budget: Optional[float], arch: Optional[str], timeout: float,
                   runner_args: list[str]) -> int:
    """Judge `subs` on every chosen GPU kind of the cluster; record; print; return the exit code."""
    from judge.board import cluster
    from judge.store import Store

    try:
        cluster.parse_address(address)
    except ValueError as e:
        raise Usage(str(e)) from None
    requested = [k.strip() for k in kinds_text.split(",") if k.strip()] if kinds_text is not None else None
    if requested == []:
        raise Usage("--kinds: name at least one GPU kind, e.g. --kinds H100,A100")
    try:
        cluster.connect(address)
        try:
            declared = cluster.declared_kinds()
            kinds = cluster.choose_kinds(declared, requested)
        except ValueError as e:
            raise Usage(str(e)) from None
    except cluster.ClusterError as e:
        cluster.disconnect()
        _no_gpu(as_json, str(e))  # exit 3: the infrastructure, not the submissions nor the command line
    try:
        with Store(db) as store:
            return _run(cluster, store, subs, address, declared, kinds, build_only, as_json, db, fail_on,
                        budget, arch, timeout, runner_args)
    finally:
        cluster.disconnect()


def _run(cluster, store, subs, address, declared, kinds, build_only, as_json, db, fail_on, budget, arch, timeout,
         runner_args) -> int:
    jobs, skipped, previous = [], [], {}
    for kind in kinds:
        if build_only:
            done = cluster.checked(store, kind)
            todo = [s for s in subs if s.key not in done]
            skipped += [(kind, s) for s in subs if s.key in done]
        else:
            todo, skip, previous[kind] = plan(store, subs, kind)
            skipped += [(kind, s) for s in skip]
        jobs += [cluster.Job(len(jobs) + i, s, kind) for i, s in enumerate(todo)]
    board = _Board(kinds, jobs, None if as_json else _progress())
    if not as_json:
        what = "build-check (no timing)" if build_only else "judge"
        out.print(f"{len(jobs)} to {what} on {escape(address)} ("
                  + ", ".join(f"{sum(j.kind == k for j in jobs)} on {declared[k]} × {escape(k)}" for k in kinds)
                  + f"), {len(skipped)} unchanged (already done)")
    results, regressions = [], []
    events = cluster.run(jobs, problems_root(), "build" if build_only else "submit", budget, arch, timeout, runner_args)
    with board, closing(events):
        for ev in events:
            if isinstance(ev, cluster.Started):
                board.started(ev)
                continue
            reg = None
            if build_only:
                cluster.record_check(store, ev.check, ev.submission.participant, ev.job.kind, ev.node)
            else:
                reg = record(store, ev, ev.job.kind, previous[ev.job.kind])
                if reg:
                    regressions.append((ev.job.kind, reg))
            results.append(ev)
            board.finished(ev, reg)
    statuses = [_status(e) for e in results]
    code = exit_code(statuses, [r for _, r in regressions], fail_on)
    if as_json:
        print(json.dumps({
            "cluster": address, "mode": "build" if build_only else "submit",
            "kinds": {k: declared[k] for k in kinds},
            "judged": [_row(e) for e in results],
            "skipped": [dict(skipped_row(s), gpu_kind=k) for k, s in skipped],
            "regressions": [dict(regression_row(r), gpu_kind=k) for k, r in regressions],
            "exit_code": code}, indent=2))
        return code
    _kind_table(kinds, results, skipped, build_only)
    if build_only:
        out.print("build checks are not judgements: nothing was timed or ranked")
    else:
        print_summary(results, [s for _, s in skipped], [r for _, r in regressions], db)
    return code


def _status(e) -> Status:
    if e.report is not None:
        return e.report.status
    return Status.ACCEPTED if e.check.ok else Status(e.check.outcome)  # for the exit code only


def _row(e) -> dict:
    where = {"gpu_kind": e.job.kind, "node": e.node, "host": e.host}
    if e.report is not None:
        return dict(result_row(e), **where)
    c = e.check
    return {"participant": e.submission.participant, "problem": e.submission.problem, "file": str(e.submission.path),
            "sha256": e.submission.sha256, "outcome": c.outcome, "message": c.message[:2000], "arch": c.arch,
            "kernels": [k.model_dump() for k in c.build.kernels] if c.build else [], "device": e.device,
            "seconds": round(e.seconds, 3), **where}


def _where(e) -> str:
    if e.node is None:
        return f"{e.job.kind}, not run"
    return f"{e.job.kind}, {e.host} GPU {e.device}, {e.seconds:.1f} s"


class _Board:
    """Per GPU kind: queued, running, done (a verdict) and failed (INTERNAL_ERROR) jobs, live."""

    def __init__(self, kinds, jobs, progress: Optional[Progress]):
        self.progress, self.kinds = progress, kinds
        self.queued = {k: {j.id for j in jobs if j.kind == k} for k in kinds}
        self.running = {k: set() for k in kinds}
        self.done = {k: 0 for k in kinds}
        self.failed = {k: 0 for k in kinds}
        self.bars = {}

    def __enter__(self):
        if self.progress:
            self.progress.start()
            self.bars = {k: self.progress.add_task(self._text(k), total=len(self.queued[k])) for k in self.kinds}
        return self

    def __exit__(self, *exc):
        if self.progress:
            self.progress.stop()

    def _text(self, k) -> str:
        return (f"{escape(k)}: {len(self.queued[k])} queued, {len(self.running[k])} running, "
                f"{self.done[k]} done, {self.failed[k]} failed")

    def started(self, ev) -> None:
        k = ev.job.kind
        self.queued[k].discard(ev.job.id)
        self.running[k].add(ev.job.id)
        self._update(k)

    def finished(self, ev, reg) -> None:
        k = ev.job.kind
        self.queued[k].discard(ev.job.id)
        self.running[k].discard(ev.job.id)
        if ev.failed:
            self.failed[k] += 1
        else:
            self.done[k] += 1
        self._update(k, advance=1)
        if self.progress:
            self.progress.console.print(_line(ev, reg, _where(ev)) if ev.report is not None else _check_line(ev))

    def _update(self, k, advance: int = 0) -> None:
        if self.progress:
            self.progress.update(self.bars[k], description=self._text(k), advance=advance)


def _check_line(ev) -> str:
    c = ev.check
    mark = "[green]✓[/]" if c.ok else "[yellow]![/]" if ev.failed else "[red]✗[/]"
    msg = "" if c.ok else ": " + escape(next(iter(c.message.splitlines()), "")[:120])
    regs = f" ({len(c.build.kernels)} kernel(s), {c.arch})" if c.ok and c.build else ""
    return f"{mark} {escape(ev.submission.label)} [dim]{escape(ev.submission.path.name)}[/] {c.outcome}{regs}{msg} " \
           f"[dim]({escape(_where(ev))})[/]"


def _kind_table(kinds, results, skipped, build_only: bool) -> None:
    t = Table(title="build checks per GPU kind" if build_only else "results per GPU kind")
    cols = ["GPU kind", "run", "BUILT" if build_only else "ACCEPTED", "not accepted", "failed (INTERNAL_ERROR)",
            "skipped"]
    for c in cols:
        t.add_column(c)
    for k in kinds:
        mine = [e for e in results if e.job.kind == k]
        ok = sum(_status(e) is Status.ACCEPTED for e in mine)
        failed = sum(e.failed for e in mine)
        t.add_row(escape(k), str(len(mine)), str(ok), str(len(mine) - ok - failed), str(failed),
                  str(sum(kk == k for kk, _ in skipped)))
    out.print(t)
