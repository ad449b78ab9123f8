"""`judge leaderboard run|show`: judge a submissions folder on every local GPU; rank what the store holds."""
from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from judge import paths
from judge.problem import spec
from judge.contract.verdict import EXIT_NOT_YOUR_CODE, Status

from .app import (DbOpt, DebugOpt, GpusOpt, HostEnvOpt, ImageOpt, JsonOpt, MountOpt, RunnerOpt, Usage, _runner, app,
                  err, errors, out, problems_root)

board = typer.Typer(no_args_is_help=True, help="Leaderboards: judge a submissions folder, show the rankings.")
app.add_typer(board, name="leaderboard")

SOLUTIONS_DIR = paths.solutions_root()


class FailOn(str, Enum):
    wrong = "wrong"
    regression = "regression"


class Format(str, Enum):
    table = "table"
    markdown = "markdown"
    json = "json"
    html = "html"


def local_gpus():
    """The GPUs NVML sees (tests replace this)."""
    from judge.gpu import device

    return device.gpus()


def make_judge(subs, problems: Path, gpu_kind: str, gpu, budget: Optional[float], arch: Optional[str],
               timeout_s: float, as_json: bool):
    """The real judging function: one `judge submit` process per job, after one parallel build of
    every file (tests replace this with a fake)."""
    from judge.build import nvcc as build
    from judge.board import jobs

    status = None if as_json else err.status(f"building {len(subs)} files", spinner="dots")
    if status:
        status.start()
    try:
        jobs.prebuild(subs, problems, arch or build.arch_for(gpu.major, gpu.minor))
    except Exception as e:  # noqa: BLE001 — each job builds (and reports) on its own anyway
        if not as_json:
            err.print(f"[yellow]warning:[/] the parallel build failed ({escape(str(e))}); each job builds its own")
    finally:
        if status:
            status.stop()
    return jobs.SubprocessJudge(problems, gpu_kind, budget, arch, timeout_s)


def _devices(gpus: Optional[int], devices: Optional[str]):
    found = {g.index: g for g in local_gpus()}
    if not found:
        raise _NoGpu("no CUDA device: judging a leaderboard needs an NVIDIA GPU (run `judge doctor`)")
    if gpus is not None and devices is not None:
        raise Usage("pass --gpus or --devices, not both")
    if devices is not None:
        try:
            chosen = [int(d) for d in devices.split(",") if d.strip()]
        except ValueError:
            raise Usage(f"--devices takes GPU indices separated by commas (e.g. 0,1), not {devices!r}") from None
        if not chosen or len(set(chosen)) != len(chosen):
            raise Usage(f"--devices {devices!r}: name each GPU once")
    else:
        n = len(found) if gpus is None else gpus
        if n < 1:
            raise Usage("--gpus must be at least 1")
        chosen = sorted(found)[:n]
        if len(chosen) < n:
            raise Usage(f"--gpus {n}: only {len(found)} GPU(s) here")
    missing = [d for d in chosen if d not in found]
    if missing:
        raise Usage(f"no GPU with index {', '.join(map(str, missing))} (GPUs here: {', '.join(map(str, sorted(found)))})")
    kinds = sorted({found[d].name for d in chosen})
    if len(kinds) > 1:
        raise Usage(f"the chosen GPUs are of different kinds ({'; '.join(kinds)}): results are ranked per kind, "
                    "so pick GPUs of one kind with --devices")
    return chosen, kinds[0], found[chosen[0]]


class _NoGpu(Exception):
    pass


