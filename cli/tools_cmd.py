"""Tools for kernel engineers: `judge profile` (Nsight Compute on one workload), `judge compare`
(two solutions timed against each other), `judge watch` (re-judge on every save)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from judge.build.sass import line
from judge.contract.verdict import EXIT_NOT_YOUR_CODE, Status

from . import render
from .common import (
    ArchOpt,
    DbOpt,
    DebugOpt,
    DeviceOpt,
    JsonOpt,
    ProblemArg,
    SolutionArg,
    Usage,
    budget_opt,
    err,
    errors,
    fail,
    out,
    problem_then_solution,
    record,
    solution_and_problem,
)

app = typer.Typer()


@app.command()
def profile(problem: str = ProblemArg, solution: Optional[Path] = SolutionArg,
            shape: Optional[str] = typer.Option(None, help="Benchmark index (0 = the first, the default) "
                                                "or a workload id such as M=4096,N=4096,K=4096."),
            as_json: bool = JsonOpt, debug: bool = DebugOpt,
            device: int = DeviceOpt,
            arch: Optional[str] = ArchOpt,
            calls: int = typer.Option(1, min=1, max=20, help="Profiled calls of solve() (after one warm-up call)."),
            kernel: Optional[str] = typer.Option(None, help="Profile only kernels whose name matches this regex."),
            timeout: float = typer.Option(600.0, help="Seconds ncu may take."),
            tuned: Optional[list[str]] = typer.Option(
                None, "--tuned", help="A Triton file: run this configuration, untuned: 'KERNEL: CONFIG' as "
                "`judge submit` printed it after 'autotuner kept on SHAPE: ' (once per autotuned kernel).")) -> None:
    """Nsight Compute on one benchmark shape: time, DRAM and SM throughput, tensor pipe, occupancy,
    bank conflicts, registers and spills per kernel, plus the SASS summary of the build (a .cu; a
    Triton .py has none: its compiling and autotuning stay in the unprofiled warm-up call, and
    --tuned profiles the configuration a submit timed)."""
    from judge.build import nvcc as build
    from judge.gpu import device as gpu_info
    from judge.runner import profile as prof

    with errors(as_json, debug):
        p, src = problem_then_solution(problem, solution, "profile")
        if arch is None:
            gpu = next((g for g in gpu_info.gpus() if g.index == device), None)
            arch = build.arch_for(gpu.major, gpu.minor) if gpu else "sm_90a"
        try:
            result = prof.run(p, src, shape=shape, arch=arch, device=device, calls=calls,
                              kernel_regex=kernel, timeout_s=timeout, tuned=tuned or [])
        except (prof.ShapeError, prof.Unsupported, prof.TunedError) as e:
            raise Usage(str(e)) from None
        except prof.NcuMissing:
            fail(as_json, EXIT_NOT_YOUR_CODE, f"INTERNAL_ERROR: {prof.NCU_MISSING}")
        except prof.ProfileError as e:
            prefix = "INTERNAL_ERROR (not your code)" if e.status is Status.INTERNAL_ERROR else e.status.value
            fail(as_json, e.status.exit_code, f"{prefix}: {e}")
        if as_json:
            print(json.dumps(result.to_json(), indent=2))
            return
        out.print(f"[bold]{escape(p.name)}[/] · {escape(str(src))} · {escape(result.workload)} · {result.arch} "
                  f"· ncu, {calls} call{'s' if calls != 1 else ''} after a warm-up")
        out.print(kernel_table(result))
        for name, counts in result.sass.items():
            out.print(f"  {escape(short_name(name))} sass: {escape(line(counts))}", highlight=False)
        for kept in result.tuned:  # a Triton file: the configuration its autotuner kept, profiled here
            out.print(f"[dim]autotuner kept: {escape(kept)}[/]", highlight=False)
        if result.tuned and not tuned:
            out.print("[dim](tuned in this profile's own warm-up call: `judge submit` may keep another; "
                      "--tuned 'KERNEL: CONFIG' profiles the one it printed)[/]", highlight=False)
        if result.dropped_metrics:
            out.print(f"[yellow]this ncu does not know:[/] {escape(', '.join(result.dropped_metrics))}")


def kernel_table(result) -> Table:
    t = Table(box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    cols = ("kernel", "µs", "DRAM%", "SM%", "tensor%", "occup%", "regs", "bank confl ld/st", "local B ld/st",
            "grid×block")
    for c in cols:
        t.add_column(c, justify="left" if c in ("kernel", "grid×block") else "right",
                     no_wrap=c in ("kernel", "µs"))
    for k in result.kernels:
        t.add_row(escape(short_name(k.kernel)), _f(k.duration_us, 1), _f(k.dram_pct, 1), _f(k.sm_pct, 1),
                  _f(k.tensor_pct, 1), _f(k.occupancy_pct, 1), _f(k.registers, 0),
                  f"{_c(k.smem_conflicts_ld)} / {_c(k.smem_conflicts_st)}",
                  f"{_c(k.local_ld_bytes)} / {_c(k.local_st_bytes)}", f"{_dims(k.grid)}×{_dims(k.block)}")
    return t


def _dims(text: str) -> str:
    """ncu's `(16, 16, 1)` → `16x16`."""
    parts = [x.strip() for x in text.strip("() ").split(",") if x.strip()]
    while len(parts) > 1 and parts[-1] == "1":
        parts.pop()
    return "x".join(parts) or "?"


