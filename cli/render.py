"""Human output with rich: progress while working, the report, errors. Off-TTY safe."""
from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.status import Status as Spinner
from rich.table import Table

from judge.build.sass import line as sass_line
from judge.contract.events import BenchDone, Built, CaseDone, Event, Finished, Stage, Timing
from judge.contract.report import BenchResult, BuildInfo, CheckResult, Report, WarmUp
from judge.contract.verdict import Status

SHOWN_WARNINGS = 3  # warning lines under a build's summary; the count and the log's path say the rest
STYLE = {Status.ACCEPTED: "bold green", Status.INTERNAL_ERROR: "bold yellow"}


class Live:
    """Renders pipeline events: a transient status line for stages and timing, lines for results."""

    def __init__(self, console: Console, quiet: bool = False):
        self.console, self.quiet = console, quiet
        self.status: Spinner | None = None

    def __enter__(self) -> Live:
        if not self.quiet:
            self.status = self.console.status("starting", spinner="dots")
            self.status.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.status:
            self.status.__exit__(*exc)

    def __call__(self, event: Event) -> None:
        if self.quiet:
            return
        c = self.console
        if isinstance(event, Stage):
            if self.status:
                self.status.update(escape(event.text))
        elif isinstance(event, Timing):
            if self.status:
                self.status.update(f"timing {escape(event.workload)}: {escape(event.target)}, "
                                   f"{event.samples} samples")
        elif isinstance(event, Built):
            build_summary(c, event.build)
        elif isinstance(event, CaseDone):
            mark = "[green]✓[/]" if event.case.passed else "[red]✗[/]"
            c.print(f"  {mark} test {event.index + 1}/{event.total}  {escape(event.case.workload)}")
        elif isinstance(event, BenchDone):
            r = event.result
            speed = f"  {r.speedup:.2f}× {escape(r.baselines[0].name)}" if r.speedup else ""
            c.print(f"  ⏱ {escape(r.workload)}: {r.stats.median_ms:.4f} ms, {r.tflops:.1f} TFLOPS, "
                    f"{r.gbps:.0f} GB/s, {r.roofline_pct:.0f}% of roofline{speed}")


class Steps:
    """Progress of a long command on `console`: a spinner on a terminal; off one (a pipe, a CI log)
    plain lines, at most one every `every_s` seconds, the first and the last step always."""

    def __init__(self, console: Console, every_s: float = 10.0):
        self.console, self.every_s = console, every_s
        self.spinner: Spinner | None = console.status("starting", spinner="dots") if console.is_terminal else None
        self.last = float("-inf")

    def __enter__(self) -> Steps:
        if self.spinner:
            self.spinner.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.spinner:
            self.spinner.stop()

    def update(self, text: str, first: bool = False, last: bool = False) -> None:
        if self.spinner:
            self.spinner.update(escape(text))
        elif first or last or time.monotonic() - self.last >= self.every_s:
            self.last = time.monotonic()
            self.console.print(escape(text), highlight=False)

    def line(self, text: str) -> None:
        """A line that stays (rich markup)."""
        self.console.print(text, highlight=False)


def statement(c: Console, text: str) -> None:
    """A problem's README, all of it: wrapped to the console's width. (The consoles soft-wrap, which
    for a Markdown renderable means cropping every line at the width, list items included.)
    Imported here: only `judge show` and the drills print a README, and rich's Markdown (with its
    parser) is a tenth of the CLI's import time."""
    from rich.markdown import Markdown

    c.print(Markdown(text), soft_wrap=False)


