"""`judge`: the command line over the library. Thin: parse, call, render, exit with the design's codes."""
from __future__ import annotations

import json
import os
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional

import typer
from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.table import Table

from judge import paths
from judge.problem import abi
from judge.gpu import device
from judge.problem import spec
from judge.contract.verdict import EXIT_NOT_YOUR_CODE, EXIT_USAGE, Status

from . import render

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  help="kernel-judge: judge CUDA kernels against PyTorch references and vendor libraries.")
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 120)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=None if sys.stderr.isatty() else 120)

JsonOpt = typer.Option(False, "--json", help="Machine-readable output on stdout.")
DebugOpt = typer.Option(False, "--debug", help="Show tracebacks of internal errors.")
DbOpt = typer.Option(None, "--db", help="Results store (default: $JUDGE_DB or .judge/judge.db).")


class Usage(Exception):
    """A bad command line or a bad problem: exit 2."""


def problems_root() -> Path:
    return paths.problems_root()


def resolve(problem: str) -> spec.Problem:
    """A problem folder path, or the name of one under the problems root."""
    path = Path(problem)
    if not path.exists() and (problems_root() / problem).exists():
        path = problems_root() / problem
    if not path.exists():
        known = ", ".join(p.name for p in spec.find_problems(problems_root()))
        raise Usage(f"no problem {problem!r} (not a folder; known problems: {known or 'none'})")
    return spec.load_problem(path)


@contextmanager
def errors(as_json: bool, debug: bool) -> Iterator[None]:
    """Turn every failure into one clear message and the design's exit code; never a traceback."""
    try:
        yield
    except spec.ProblemError as e:
        _fail(as_json, EXIT_USAGE, f"invalid problem {e.file}", [f"{loc}: {msg}" for loc, msg in e.errors])
    except (Usage, device.NotVisible) as e:
        _fail(as_json, EXIT_USAGE, str(e))
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        _fail(as_json, 130, "interrupted")
    except Exception as e:  # noqa: BLE001 — the judge's own fault: INTERNAL_ERROR, exit 3
        if debug:
            traceback.print_exc()
        _fail(as_json, EXIT_NOT_YOUR_CODE, f"INTERNAL_ERROR (not your code): {type(e).__name__}: {e}"
              + ("" if debug else " (run with --debug for the traceback)"))


def _fail(as_json: bool, code: int, message: str, details: list[str] | None = None) -> None:
    if as_json:
        print(json.dumps({"error": message, "details": details or [], "exit_code": code}))
    else:
        err.print(f"[red]error:[/] {escape(message)}")
        for d in details or []:
            err.print(f"  {escape(d)}")
    raise typer.Exit(code)


def _solution(path: Path) -> Path:
    if not path.is_file():
        raise Usage(f"no such file: {path}")
    if path.suffix != ".cu":
        raise Usage(f"{path} is not a .cu file")
    return path


RunnerOpt = typer.Option("local", "--runner", help="local, or docker: judge inside a container (docker/README.md).")
ImageOpt = typer.Option(None, "--image", help="The docker runner's image (default: $JUDGE_DOCKER_IMAGE or kernel-judge:latest).")
MountOpt = typer.Option([], "--docker-mount", help="SRC:DST, bound read-only into the container (repeatable).")
HostEnvOpt = typer.Option(False, "--docker-host-env", help="Bind this machine's /usr and Python read-only (images of docker/host-image.sh).")
GpusOpt = typer.Option("auto", "--docker-gpus", help="auto, toolkit (--gpus), devices (device nodes + driver mount) or none.")


def _runner(runner: str, image: Optional[str], mounts: List[str], host_env: bool, gpus: str):
    """The docker runner's options, None for the local runner; Usage on a bad command line."""
    if runner == "local":
        return None
    if runner != "docker":
        raise Usage(f"--runner {runner!r}: expected local or docker")
    from judge.runner.docker import GPU_STYLES, DockerOptions, MountError, parse_mount

    if gpus not in GPU_STYLES:
        raise Usage(f"--docker-gpus {gpus!r}: expected one of {', '.join(GPU_STYLES)}")
    try:
        for m in mounts:
            parse_mount(m)
    except MountError as e:
        raise Usage(str(e)) from None
    return DockerOptions(**({"image": image} if image else {}), mounts=list(mounts), host_env=host_env, gpus=gpus)


