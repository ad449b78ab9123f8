"""`judge leaderboard run|show`: judge a submissions folder on every local GPU (or on a Ray cluster,
cli/cluster_cmd.py); rank what the store holds. The run's plan, recording, exit code and rows are
the library's (judge/board/run.py); this module parses, shows progress and exits."""
from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.progress import TaskID
from rich.table import Table

from judge import paths
from judge.board import jobs
from judge.board import run as board_run
from judge.board.run import FailOn
from judge.board.submissions import Submission
from judge.gpu.device import GpuInfo
from judge.problem import spec
from judge.runner.job import LocalRunner

from . import board_view
from .common import (
    ArchFormOpt,
    DbOpt,
    DebugOpt,
    GpusOpt,
    HostEnvOpt,
    ImageOpt,
    JsonOpt,
    MountOpt,
    RunnerOpt,
    Usage,
    alias,
    budget_opt,
    err,
    errors,
    out,
    problems_root,
    runner_choice,
    store_path,
)

app = typer.Typer(no_args_is_help=True, help="Leaderboards: judge a submissions folder, show the rankings.")

SOLUTIONS_DIR = paths.solutions_root()


class Format(str, Enum):
    table = "table"
    markdown = "markdown"
    json = "json"
    html = "html"


def local_gpus() -> list[GpuInfo]:
    """The GPUs NVML sees (tests replace this)."""
    from judge.gpu import device

    return device.gpus()


def make_judge(subs: list[Submission], problems: Path, gpu_kind: str, gpu: GpuInfo, budget: Optional[float],
               arch: Optional[str], timeout_s: float, as_json: bool) -> jobs.JudgeFn:
    """The real judging function: one job process per file (judge/runner/job.py), after one
    parallel build of every file (tests replace this with a fake)."""
    from judge.build import nvcc as build

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