@board.command("run")
def run_cmd(submissions: Path = typer.Argument(..., help="SUBMISSIONS_DIR/<participant>/<problem>.cu"),
            as_json: bool = JsonOpt, debug: bool = DebugOpt, db: Optional[Path] = DbOpt,
            gpus: Optional[int] = typer.Option(None, "--gpus", help="Use the first N GPUs (default: all)."),
            devices: Optional[str] = typer.Option(None, "--devices", help="GPU indices to use, e.g. 0,1."),
            references: bool = typer.Option(True, "--references/--no-references",
                                            help="Also judge the repository's fastest model answer of each "
                                            "problem that has submissions, as participant `reference`."),
            fail_on: Optional[List[FailOn]] = typer.Option(None, "--fail-on", help="Exit 1 when: `wrong` (a submission "
                                                           "judged in this run is not ACCEPTED) or `regression` (a "
                                                           "result is slower than its previous one, intervals apart). "
                                                           "Repeatable."),
            budget: Optional[float] = typer.Option(None, help="Seconds of GPU time per shape (default: submit's)."),
            arch: Optional[str] = typer.Option(None, help="Build for this arch (default: the GPU's)."),
            timeout: float = typer.Option(1800.0, help="Seconds one submission may take in all before it is TIMEOUT."),
            cluster: Optional[str] = typer.Option(None, "--cluster", envvar="RAY_ADDRESS", show_envvar=True,
                                                  help="Judge on a Ray cluster instead of the local GPUs: "
                                                  "ray://HOST:PORT or HOST:PORT (docs/cluster.md)."),
            kinds: Optional[str] = typer.Option(None, "--kinds", help="With --cluster: GPU kinds to judge on, "
                                                "e.g. H100,A100 (default: every kind the cluster declares)."),
            build_only: bool = typer.Option(False, "--build-only", help="With --cluster: compile and policy-check "
                                            "every submission on the cluster's nodes, no timing (never ranked)."),
            runner: str = RunnerOpt, image: Optional[str] = ImageOpt, mount: List[str] = MountOpt,
            host_env: bool = HostEnvOpt, docker_gpus: str = GpusOpt,
            ) -> None:
    """Judge every submission not yet judged on this GPU kind, one job per GPU, and record the results."""
    from judge.board import jobs
    from judge.board import submissions as leaderboard
    from judge.store import Store

    code = 0
    with errors(as_json, debug):
        names = [p.name for p in spec.find_problems(problems_root())]
        try:  # the command line first: a mistyped folder is exit 2 on any machine
            subs = leaderboard.discover(submissions, names)
        except leaderboard.LeaderboardError as e:
            raise Usage(str(e)) from None
        runner_args = _runner_args(runner, image, mount, host_env, docker_gpus)
        if cluster:
            from .cluster_cmd import run_on_cluster

            if gpus is not None or devices is not None:
                raise Usage("--gpus and --devices pick local GPUs; with --cluster (or RAY_ADDRESS), pick GPU kinds "
                            "with --kinds")
            if references:
                subs += leaderboard.references(SOLUTIONS_DIR, {s.problem for s in subs}, names)
            code = run_on_cluster(subs, cluster, kinds, build_only, as_json, db, fail_on, budget, arch, timeout,
                                  runner_args)
            raise typer.Exit(code)
        if kinds is not None or build_only or runner_args:
            raise Usage("--kinds, --build-only and --runner docker are for --cluster runs (docs/cluster.md)")
        try:
            chosen, kind, gpu = _devices(gpus, devices)
        except _NoGpu as e:
            _no_gpu(as_json, str(e))
        if references:
            subs += leaderboard.references(SOLUTIONS_DIR, {s.problem for s in subs}, names)
        with Store(db) as store:
            todo, skipped, previous = plan(store, subs, kind)
            judge = make_judge([s for s in todo if not s.error], problems_root(), kind, gpu, budget, arch,
                               timeout, as_json) if any(not s.error for s in todo) else None
            results, regressions = [], []
            progress = None if as_json else _progress()
            lanes: dict = {}
            if not as_json:
                out.print(f"{len(todo)} to judge on {len(chosen)} × {escape(kind)}, {len(skipped)} unchanged "
                          "(already judged)")
            try:
                if progress:
                    progress.start()
                    total = progress.add_task("judged", total=len(todo))
                    lanes = {d: progress.add_task(f"GPU {d}: idle", total=None) for d in chosen}
                for ev in jobs.run(todo, chosen, judge or _never, kind):
                    if isinstance(ev, jobs.Started):
                        if progress:
                            progress.update(lanes[ev.device], description=f"GPU {ev.device}: {escape(ev.submission.label)}")
                        continue
                    reg = record(store, ev, kind, previous)
                    if reg:
                        regressions.append(reg)
                    results.append(ev)
                    if progress:
                        progress.advance(total)
                        if ev.device is not None:
                            progress.update(lanes[ev.device], description=f"GPU {ev.device}: idle")
                        progress.console.print(_line(ev, reg))
            finally:
                if progress:
                    for lane in lanes.values():
                        progress.remove_task(lane)
                    progress.stop()
        code = exit_code([e.report.status for e in results], regressions, fail_on)
        if as_json:
            print(json.dumps(_summary(kind, chosen, results, skipped, regressions, code), indent=2))
        else:
            print_summary(results, skipped, regressions, db)
    raise typer.Exit(code)