def _judge(problem: str, solution: Path, mode: str, as_json: bool, debug: bool, device: int,
           arch: Optional[str], budget: float, db: Optional[Path], record: bool, runner=None) -> None:
    from judge.engine.stats import Policy
    from judge.engine.run import Options, evaluate

    with errors(as_json, debug):
        p = resolve(problem)
        src = _solution(solution)
        opts = Options(mode=mode, device=device, arch=arch, policy=Policy(budget_s=budget),
                       baseline_policy=Policy(budget_s=budget).for_baseline())
        if not as_json:
            out.print(f"[bold]{escape(p.spec.title)}[/] ({p.name}, {p.spec.level}) · {escape(str(src))}"
                      + (f" · docker {escape(runner.image)}" if runner else ""))
        if runner:  # the whole pipeline inside a container (judge/runner/docker.py)
            from judge.runner.docker import evaluate_in_docker

            events = evaluate_in_docker(p, src, mode, device, arch, budget, runner)
        else:
            events = evaluate(p, src, opts)
        report = render.run(events, err if as_json else out, quiet=as_json)
        if as_json:
            print(report.model_dump_json(indent=2))
        else:
            render.report(out, report)
        if record and report.status is not Status.INTERNAL_ERROR:  # the judge's fault is no attempt
            _record(report, db)
    raise typer.Exit(report.exit_code)


def _record(report, db: Optional[Path]) -> None:
    """Append the report to the results store. A store that cannot be written costs a warning,
    never the verdict (the report is already on stdout)."""
    from judge.practice.drill import attempt_drill
    from judge.store import Store, StoreError

    try:
        with Store(db) as store:  # an attempt on a problem of the active drill belongs to it
            store.record(report, drill_id=attempt_drill(store, report.problem))
    except StoreError as e:
        err.print(f"[yellow]warning:[/] the result was not recorded: {escape(str(e))}")


@app.command()
def submit(problem: str = typer.Argument(..., help="Problem folder or name, e.g. problems/hgemm"),
           solution: Path = typer.Argument(..., help="Your .cu file"),
           as_json: bool = JsonOpt, debug: bool = DebugOpt,
           device: int = typer.Option(0, help="GPU index."),
           arch: Optional[str] = typer.Option(None, help="Build for this arch (default: the GPU's)."),
           budget: float = typer.Option(2.0, help="Seconds of GPU time per shape for your kernel."),
           db: Optional[Path] = DbOpt,
           record: bool = typer.Option(True, "--record/--no-record", help="Keep the result in the store."),
           runner: str = RunnerOpt, image: Optional[str] = ImageOpt, mount: List[str] = MountOpt,
           host_env: bool = HostEnvOpt, gpus: str = GpusOpt) -> None:
    """Build, check on every test workload, time against the baseline, and give a verdict."""
    with errors(as_json, debug):
        docker = _runner(runner, image, mount, host_env, gpus)
    _judge(problem, solution, "submit", as_json, debug, device, arch, budget, db, record, docker)


@app.command()
def test(problem: str = typer.Argument(..., help="Problem folder or name"),
         solution: Path = typer.Argument(..., help="Your .cu file"),
         as_json: bool = JsonOpt, debug: bool = DebugOpt,
         device: int = typer.Option(0, help="GPU index."),
         arch: Optional[str] = typer.Option(None, help="Build for this arch (default: the GPU's)."),
         db: Optional[Path] = DbOpt,
         record: bool = typer.Option(True, "--record/--no-record", help="Keep the result in the store."),
         runner: str = RunnerOpt, image: Optional[str] = ImageOpt, mount: List[str] = MountOpt,
         host_env: bool = HostEnvOpt, gpus: str = GpusOpt) -> None:
    """Correctness only: build and check every test workload (no timing)."""
    with errors(as_json, debug):
        docker = _runner(runner, image, mount, host_env, gpus)
    _judge(problem, solution, "test", as_json, debug, device, arch, 2.0, db, record, docker)


@app.command("list")
def list_(as_json: bool = JsonOpt, db: Optional[Path] = DbOpt) -> None:
    """The ladder: problems easy to hard, with level, tags and what you have solved."""
    from judge.store import Store, StoreError, default_path

    with errors(as_json, False):
        rows, bad = [], []
        for path in spec.find_problems(problems_root()):
            try:
                rows.append(spec.load_problem(path).spec)
            except spec.ProblemError as e:
                bad.append(f"{path.name}: {len(e.errors)} error(s) (judge validate {path})")
        rows.sort(key=lambda s: (spec.LEVELS.index(s.level), s.name))
        try:
            done = {}
            if (db or default_path()).exists():  # listing never creates a store
                with Store(db) as store:
                    done = store.progress()
        except StoreError as e:
            done = {}
            err.print(f"[yellow]warning:[/] solved state unknown: {escape(str(e))}")
        if as_json:
            print(json.dumps([{"name": s.name, "title": s.title, "level": s.level, "tags": s.tags,
                               "solved": s.name in done and done[s.name].solved,
                               "attempts": done[s.name].attempts if s.name in done else 0,
                               "best_speedup": done[s.name].best_speedup if s.name in done else None}
                              for s in rows], indent=2))
            return
        t = Table(title="problems")
        for col in ("problem", "level", "title", "tags", "solved"):
            t.add_column(col)
        for s in rows:
            t.add_row(s.name, s.level, s.title, ", ".join(s.tags), render.progress(done.get(s.name)))
        out.print(t)
        n = sum(1 for s in rows if s.name in done and done[s.name].solved)
        out.print(f"{n} of {len(rows)} solved")
        for b in bad:
            err.print(f"[yellow]skipped[/] {escape(b)}")