def build_summary(c: Console, b: BuildInfo) -> None:
    how = "cached" if b.cached else f"{b.seconds:.1f} s"
    c.print(f"  build ({b.arch}, {how}): {'ok' if b.ok else '[red]failed[/]'}")
    if b.warning_count:
        shown = b.warnings[:SHOWN_WARNINGS]
        c.print(f"  [yellow]{b.warning_count} compiler warning{'s' if b.warning_count != 1 else ''}[/]"
                + (f" (whole output: {escape(b.log_path)})" if b.log_path else ""), highlight=False)
        for w in shown:
            c.print(f"    {escape(w)}", highlight=False)
        if b.warning_count > len(shown):
            c.print(f"    ... {b.warning_count - len(shown)} more", highlight=False)
    for k in b.kernels:
        spill = k.spill_store_bytes + k.spill_load_bytes
        warn = f" [red]{spill} B spilled[/]" if spill else ""
        c.print(f"    {escape(k.kernel)}: {k.registers} regs, {k.shared_bytes} B smem, "
                f"{k.stack_bytes} B stack{warn}", highlight=False)
        if k.sass:
            c.print(f"      sass: {escape(sass_line(k.sass))}", highlight=False)


def report(c: Console, r: Report) -> None:
    if r.benchmarks:
        c.print(bench_table(r))
        if r.geomean_speedup:
            c.print(f"geomean speedup over {escape(r.baseline_name or 'baseline')}: "
                    f"[bold]{r.geomean_speedup:.3f}×[/]")
        for b in r.benchmarks:
            for bl in b.baselines:
                if bl.drift_flagged:
                    c.print(f"[yellow]warning: {escape(bl.name)} on {escape(b.workload)} drifted "
                            f"{100 * bl.drift:.1f}% between its runs before and after: noisy machine[/]")
    for case in r.tests:
        for chk in case.checks:
            if not chk.passed:
                mismatch(c, case.workload, chk)
    for w in r.warm_up:
        c.print(warm_up_line(w), highlight=False)
        for line in w.tuned if w.phase == "timed" else []:  # what the timed calls ran
            c.print(f"[dim]  autotuner kept on {escape(line)}[/]", highlight=False)
    e = r.environment
    if e.gpu:
        c.print(f"[dim]{e.gpu}, driver {e.driver}, CUDA {e.cuda_runtime}, nvcc {e.nvcc}, "
                f"torch {e.torch}, {e.arch}, {'sandboxed' if e.confined else 'not sandboxed'}"
                f"{', own pid namespace' if e.pid_namespace else ''}{', own cgroup' if e.cgroup else ''}[/]",
                highlight=False)
    style = STYLE.get(r.status, "bold red")
    c.print(f"[{style}]{r.status.value}[/] {escape(r.problem)} · {escape(r.solution)} ({r.wall_s:.1f} s)")
    if r.message:
        c.print(escape(r.message), highlight=False)


def warm_up_line(w: WarmUp) -> str:
    """A Triton candidate's warm-up in one worker: what Triton compiled and tuned, outside the timing."""
    where = "the tests'" if w.phase == "tests" else "the timed calls'"
    tuned = (f", {w.configs} autotuner configuration{'s' if w.configs != 1 else ''} tried in {w.tune_s:.1f} s"
             if w.configs else "")
    return (f"[dim]warm-up ({where} worker, not timed): {w.workloads} shape{'s' if w.workloads != 1 else ''} in "
            f"{w.seconds:.1f} s, {w.kernels} kernel{'s' if w.kernels != 1 else ''} compiled in "
            f"{w.compile_s:.1f} s{tuned}[/]")


def bench_table(r: Report) -> Table:
    t = Table(title=f"{r.problem}: benchmarks", title_justify="left")
    for col in ("workload", "median ms", "95% CI", "host ms", "TFLOPS", "GB/s", "% roofline", "baseline ms",
                "speedup"):
        t.add_column(col, justify="left" if col == "workload" else "right", no_wrap=col == "workload")
    for b in r.benchmarks:
        t.add_row(*bench_row(b))
    if any(not_held(b) for b in r.benchmarks):
        t.caption = ("* not held on the GPU (solve() or the baseline waited for the device): its time may "
                     "include the host's launch latency (docs/timing.md, \"The hold\")")
    return t