def short_name(name: str) -> str:
    """`void hgemm_kernel<true>(const __half *, ...)` → `hgemm_kernel<true>`."""
    s = name.strip()
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    return s.removeprefix("void ").strip() or name


def _f(v: float | None, digits: int) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f}"


def _c(v: float | None) -> str:
    """A count, compactly: 980, 98.3k, 1.57M."""
    if v is None:
        return "n/a"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= 10 * scale if suffix == "k" else abs(v) >= scale:
            return f"{v / scale:.3g}{suffix}"
    return f"{v:.0f}"


# -- judge compare ------------------------------------------------------------------------------

@app.command("compare")
def compare_(problem: str = typer.Argument(..., metavar="PROBLEM", show_default=False,
                                          help="Problem name or folder. Or leave it out (judge compare A B) "
                                          "when the files' first lines name it: `// judge: PROBLEM`."),
             a: Path = typer.Argument(..., metavar="A", show_default=False, help="Solution A (.cu or .py)."),
             b: Optional[Path] = typer.Argument(None, metavar="B", show_default=False,
                                                help="Solution B (.cu or .py)."),
             as_json: bool = JsonOpt, debug: bool = DebugOpt,
             device: int = DeviceOpt,
             arch: Optional[str] = ArchOpt,
             budget: float = budget_opt(2.0, "Most seconds (wall) of timing per shape, each solution.")) -> None:
    """Check two solutions, then time them in one run, interleaved on the same input buffers, each
    batch checked as in `judge submit`: per shape, B against A is FASTER, SLOWER, SAME or AMBIGUOUS
    (docs/timing.md)."""
    from judge.engine.compare import Compared, compare
    from judge.engine.run import Options
    from judge.engine.stats import TimingPolicy

    with errors(as_json, debug):
        named: Optional[str] = problem
        if b is None:  # `judge compare A B`: the problem from the files' headers
            named, a, b = None, Path(problem), a
        p, sa = solution_and_problem(named, a, "compare")
        _, sb = solution_and_problem(named or p.name, b, "compare")
        if not as_json:
            out.print(f"[bold]{escape(p.spec.title)}[/] ({p.name}) · A = {escape(str(sa))} · B = {escape(str(sb))}")
        result = None
        with render.Live(err if as_json else out, quiet=as_json) as live:
            for ev in compare(p, sa, sb, Options(device=device, arch=arch, policy=TimingPolicy(budget_s=budget))):
                if isinstance(ev, Compared):
                    result = ev.result
                else:
                    live(ev)
        assert result is not None
        result = _with_b_build(p, sb, result)
        if as_json:
            print(result.model_dump_json(indent=2))
        else:
            _show_comparison(result)
    raise typer.Exit(result.exit_code)