@app.command("run")
def run_cmd(submissions: Path = typer.Argument(..., help="SUBMISSIONS_DIR/<participant>/<problem>.cu (or .py: "
                                                "Triton)"),
            as_json: bool = JsonOpt, debug: bool = DebugOpt, db: Optional[Path] = DbOpt,
            devices: Optional[str] = typer.Option(None, "--device", help="GPU indices to use, e.g. 0 or 0,1 "
                                                  "(default: every GPU here)."),
            devices_alias: Optional[str] = typer.Option(None, "--devices", hidden=True),  # the old name of --device
            gpus: Optional[int] = typer.Option(None, "--gpus", hidden=True, help="The first N GPUs (old; --device)."),
            references: bool = typer.Option(True, "--references/--no-references",
                                            help="Also judge the repository's fastest model answer in each "
                                            "language of each problem that has submissions, as participant "
                                            "`reference` (CUDA) and `reference-triton`."),
            fail_on: Optional[List[FailOn]] = typer.Option(None, "--fail-on", help="Exit 1 when: `wrong` (a submission "
                                                           "judged in this run is not ACCEPTED) or `regression` (a "
                                                           "result is slower than its previous one, intervals apart). "
                                                           "Repeatable."),
            budget: Optional[float] = budget_opt(None, "Most seconds (wall) of timing per shape (default: submit's)."),
            arch: Optional[str] = ArchFormOpt,
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
    from judge.build import nvcc
    from judge.store import Store

    with errors(as_json, debug):
        devices = alias(devices, devices_alias, "--device", "--devices")
        names = [p.name for p in spec.find_problems(problems_root())]
        subs = board_run.discover(submissions, names)  # the command line first: a mistyped folder is exit 2 anywhere
        # a docker runner's mount sources are paths on the node that judges: the node checks them
        choice = runner_choice(runner, image, mount, host_env, docker_gpus, check_mounts=False)
        if cluster:
            from .cluster_cmd import run_on_cluster

            if gpus is not None or devices is not None:
                raise Usage("--device picks local GPUs; with --cluster (or RAY_ADDRESS), pick GPU kinds "
                            "with --kinds")
            if references:
                subs = board_run.with_references(subs, SOLUTIONS_DIR, names)
            code = run_on_cluster(subs, cluster, kinds, build_only, as_json, db, fail_on, budget, arch, timeout,
                                  choice)
            raise typer.Exit(code)
        if kinds is not None or build_only or not isinstance(choice, LocalRunner):
            raise Usage("--kinds, --build-only and --runner docker are for --cluster runs (docs/cluster.md)")
        if arch is not None and (problem := nvcc.arch_problem(arch)):  # the local nvcc builds: it must know it
            raise Usage(f"--arch {problem}")
        chosen, kind, gpu = board_run.choose_devices(local_gpus(), gpus, devices)
        if references:
            subs = board_run.with_references(subs, SOLUTIONS_DIR, names)
        where = store_path(db)
        with Store(where) as store:
            todo, skipped, previous = board_run.plan(store, subs, kind)
            judgeable = [s for s in todo if not s.error]
            judge = make_judge(judgeable, problems_root(), kind, gpu, budget, arch, timeout, as_json) \
                if judgeable else None
            tally = board_run.Tally(kind, chosen, skipped)
            progress = None if as_json else board_view.progress()
            lanes: dict[int, TaskID] = {}
            if not as_json:
                out.print(f"{len(todo)} to judge on {len(chosen)} × {escape(kind)}, {len(skipped)} unchanged "
                          "(already judged)")
            try:
                if progress:
                    progress.start()
                    total = progress.add_task("judged", total=len(todo))
                    lanes = {d: progress.add_task(f"GPU {d}: idle", total=None) for d in chosen}
                for ev in board_run.judge_locally(store, todo, chosen, kind, judge, previous):
                    if isinstance(ev, jobs.JobStarted):
                        if progress:
                            progress.update(lanes[ev.device],
                                            description=f"GPU {ev.device}: {escape(ev.submission.label)}")
                        continue
                    tally.add(ev)
                    if progress:
                        progress.advance(total)
                        if ev.done.device is not None:
                            progress.update(lanes[ev.done.device], description=f"GPU {ev.done.device}: idle")
                        progress.console.print(board_view.line(ev.done, ev.regression))
            finally:
                if progress:
                    for lane in lanes.values():
                        progress.remove_task(lane)
                    progress.stop()
        code = tally.exit_code(fail_on)
        if as_json:
            print(json.dumps({**tally.to_json(code), "store": str(where)}, indent=2))
        else:
            board_view.print_summary(tally.results, tally.skipped, tally.regressions, db)
    raise typer.Exit(code)


@app.command("show")
def show_cmd(problem: Optional[str] = typer.Option(None, "--problem", help="Only this problem."),
             fmt: Format = typer.Option(Format.table, "--format", help="table, markdown, json or html."),
             output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write to this file."),
             gpu_kind: Optional[str] = typer.Option(None, "--gpu-kind", help="Only results on this GPU kind: "
                                                    "its name or a part of it, any case (H100)."),
             as_json: bool = JsonOpt, db: Optional[Path] = DbOpt, debug: bool = DebugOpt) -> None:
    """Rank each participant's latest result per problem (and overall), per GPU kind."""
    from judge.board import html as board_html
    from judge.board import rank as board_rank
    from judge.board import render as board_render
    from judge.board import submissions as leaderboard
    from judge.store import Store

    fmt = Format.json if as_json else fmt
    with errors(as_json, debug):
        path = store_path(db)
        if not path.exists():
            raise Usage(f"no results store at {path}: run `judge leaderboard run SUBMISSIONS_DIR` first (or pass --db)")
        with Store(path) as store:
            if gpu_kind is not None:
                try:
                    gpu_kind = leaderboard.match_kind(leaderboard.gpu_kinds(store), gpu_kind)
                except leaderboard.KindError as e:
                    raise Usage(str(e)) from None
            latest = leaderboard.latest(leaderboard.rows(store, problem, gpu_kind)).values()
        boards = board_rank.boards(latest)
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
    from judge.board.render import OVERALL_RULE, baseline_name, first_line, interval, language_text, times

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
            for col in ("rank", "participant", "language", f"speedup over {baseline_name(pb)}", "95% interval", "file",
                        "status"):
                t.add_column(col)
            for r in pb.ranking:
                t.add_row(r.rank_text, escape(r.participant), language_text(r.report), times(r.score.point),
                          interval(r.score), escape(Path(r.report.solution).name), "ACCEPTED")
            for u in pb.unranked:
                t.add_row("–", escape(u.participant), language_text(u.report), "", "",
                          escape(Path(u.report.solution).name),
                          f"{u.report.status.value}: {escape(first_line(u.report.message, 80))}")
            out.print(t)