def not_held(b: BenchResult) -> bool:
    return b.stats.held is False or any(x.before.held is False or x.after.held is False for x in b.baselines)


def bench_row(b: BenchResult) -> list[str]:
    s = b.stats
    base = b.baselines[0] if b.baselines else None
    star = lambda held: "*" if held is False else ""
    base_held = None if base is None else base.before.held is not False and base.after.held is not False
    return [b.workload, f"{s.median_ms:.4f}{star(s.held)}", f"±{100 * s.ci_halfwidth_rel:.2f}%",
            "-" if s.host_ms is None else f"{s.host_ms:.4f}", f"{b.tflops:.1f}", f"{b.gbps:.0f}",
            f"{b.roofline_pct:.0f}%", f"{base.median_ms:.4f}{star(base_held)}" if base else "-",
            f"{base.speedup:.2f}×" if base else "-"]


def mismatch(c: Console, workload: str, chk: CheckResult) -> None:
    c.print(f"[red]{escape(chk.output)}[/] on {escape(workload)}: {chk.n_bad} of {chk.numel} elements wrong "
            f"({chk.check}); worst abs err {chk.max_abs_err:.3g}, worst rel err {chk.max_rel_err:.3g}, "
            f"NaN {chk.nan_count}, Inf {chk.inf_count}", highlight=False)
    if chk.message:
        c.print(f"  {escape(chk.message)}")
    for m in chk.mismatches:
        c.print(f"  {escape(chk.output)}{m.index}: got {m.got!r}, expected {m.expected!r}", highlight=False)


def run(events, console: Console, quiet: bool) -> Report:
    """Drive a pipeline generator, rendering as it goes; return the final report."""
    final = None
    with Live(console, quiet) as live:
        for ev in events:
            if isinstance(ev, Finished):
                final = ev.report
            else:
                live(ev)
    assert final is not None
    return final


def progress(p) -> str:
    """`judge list`'s solved column: ✓ and the best speedup, or how many attempts failed."""
    if p is None:
        return ""
    if p.solved:
        return "✓" + (f" {p.best_speedup:.2f}×" if p.best_speedup is not None else "")
    return f"{p.attempts} attempt" + ("s" if p.attempts != 1 else "")


def cpu_case(c: Console, case: Any, total: int) -> None:
    """One workload of `judge test --cpu` (judge/engine/cpu_check.py's CaseResult)."""
    mark = "[green]✓[/]" if case.passed else "[red]✗[/]"
    c.print(f"  {mark} test {case.index}/{total}  {escape(case.workload)}  "
            f"[dim]{case.launches} launch{'es' if case.launches != 1 else ''}[/]")


def cpu_check(c: Console, r: Any) -> None:
    """The end of `judge test --cpu`: the failing workload's evidence, then the verdict line."""
    for case in r.cases:
        for chk in case.checks:
            if not chk.passed:
                mismatch(c, case.workload, chk)
    if r.skipped:
        c.print(f"[dim]skipped (too large for the interpreter): {escape('; '.join(r.skipped))}[/]", highlight=False)
    where = f"{escape(r.problem)} · {escape(r.solution)} ({r.seconds:.1f} s)"
    if r.status is None:
        c.print(f"[bold green]PASSED[/] on CPU, {len(r.cases)} test workloads through Triton's interpreter "
                f"(a practice check: not timed, not recorded) · {where}")
    else:
        c.print(f"[{STYLE.get(r.status, 'bold red')}]{r.status.value}[/] on CPU · {where}")
    if r.message:
        c.print(escape(r.message), highlight=False)
    if r.cases:  # the file ran (a static verdict runs nothing)
        c.print(f"[dim]{'sandboxed' if r.sandboxed else 'not sandboxed'} (its own process"
                f"{', seccomp filter' if r.sandboxed else ''})[/]")