def _with_b_build(p, sb: Path, r):
    """A comparison that ended on A (no GPU here, or A's own failure) never says what B's build
    was: B was built with A (a cache hit now), so a B that does not build is named too, and where
    A's failure was the judge's (INTERNAL_ERROR), B's verdict is the comparison's."""
    from judge.build import toolchain

    if r.failed != "A" or r.b_test is not None or r.a_test is None or not r.a_test.environment.arch:
        return r
    built = toolchain.prepare(p, sb, r.a_test.environment.arch)
    if built.status is None or built.status is Status.INTERNAL_ERROR:
        return r
    b_text = f"B ({sb}): {built.status.value}: {built.message}"
    if r.status is Status.INTERNAL_ERROR:
        return r.model_copy(update={"status": built.status, "failed": "B",
                                    "message": f"{b_text}\n(and A: {r.message})"})
    return r.model_copy(update={"message": f"{r.message}\n{b_text}"})


def _show_comparison(r) -> None:
    if r.shapes:
        t = Table(title=f"{r.problem}: B against A (B/A < 1: B is faster)", title_justify="left")
        for col in ("workload", "A median ms", "B median ms", "B/A", "B/A interval", "verdict"):
            t.add_column(col, justify="left" if col == "workload" else "right", no_wrap=col == "workload")
        colour = {"FASTER": "green", "SLOWER": "red", "SAME": "", "AMBIGUOUS": "yellow"}
        for s in r.shapes:
            t.add_row(s.workload, f"{s.a.median_ms:.4f} ±{100 * s.a.ci_halfwidth_rel:.2f}%",
                      f"{s.b.median_ms:.4f} ±{100 * s.b.ci_halfwidth_rel:.2f}%", f"{s.ratio:.3f}",
                      escape(f"[{s.ratio_low:.3f}, {s.ratio_high:.3f}]"),
                      f"[{colour[s.verdict]}]{s.verdict}[/]" if colour[s.verdict] else s.verdict)
        out.print(t)
        out.print(f"[dim]FASTER/SLOWER: the medians' 95% CIs are apart and differ by more than "
                  f"{100 * r.floor:.0f}%; SAME: they overlap and both are within ±0.5%; AMBIGUOUS: "
                  f"wide intervals (a larger --budget may settle it)[/]")
    for rep in (r.a_test, r.b_test):
        for case in rep.tests if rep else []:
            for chk in case.checks:
                if not chk.passed:
                    render.mismatch(out, case.workload, chk)
    for case in r.evidence:
        for chk in case.checks:
            if not chk.passed:
                render.mismatch(out, case.workload, chk)
    style = "bold green" if r.status is Status.ACCEPTED else \
        "bold yellow" if r.status is Status.INTERNAL_ERROR else "bold red"
    out.print(f"[{style}]{r.status.value}[/] {escape(r.problem)} · compared in {r.wall_s:.1f} s")
    if r.message:
        out.print(escape(r.message), highlight=False)


# -- judge watch --------------------------------------------------------------------------------

