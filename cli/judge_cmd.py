"""`judge submit`, `test`, `list`, `show`, `init`, `validate`, `doctor`: one problem and one solution
at a time, judged in this process."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from judge.build import toolchain
from judge.contract.verdict import EXIT_NOT_YOUR_CODE, EXIT_USAGE, Status
from judge.problem import abi, spec
from judge.problem.validate import Finding
from judge.runner import job
from judge.runner.job import DockerRunner, Runner

from . import render
from .common import (
    ArchOpt,
    DbOpt,
    DebugOpt,
    DeviceOpt,
    GpusOpt,
    HostEnvOpt,
    ImageOpt,
    JsonOpt,
    MountOpt,
    ProblemArg,
    RunnerOpt,
    SolutionArg,
    Usage,
    budget_opt,
    cpu_check_hint,
    err,
    errors,
    no_problems,
    out,
    problem_arg,
    problem_then_solution,
    problems_root,
    record,
    resolve,
    runner_choice,
    solution_and_problem,
    store_path,
)

app = typer.Typer()


def _judge(p: spec.Problem, src: Path, mode: str, as_json: bool, debug: bool, device: int,
           arch: Optional[str], budget: float, db: Optional[Path], keep: bool, runner: Runner,
           only: Optional[str] = None) -> None:
    """Judge `src`; `only` (a workload's id) when the problem's tests were narrowed to one."""
    from judge.engine.run import Options, evaluate
    from judge.engine.stats import TimingPolicy

    with errors(as_json, debug):
        dopts = job.docker_options(runner) if isinstance(runner, DockerRunner) else None
        opts = Options(mode=mode, device=device, arch=arch, policy=TimingPolicy(budget_s=budget),
                       baseline_policy=TimingPolicy(budget_s=budget).for_baseline(), hidden=0 if only else 2)
        if not as_json:
            out.print(f"[bold]{escape(p.spec.title)}[/] ({p.name}, {p.spec.level}) · {escape(str(src))}"
                      + (f" · docker {escape(dopts.image)}" if dopts else "")
                      + (f" · only {escape(only)} (not recorded)" if only else ""))
        if dopts:  # the whole pipeline inside a container (judge/runner/docker.py)
            from judge.runner.docker import evaluate_in_docker

            events = evaluate_in_docker(p, src, mode, device, arch, budget, dopts)
        else:
            events = evaluate(p, src, opts)
        report = render.run(events, err if as_json else out, quiet=as_json)
        if as_json:
            print(report.model_dump_json(indent=2))
        else:
            render.report(out, report)
        if keep and not only and report.status is not Status.INTERNAL_ERROR:  # the judge's fault is no attempt
            record(report, db)
    raise typer.Exit(report.exit_code)


@app.command()
def submit(problem: str = ProblemArg, solution: Optional[Path] = SolutionArg,
           as_json: bool = JsonOpt, debug: bool = DebugOpt,
           device: int = DeviceOpt,
           arch: Optional[str] = ArchOpt,
           budget: float = budget_opt(2.0, "Most seconds (wall) of timing your kernel per shape."),
           db: Optional[Path] = DbOpt,
           record: bool = typer.Option(True, "--record/--no-record", help="Keep the result in the store."),
           runner: str = RunnerOpt, image: Optional[str] = ImageOpt, mount: List[str] = MountOpt,
           host_env: bool = HostEnvOpt, gpus: str = GpusOpt) -> None:
    """Build, check on every test workload, time against the baseline, and give a verdict."""
    with errors(as_json, debug):
        choice = runner_choice(runner, image, mount, host_env, gpus)
        p, src = problem_then_solution(problem, solution, "submit")
    _judge(p, src, "submit", as_json, debug, device, arch, budget, db, record, choice)


@app.command()
def test(problem: str = ProblemArg, solution: Optional[Path] = SolutionArg,
         as_json: bool = JsonOpt, debug: bool = DebugOpt,
         device: int = DeviceOpt,
         arch: Optional[str] = ArchOpt,
         workload: Optional[int] = typer.Option(None, "--workload", min=1, help="Run only test N (as `test N/M` "
                                                "counts them; `judge show` lists them). Not recorded."),
         shape: Optional[str] = typer.Option(None, "--shape", help="Run only this workload, e.g. "
                                             "M=100,N=64,K=33 (every scalar of the signature). Not recorded."),
         db: Optional[Path] = DbOpt,
         record: bool = typer.Option(True, "--record/--no-record", help="Keep the result in the store."),
         runner: str = RunnerOpt, image: Optional[str] = ImageOpt, mount: List[str] = MountOpt,
         host_env: bool = HostEnvOpt, gpus: str = GpusOpt,
         cpu: bool = typer.Option(False, "--cpu", help="A Triton (.py) file: check it on CPU through Triton's "
                                  "interpreter, on the test workloads small enough for it (no GPU; a practice "
                                  "check: not timed, not recorded).")) -> None:
    """Correctness only: build and check every test workload (no timing), or one (--workload, --shape)."""
    with errors(as_json, debug):
        choice = runner_choice(runner, image, mount, host_env, gpus)
        p, src = problem_then_solution(problem, solution, "test")
        if cpu and toolchain.for_source(src).name != "triton":
            raise Usage(f"--cpu checks Triton (.py) files through Triton's interpreter; {src.name} is not one")
        if cpu and isinstance(choice, DockerRunner):
            raise Usage("--cpu runs here, in a process of its own: drop --runner docker")
        p, only = _narrowed(p, workload, shape, choice)
    if cpu:
        _cpu_check(p, src, as_json, debug)
    _judge(p, src, "test", as_json, debug, device, arch, 2.0, db, record, choice, only)


def _cpu_check(p: spec.Problem, src: Path, as_json: bool, debug: bool) -> None:
    from judge.engine import cpu_check

    with errors(as_json, debug):
        console = err if as_json else out
        if not as_json:
            out.print(f"[bold]{escape(p.spec.title)}[/] ({p.name}, {p.spec.level}) · {escape(str(src))} · "
                      "CPU, Triton's interpreter")
        result = cpu_check.run(p, src, on_case=lambda c: render.cpu_case(console, c, len(p.spec.tests)))
        if as_json:
            print(json.dumps(result.to_dict(), indent=2))
        else:
            render.cpu_check(out, result)
    raise typer.Exit(result.exit_code)


def _narrowed(p: spec.Problem, workload: Optional[int], shape: Optional[str],
              runner: Runner) -> tuple[spec.Problem, Optional[str]]:
    """The problem with its tests narrowed to one (and no hidden ones), and that one's id."""
    from dataclasses import replace

    from judge.problem import workload_arg

    if workload is None and shape is None:
        return p, None
    if workload is not None and shape is not None:
        raise Usage("--workload and --shape each pick the one workload to run: pass one of them")
    if isinstance(runner, DockerRunner):
        raise Usage("--workload and --shape run on this machine (not with --runner docker)")
    if workload is not None:
        if workload > len(p.spec.tests):
            raise Usage(f"--workload {workload}: {p.name} has tests 1 to {len(p.spec.tests)} (judge show {p.name})")
        w = p.spec.tests[workload - 1]
    else:
        try:
            w = workload_arg.parse(p, shape or "")
        except workload_arg.WorkloadError as e:
            raise Usage(f"--shape {e}") from None
    return replace(p, spec=p.spec.model_copy(update={"tests": [w]})), spec.workload_id(w)


@app.command()
def check(solution: Path = typer.Argument(..., metavar="SOLUTION", show_default=False, help="Your .cu or .py file."),
          problem: Optional[str] = typer.Argument(None, metavar="PROBLEM", show_default=False,
                                                  help="Problem name or folder (default: "
                                                  "the one the file's `// judge: PROBLEM` line names)."),
          as_json: bool = JsonOpt, debug: bool = DebugOpt,
          device: int = DeviceOpt,
          arch: Optional[str] = ArchOpt) -> None:
    """Build and run the static policy, no GPU needed: exit 0 when both pass. Shows the kernels'
    registers, shared memory, spills and SASS summary, and the compiler's warnings. The problem may
    also come first, as in `judge test PROBLEM FILE`."""
    from judge.build import nvcc
    from judge.gpu import device as gpus

    with errors(as_json, debug):
        if problem is not None and not solution.is_file() and (Path(problem).is_file()
                                                               or toolchain.is_solution(Path(problem))):
            solution, problem = Path(problem), str(solution)  # judge check PROBLEM FILE, as test and submit
        p, src = solution_and_problem(problem, solution, "check")
        if arch is None:
            gpu = next((g for g in gpus.gpus() if g.index == device), None)
            arch = nvcc.arch_for(gpu.major, gpu.minor) if gpu else "sm_90a"
        prepared = toolchain.prepare(p, src, arch, sass=True)
        status = prepared.status.value if prepared.status is not None else "OK"
        if as_json:
            print(json.dumps({"problem": p.name, "solution": str(src), "arch": arch, "ok": prepared.ok,
                              "status": status, "message": prepared.message,
                              "build": prepared.build.model_dump() if prepared.build else None}, indent=2))
        else:
            out.print(f"[bold]{escape(p.spec.title)}[/] ({p.name}) · {escape(str(src))} · {arch}")
            if prepared.build is not None:
                render.build_summary(out, prepared.build)
            if prepared.ok:
                how = f"judge test {escape(problem_arg(p))} {escape(str(src))} checks it on a GPU"
                if toolchain.for_source(src).worker == "triton":  # nothing to build: Triton compiles at launch
                    out.print("[bold green]OK[/]: its solve() takes the problem's parameters and it passes the "
                              f"static policy (nothing was compiled or run: {how}, or on CPU with --cpu)")
                else:
                    out.print(f"[bold green]OK[/]: it builds and passes the static policy (nothing was run: {how})")
            else:
                out.print(f"[bold red]{status}[/] {escape(p.name)} · {escape(str(src))}")
                out.print(escape(prepared.message), highlight=False)
    raise typer.Exit(0 if prepared.status is None else prepared.status.exit_code)


@app.command("list")
def list_(as_json: bool = JsonOpt, db: Optional[Path] = DbOpt, debug: bool = DebugOpt) -> None:
    """The ladder: problems easy to hard, with level, tags and what you have solved."""
    from judge.store import Store, StoreError

    with errors(as_json, debug):
        where = store_path(db)
        rows, bad = [], []
        found = spec.find_problems(problems_root())
        if not found:
            raise Usage(no_problems())
        for path in found:
            try:
                rows.append(spec.load_problem(path).spec)
            except spec.ProblemError as e:
                bad.append(f"{path.name}: {len(e.errors)} error(s) (judge validate {path})")
        rows.sort(key=lambda s: (spec.LEVELS.index(s.level), s.name))
        try:
            done = {}
            if where.exists():  # listing never creates a store
                with Store(where) as store:
                    done = store.progress()
        except StoreError as e:
            done = {}
            err.print(f"[yellow]warning:[/] solved state unknown: {escape(str(e))}")
        if as_json:
            print(json.dumps({"store": str(where), "problems": [
                {"name": s.name, "title": s.title, "level": s.level, "tags": s.tags,
                 "solved": s.name in done and done[s.name].solved,
                 "attempts": done[s.name].attempts if s.name in done else 0,
                 "best_speedup": done[s.name].best_speedup if s.name in done else None}
                for s in rows]}, indent=2))
            return
        t = Table(title="problems")
        for col in ("problem", "level", "title", "tags", "solved"):
            t.add_column(col)
        for s in rows:
            t.add_row(s.name, s.level, s.title, ", ".join(s.tags), render.progress(done.get(s.name)))
        out.print(t)
        n = sum(1 for s in rows if s.name in done and done[s.name].solved)
        out.print(f"{n} of {len(rows)} solved · results store {escape(str(where))}"
                  + ("" if where.exists() else " (none yet)"))
        for b in bad:
            err.print(f"[yellow]skipped[/] {escape(b)}")


@app.command()
def show(problem: str = typer.Argument(..., help="Problem folder or name"), as_json: bool = JsonOpt,
         debug: bool = DebugOpt) -> None:
    """The statement, the exact prototype, shapes, workloads and baseline."""
    with errors(as_json, debug):
        p = resolve(problem)
        s = p.spec
        shapes = {t.name: p.shape_text(t.name) for t in p.tensors}
        baselines = [b.name for b in p.baselines]
        if as_json:
            print(json.dumps({"name": s.name, "title": s.title, "level": s.level, "tags": s.tags,
                              "prototype": p.prototype(), "py_prototype": abi.py_prototype(p.params),
                              "shapes": shapes, "check": s.check.model_dump(),
                              "tests": s.tests, "benchmarks": s.benchmarks, "baselines": baselines,
                              "hints": len(s.hints)}, indent=2))
            return
        if p.statement_path.exists():
            render.statement(out, p.statement_path.read_text())
        else:
            out.print(f"[bold]{escape(s.title)}[/]")
        out.print(f"\n[bold]prototype[/]\n  {escape(p.prototype())};\n  "
                  f"[dim]Triton (.py):[/] {escape(abi.py_prototype(p.params))}")
        for t in p.tensors:
            role = "out" if t.ctype.is_output else "in "
            out.print(f"  {role} {t.name}: {escape(t.type)} {escape(shapes[t.name])}")
        check = ", ".join(f"{k}={v}" for k, v in s.check.model_dump().items() if k != "name")
        out.print(f"[bold]check[/] {s.check.name} {check}")
        out.print(f"[bold]tests[/] {len(s.tests)} workloads (judge test --workload N runs one): "
                  + "; ".join(f"{i} {spec.workload_id(w)}" for i, w in enumerate(s.tests, 1)))
        out.print("[bold]benchmarks[/] " + "; ".join(spec.workload_id(w) for w in s.benchmarks))
        out.print(f"[bold]baseline[/] {escape(', '.join(baselines) or 'none')}; "
                  f"{len(s.hints)} hints")


@app.command()
def init(problem: str = typer.Argument(..., help="Problem folder or name"),
         output: Optional[Path] = typer.Option(None, "-o", "--output", help="Where to write (default NAME.cu, "
                                               "or NAME.py for --lang triton)."),
         lang: str = typer.Option(toolchain.DEFAULT, "--lang", help=f"The starter's language: "
                                  f"{', '.join(toolchain.REGISTRY)}."),
         force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
         debug: bool = DebugOpt) -> None:
    """Write a starter with the exact prototype (it builds and runs as is) under a `judge: PROBLEM` line."""
    with errors(False, debug):
        p = resolve(problem)
        try:
            t = toolchain.for_name(lang)
        except toolchain.UnknownLanguage as e:
            raise Usage(str(e)) from None
        target = output or Path(f"{p.name}{t.suffixes[0]}")
        if target.exists() and not force:
            raise Usage(f"{target} exists; pass --force to overwrite it")
        try:
            target.write_text(t.starter(p))
        except OSError as e:
            raise Usage(f"cannot write {target}: {e.strerror or e}") from None
        how = f"judge submit {escape(problem_arg(p))} {escape(str(target))}{cpu_check_hint(t, target)}"
        out.print(f"wrote {escape(str(target))}; try it with: {how} (its first line names the problem)")


@app.command()
def validate(problems: Optional[List[str]] = typer.Argument(None, help="Problem folders or names (default: every "
                                                            "problem of the set, and the set's own rules)"),
             quick: bool = typer.Option(False, "--quick", help="Skip the rules that run the reference on CPU."),
             as_json: bool = JsonOpt) -> None:
    """Check problem folders against every rule of docs/problem-format.md: all errors of each, at once."""
    from judge.build import toolchain
    from judge.problem import validate as rules

    languages = list(toolchain.REGISTRY.values())
    whole_set = not problems
    targets = [(n, n) for n in problems or []] or [(d.name, str(d)) for d in spec.find_problems(problems_root())]
    rows: list[dict] = []
    with errors(as_json, False):
        for name, target in targets:
            try:
                root = resolve(target).root
            except spec.ProblemError as e:
                root = e.file.parent
            except Usage as e:
                rows.append({"problem": name, "path": None, "errors": [{"rule": "spec", "file": name,
                                                                        "message": str(e)}]})
                continue
            found = rules.validate(root, languages, cpu=not quick)
            rows.append({"problem": name, "path": str(root), "errors": [_finding(f) for f in found]})
        set_row = None
        if whole_set:
            set_row = {"path": str(problems_root()),
                       "errors": [_finding(f) for f in rules.validate_set(problems_root())]}
    failed = any(r["errors"] for r in rows) or bool(set_row and set_row["errors"])
    if as_json:
        print(json.dumps({"ok": not failed, "problems": rows, "set": set_row}, indent=2))
    else:
        for r in rows + ([{**set_row, "problem": f"the problem set {set_row['path']}"}] if set_row else []):
            if r["errors"]:
                err.print(f"[red]✗[/] {escape(r['problem'])}: {len(r['errors'])} error(s)")
                for f in r["errors"]:
                    err.print(f"    {escape(f['file'])}: {escape(f['message'])} [dim]({f['rule']})[/]")
            else:
                out.print(f"[green]✓[/] {escape(r['problem'])}")
    raise typer.Exit(EXIT_USAGE if failed else 0)


def _finding(f: Finding) -> dict:
    """A finding as `judge validate` shows it: the file relative to this folder where it is below it."""
    try:
        shown = str(f.file.relative_to(Path.cwd()))
    except ValueError:
        shown = str(f.file)
    return {"rule": f.rule, "file": shown, "message": f.message}


@app.command()
def doctor(as_json: bool = JsonOpt, debug: bool = DebugOpt) -> None:
    """GPU, driver, nvcc, torch, ninja, docker: what is there, what is missing and how to fix it."""
    from judge.runner.doctor import diagnose

    with errors(as_json, debug):
        findings = diagnose()
        if as_json:
            print(json.dumps([vars(f) for f in findings], indent=2))
        else:
            width = max((len(f.name) for f in findings), default=0)
            for f in findings:
                mark = "[green]✓[/]" if f.ok else ("[red]✗[/]" if f.required else "[yellow]–[/]")
                out.print(f"{mark} {f.name:{width}} {escape(f.detail)}"
                          + (f"\n{'':{width + 3}}fix: {escape(f.fix)}" if f.fix else ""))
    raise typer.Exit(0 if all(f.ok for f in findings if f.required) else EXIT_NOT_YOUR_CODE)