def _runner_args(runner: str, image: Optional[str], mounts: List[str], host_env: bool, gpus: str) -> list[str]:
    """`judge submit`'s runner options, checked here (exit 2), passed on to each job's process. Mount
    sources are paths on the node that judges, so the node's `judge submit` checks those."""
    if _runner(runner, image, [], host_env, gpus) is None:
        return []
    args = ["--runner", runner, "--docker-gpus", gpus] + (["--image", image] if image else [])
    for m in mounts:
        args += ["--docker-mount", m]
    return args + (["--docker-host-env"] if host_env else [])


# -- shared by the local and the cluster runs (cli/cluster_cmd.py) -------------------------------

def plan(store, subs, kind: str):
    """(to judge, skipped as already judged on this kind, the latest timed results per key)."""
    from judge.board import submissions as leaderboard

    history = leaderboard.rows(store, gpu_kind=kind)
    done = leaderboard.judged(history, kind)
    return ([s for s in subs if s.key not in done], [s for s in subs if s.key in done],
            leaderboard.latest(history, timed_only=True))


def record(store, ev, kind: str, previous):
    """Record a finished job's report under its GPU kind; its regression, if it is one."""
    from judge.board import submissions as leaderboard

    s = ev.submission
    store.record(ev.report, participant=s.participant, gpu_kind=kind)
    return leaderboard.regression(s.participant, s.problem, kind,
                                  _report(previous.get((kind, s.problem, s.participant))), ev.report)


def exit_code(statuses, regressions, fail_on) -> int:
    """DESIGN §4 for a run: 3 when the judge failed on some file, 1 for a --fail-on that applies."""
    modes = set(fail_on or [])
    if any(s is Status.INTERNAL_ERROR for s in statuses):
        return EXIT_NOT_YOUR_CODE
    if (FailOn.wrong in modes and any(s is not Status.ACCEPTED for s in statuses)) or \
            (FailOn.regression in modes and regressions):
        return 1
    return 0


def print_summary(results, skipped, regressions, db) -> None:
    from judge.board.render import interval, times

    statuses = [e.report.status for e in results]
    n_ok = statuses.count(Status.ACCEPTED)
    n_internal = statuses.count(Status.INTERNAL_ERROR)
    out.print(f"judged {len(results)}: {n_ok} ACCEPTED, {len(results) - n_ok - n_internal} not accepted, "
              f"{n_internal} judge failures (INTERNAL_ERROR); skipped {len(skipped)} unchanged; "
              f"{len(regressions)} regression(s)")
    for r in regressions:
        out.print(f"[red]regression[/] {escape(r.participant)}/{escape(r.problem)}: {times(r.after.point)} "
                  f"({interval(r.after)}) after {times(r.before.point)} ({interval(r.before)})")
    out.print("rankings: judge leaderboard show" + (f" --db {escape(str(db))}" if db else ""))


def _never(sub, dev):  # every submission of the run had an error: nothing reaches a GPU
    raise AssertionError("no judgeable submission")


def _no_gpu(as_json: bool, message: str) -> None:
    if as_json:
        print(json.dumps({"error": message, "details": [], "exit_code": EXIT_NOT_YOUR_CODE}))
    else:
        err.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(EXIT_NOT_YOUR_CODE)


def _report(row):
    return row.report if row is not None else None


def _progress() -> Progress:
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=err)


def _line(ev, reg, where: Optional[str] = None) -> str:
    from judge.board.rank import score
    from judge.board.render import interval, times

    st = ev.report.status
    mark = "[green]✓[/]" if st is Status.ACCEPTED else "[yellow]![/]" if st is Status.INTERNAL_ERROR else "[red]✗[/]"
    s = score(ev.report)
    speed = f" {times(s.point)} ({interval(s)})" if s else ""
    where = where or (f"GPU {ev.device}, {ev.seconds:.1f} s" if ev.device is not None else "not run")
    msg = "" if st is Status.ACCEPTED else ": " + escape(next(iter(ev.report.message.splitlines()), "")[:120])
    return (f"{mark} {escape(ev.submission.label)} [dim]{escape(ev.submission.path.name)}[/] {st.value}{speed}{msg} "
            f"[dim]({where})[/]" + (" [red]regression[/]" if reg else ""))