@app.command()
def watch(problem: str = ProblemArg,
          solution: Optional[Path] = typer.Argument(None, metavar="SOLUTION", show_default=False,
                                                    help="Your .cu or .py file (judged now and on every "
                                                    "save)."),
          as_json: bool = JsonOpt, debug: bool = DebugOpt,
          device: int = DeviceOpt,
          arch: Optional[str] = ArchOpt,
          budget: Optional[float] = budget_opt(None, "Most seconds (wall) of timing per shape "
                                                 "(default 0.5; 2 with --submit)."),
          timed: Optional[bool] = typer.Option(None, "--time/--no-time", show_default=False,
                                               help="A short timing after the tests (the default; a "
                                               "`// judge: PROBLEM test` header means --no-time)."),
          submit: Optional[bool] = typer.Option(None, "--submit/--no-submit", show_default=False,
                                                help="Judge each save with `judge submit` itself (fresh inputs, "
                                                "baselines, recorded): slower, but a real verdict (a "
                                                "`// judge: PROBLEM submit` header means --submit)."),
          once: bool = typer.Option(False, "--once", help="Judge once with the warm session and exit "
                                    "with the verdict's exit code."),
          runs: Optional[int] = typer.Option(None, min=1, help="Exit after this many runs (the first "
                                             "included) with the last verdict's exit code, for scripts."),
          db: Optional[Path] = DbOpt) -> None:
    """Re-judge on every save with a warm judge (a practice tool: the verdict of `judge submit` is
    the real one). Tests, then a short timing; Ctrl-C stops."""
    import time

    from judge.build import toolchain
    from judge.engine.run import Options
    from judge.engine.stats import TimingPolicy
    from judge.practice import watch as watching

    with errors(as_json, debug):
        p, src = problem_then_solution(problem, solution, "watch")
        timed, submit = _watch_mode(src, timed, submit)
        budget = budget if budget is not None else (2.0 if submit else 0.5)
        policy = TimingPolicy(budget_s=budget) if submit else watching.practice_policy(budget)
        opts = Options(device=device, arch=arch, policy=policy,
                       baseline_policy=TimingPolicy(budget_s=budget).for_baseline())
        session = watching.WatchSession(p, opts, timed=timed, submit=submit,
                                        triton=toolchain.for_source(src).worker == "triton")
        detector = watching.ChangeDetector(src)
        status = out.status("starting the judge", spinner="dots") if not as_json and out.is_terminal else None

        def on_event(ev) -> None:
            if status is not None and hasattr(ev, "text"):  # a Stage
                status.update(escape(ev.text))
            elif status is not None and hasattr(ev, "samples"):  # a Timing
                status.update(f"timing {escape(ev.workload)}: {ev.samples} samples")

        if status:
            status.start()
        code = 0  # Ctrl-C: the watch was stopped, as it is meant to be
        try:
            session.start()
            changes = detector.changes()
            saved, n = time.perf_counter(), 0
            while True:
                n += 1
                if status:
                    status.update(f"run {n}: judging")
                judged = session.run(src, saved, on_event)
                if status:
                    status.stop()
                _show_run(n, judged, as_json)
                if submit and judged.report.status is not Status.INTERNAL_ERROR:
                    record(judged.report, db)
                if once:
                    raise typer.Exit(judged.report.exit_code)
                if runs is not None and n >= runs:
                    code = judged.report.exit_code  # a script's `--runs N` gets the last verdict's code
                    break
                if status:
                    status.update(f"watching {escape(str(src))} (Ctrl-C stops)")
                    status.start()
                saved = next(changes)
        except KeyboardInterrupt:
            pass
        finally:
            if status:
                status.stop()
            session.close()
    raise typer.Exit(code)


def _watch_mode(src: Path, timed: Optional[bool], submit: Optional[bool]) -> tuple[bool, bool]:
    """--time and --submit as given, else as the file's header's mode says (`test`: tests only;
    `submit`: real verdicts), else practice runs with a short timing."""
    from judge.build import header

    named = header.read(src)  # read once already by problem_then_solution: it is well formed
    mode = named.mode if named else None
    return (timed if timed is not None else mode != "test",
            submit if submit is not None else mode == "submit")


def _show_run(n: int, judged, as_json: bool) -> None:
    from datetime import datetime

    r = judged.report
    if as_json:
        print(json.dumps({"run": n, "status": r.status.value, "exit_code": r.exit_code,
                          "verdict_s": judged.verdict_s, "total_s": judged.total_s,
                          "verdict_at": judged.verdict_at, "report": json.loads(r.model_dump_json())}),
              flush=True)  # (the report's own JSON: NaN evidence as strings)
        return
    style = "bold green" if r.status is Status.ACCEPTED else \
        "bold yellow" if r.status is Status.INTERNAL_ERROR else "bold red"
    done = f" · done in {judged.total_s:.2f} s" if judged.total_s - judged.verdict_s >= 0.01 else ""
    out.print(f"run {n} · {datetime.now():%H:%M:%S} · [{style}]{r.status.value}[/] · verdict in "
              f"{judged.verdict_s:.2f} s{done}")
    for w in r.warm_up:  # a Triton file's warm-up: what Triton compiled and tuned (not timed)
        out.print("  " + render.warm_up_line(w), highlight=False)
    for b in r.benchmarks:
        s = b.stats
        speed = f"  {b.speedup:.2f}× {escape(b.baselines[0].name)}" if b.speedup else ""
        out.print(f"  {escape(b.workload)}: {s.median_ms:.4f} ms ±{100 * s.ci_halfwidth_rel:.1f}%  "
                  f"{b.tflops:.1f} TFLOPS  {b.gbps:.0f} GB/s  {b.roofline_pct:.0f}% of roofline{speed}",
                  highlight=False)
    for case in r.tests:
        for chk in case.checks:
            if not chk.passed:
                render.mismatch(out, case.workload, chk)
    if r.message:
        lines = r.message.splitlines()
        out.print(escape("\n".join(lines[:15]) + ("\n…" if len(lines) > 15 else "")), highlight=False)