@app.command()
def show(problem: str = typer.Argument(..., help="Problem folder or name"), as_json: bool = JsonOpt) -> None:
    """The statement, the exact prototype, shapes, workloads and baseline."""
    with errors(as_json, False):
        p = resolve(problem)
        s = p.spec
        shapes = {t.name: p.shape_text(t.name) for t in p.tensors}
        baselines = [b.name for b in p.baselines]
        if as_json:
            print(json.dumps({"name": s.name, "title": s.title, "level": s.level, "tags": s.tags,
                              "prototype": p.prototype(), "shapes": shapes, "check": s.check.model_dump(),
                              "tests": s.tests, "benchmarks": s.benchmarks, "baselines": baselines,
                              "hints": len(s.hints)}, indent=2))
            return
        if p.statement_path.exists():
            out.print(Markdown(p.statement_path.read_text()))
        else:
            out.print(f"[bold]{escape(s.title)}[/]")
        out.print(f"\n[bold]prototype[/]\n  {escape(p.prototype())};")
        for t in p.tensors:
            role = "out" if t.ctype.is_output else "in "
            out.print(f"  {role} {t.name}: {escape(t.type)} {escape(shapes[t.name])}")
        check = ", ".join(f"{k}={v}" for k, v in s.check.model_dump().items() if k != "name")
        out.print(f"[bold]check[/] {s.check.name} {check}")
        out.print(f"[bold]tests[/] {len(s.tests)} workloads; [bold]benchmarks[/] "
                  + "; ".join(spec.workload_id(w) for w in s.benchmarks))
        out.print(f"[bold]baseline[/] {escape(', '.join(baselines) or 'none')}; "
                  f"{len(s.hints)} hints")


@app.command()
def init(problem: str = typer.Argument(..., help="Problem folder or name"),
         output: Optional[Path] = typer.Option(None, "-o", "--output", help="Where to write (default NAME.cu)."),
         force: bool = typer.Option(False, "--force", help="Overwrite an existing file.")) -> None:
    """Write a starter .cu with the exact prototype (it compiles as is)."""
    with errors(False, False):
        p = resolve(problem)
        target = output or Path(f"{p.name}.cu")
        if target.exists() and not force:
            raise Usage(f"{target} exists; pass --force to overwrite it")
        target.write_text(abi.starter(p.spec.title, p.params, {t.name: p.shape_text(t.name) for t in p.tensors}))
        out.print(f"wrote {escape(str(target))}; judge it with: judge submit {p.root} {escape(str(target))}")


@app.command()
def validate(problems: List[str] = typer.Argument(..., help="Problem folders"), as_json: bool = JsonOpt) -> None:
    """Check problem folders: every error of each, at once."""
    results = []
    for name in problems:
        try:
            p = resolve(name)
            results.append((name, []))
            from judge.practice.verify import ControlError, controls

            try:
                controls(p)
            except ControlError as e:
                results[-1] = (name, [str(e)])
        except spec.ProblemError as e:
            results.append((str(e.file), [f"{loc}: {msg}" for loc, msg in e.errors]))
        except Usage as e:
            results.append((name, [str(e)]))
    if as_json:
        print(json.dumps([{"problem": n, "errors": e} for n, e in results], indent=2))
    else:
        for n, errs in results:
            if errs:
                err.print(f"[red]✗[/] {escape(n)}: {len(errs)} error(s)")
                for e in errs:
                    err.print(f"    {escape(e)}")
            else:
                out.print(f"[green]✓[/] {escape(n)}")
    raise typer.Exit(EXIT_USAGE if any(e for _, e in results) else 0)


@app.command()
def doctor(as_json: bool = JsonOpt) -> None:
    """GPU, driver, nvcc, torch, ninja, docker: what is there, what is missing and how to fix it."""
    from judge.runner.doctor import diagnose

    findings = diagnose()
    if as_json:
        print(json.dumps([vars(f) for f in findings], indent=2))
    else:
        for f in findings:
            mark = "[green]✓[/]" if f.ok else ("[red]✗[/]" if f.required else "[yellow]–[/]")
            out.print(f"{mark} {f.name:7} {escape(f.detail)}" + (f"\n          fix: {escape(f.fix)}" if f.fix else ""))
    raise typer.Exit(0 if all(f.ok for f in findings if f.required) else EXIT_NOT_YOUR_CODE)


def main() -> None:
    """The console script. It ends with os._exit: once the output is flushed nothing is left to
    do, and skipping the interpreter's teardown (torch's CUDA context among it) saves time."""
    from . import verify_cmd  # noqa: F401  (registers `judge verify`)
    from . import leaderboard_cmd  # noqa: F401  (registers `judge leaderboard run|show`)
    from . import drill_cmd  # noqa: F401  (registers `judge drill`, `hint`, `stats`, `solution`)
    from . import tools_cmd  # noqa: F401  (registers `judge profile`, `compare`, `watch`)

    try:
        app()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