def result_row(e) -> dict:
    """One judged file of a run's `--json` summary (local and cluster runs)."""
    from judge.board.rank import score

    s = score(e.report)
    return {"participant": e.submission.participant, "problem": e.submission.problem,
            "file": str(e.submission.path), "sha256": e.submission.sha256, "status": e.report.status.value,
            "message": e.report.message[:2000], "speedup": s.point if s else None,
            "ci_low": s.low if s else None, "ci_high": s.high if s else None,
            "device": e.device, "seconds": round(e.seconds, 3)}


def skipped_row(s) -> dict:
    return {"participant": s.participant, "problem": s.problem, "file": str(s.path), "sha256": s.sha256}


def regression_row(r) -> dict:
    return {"participant": r.participant, "problem": r.problem, "before": vars(r.before), "after": vars(r.after)}


def _summary(kind, chosen, results, skipped, regressions, code) -> dict:
    return {"gpu_kind": kind, "devices": chosen, "judged": [result_row(e) for e in results],
            "skipped": [skipped_row(s) for s in skipped],
            "regressions": [regression_row(r) for r in regressions], "exit_code": code}


@board.command("show")
def show_cmd(problem: Optional[str] = typer.Option(None, "--problem", help="Only this problem."),
             fmt: Format = typer.Option(Format.table, "--format", help="table, markdown, json or html."),
             output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write to this file."),
             gpu_kind: Optional[str] = typer.Option(None, "--gpu-kind", help="Only results on this GPU kind."),
             as_json: bool = JsonOpt, db: Optional[Path] = DbOpt) -> None:
    """Rank each participant's latest result per problem (and overall), per GPU kind."""
    from judge.board import html as board_html
    from judge.board import rank as board_rank
    from judge.board import render as board_render
    from judge.board import submissions as leaderboard
    from judge.store import Store, default_path

    fmt = Format.json if as_json else fmt
    with errors(as_json, False):
        path = db or default_path()
        if not path.exists():
            raise Usage(f"no results store at {path}: run `judge leaderboard run SUBMISSIONS_DIR` first (or pass --db)")
        with Store(path) as store:
            latest = leaderboard.latest(leaderboard.rows(store, problem, gpu_kind)).values()
        boards = board_rank.build(latest)
        if fmt is Format.table and output is None:
            _tables(boards)
            return
        if fmt is Format.markdown or fmt is Format.table:
            text = board_render.markdown(boards)
        elif fmt is Format.json:
            text = json.dumps(board_render.to_json(boards), indent=2) + "\n"
        else:
            from datetime import datetime, timezone
            text = board_html.html(boards, generated=datetime.now(timezone.utc).isoformat(timespec="seconds"))
        if output is None:
            print(text, end="")
            return
        try:
            output.write_text(text)
        except OSError as e:
            raise Usage(f"cannot write {output}: {e.strerror or e}") from None
        if not as_json:
            err.print(f"wrote {escape(str(output))}")


def _tables(boards) -> None:
    from judge.board.render import OVERALL_RULE, baseline_name, first_line, interval, times

    if not boards:
        out.print("No leaderboard results yet (run `judge leaderboard run SUBMISSIONS_DIR`).")
    for kb in boards:
        t = Table(title=f"overall · {kb.gpu_kind}", caption=OVERALL_RULE)
        for col in ("rank", "participant", "solved", "geomean speedup", "95% interval"):
            t.add_column(col)
        for e in kb.overall:
            t.add_row(e.rank_text, escape(e.participant), f"{e.solved}/{e.attempted}", times(e.score.point),
                      interval(e.score))
        out.print(t)
        for pb in kb.problems:
            t = Table(title=f"{pb.problem} · {kb.gpu_kind}")
            for col in ("rank", "participant", f"speedup over {baseline_name(pb)}", "95% interval", "file", "status"):
                t.add_column(col)
            for r in pb.ranking:
                t.add_row(r.rank_text, escape(r.participant), times(r.score.point), interval(r.score),
                          escape(Path(r.report.solution).name), "ACCEPTED")
            for u in pb.unranked:
                t.add_row("–", escape(u.participant), "", "", escape(Path(u.report.solution).name),
                          f"{u.report.status.value}: {escape(first_line(u.report.message, 80))}")
            out.print(t)
