"""`judge verify`: every problem tests itself (reference solutions ACCEPTED, wrong/*.cu and wrong/*.py
as declared)."""
from __future__ import annotations

import json
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from judge import paths
from judge.contract.verdict import EXIT_NOT_YOUR_CODE, Status
from judge.problem import spec

from . import render
from .common import (
    ArchOpt,
    DebugOpt,
    DeviceOpt,
    JsonOpt,
    Usage,
    budget_opt,
    err,
    errors,
    fail,
    out,
    problems_root,
    resolve,
)

app = typer.Typer()


@app.command()
def verify(problems: Optional[List[str]] = typer.Argument(None, help="Problems (default: all)"),
           as_json: bool = JsonOpt, debug: bool = DebugOpt,
           device: int = DeviceOpt,
           arch: Optional[str] = ArchOpt,
           table: bool = typer.Option(False, "--table", help="Also time every reference solution against the "
                                      "baseline and regenerate the table in reference_solutions/README.md."),
           budget: float = budget_opt(1.0, "With --table: most seconds (wall) of timing per shape."),
           build_only: bool = typer.Option(False, "--build-only", help="No GPU needed: build every file and run "
                                           "the static policy; COMPILE_ERROR and REJECTED controls reach their "
                                           "verdict, the rest must build.")) -> None:
    """Judge every reference solution and known-wrong control; each must get its declared status.
    Needs a GPU (without one it says so and exits 3 at once), unless --build-only."""
    from judge.engine.stats import TimingPolicy
    from judge.gpu import device as gpus
    from judge.practice.verify import verify as run_verify

    with errors(as_json, debug):
        probs = [resolve(p) for p in problems] if problems else \
            [spec.load_problem(p) for p in spec.find_problems(problems_root())]
        if build_only:
            if table:
                raise Usage("--table times the model answers on a GPU; it does not go with --build-only")
            code = _build_only(probs, arch or "sm_90a", as_json)
            raise typer.Exit(code)
        if not gpus.gpus():
            fail(as_json, EXIT_NOT_YOUR_CODE, "no GPU: `judge verify` judges every file on an NVIDIA GPU and NVML "
                 "sees none here (`judge doctor`); `judge verify --build-only` builds every file and runs the "
                 "static policy without one")
        rows = []
        with render.Steps(err) as steps:
            def on_build(i: int, n: int, what: str) -> None:
                steps.update(f"building {i}/{n}: {what}", first=i == 1, last=i == n)

            def on_start(c, i: int, n: int) -> None:
                how = "timing" if table and c.kind == "reference" else "checking"
                steps.update(f"{how} {i + 1}/{n}: {c.problem.name}/{c.path.name}")

            policy = TimingPolicy(budget_s=budget) if table else None
            for checked in run_verify(probs, device, arch, on_build, policy, on_start):
                rows.append(checked)
                c = checked.control
                mark = "[green]✓[/]" if checked.ok else "[yellow]–[/]" if _no_gpu(checked) else "[red]✗[/]"
                steps.line(f"{mark} {c.problem.name}/{escape(c.path.name)}: {checked.report.status.value} "
                           f"(expected {c.expected.value})")
        no_gpu = [r for r in rows if _no_gpu(r)]
        failed = [r for r in rows if not r.ok and r not in no_gpu]
        if as_json:
            print(json.dumps([{"problem": r.control.problem.name, "file": str(r.control.path),
                               "expected": r.control.expected.value, "got": r.report.status.value,
                               "ok": r.ok, "message": r.report.message} for r in rows], indent=2))
        else:
            t = Table(title="verify")
            for col in ("problem", "file", "expected", "got", ""):
                t.add_column(col)
            for r in rows:
                t.add_row(r.control.problem.name, r.control.path.name, r.control.expected.value,
                          r.report.status.value, "ok" if r.ok else "no GPU" if r in no_gpu else "FAIL")
            out.print(t)
            for r in failed:
                out.print(f"[red]FAIL[/] {escape(str(r.control.path))}: expected {r.control.expected.value}, "
                          f"got {r.report.status.value}\n  {escape(r.report.message[:2000])}")
            out.print(f"{len(rows) - len(failed) - len(no_gpu)} ok, {len(failed)} failed, "
                      f"{len(no_gpu)} not judged (no GPU)")
        if table:
            written = _write_table(rows)
            if not as_json:
                out.print(f"table: {written}" if written else "table: nothing was timed, nothing written")
    raise typer.Exit(1 if failed else 3 if no_gpu else 0)


def _build_only(probs: list[spec.Problem], arch: str, as_json: bool) -> int:
    """`--build-only`: build and policy-check every control, show each, return the exit code (0 all
    fit, 1 a control got what it must not, 3 the judge could not build: nvcc missing)."""
    from judge.practice.verify import build_check

    with render.Steps(err) as steps:
        steps.update("building")
        rows = build_check(probs, arch, lambda i, n, what: steps.update(f"building {i}/{n}: {what}",
                                                                        first=i == 1, last=i == n))
        for r in rows:
            c = r.control
            mark = "[green]✓[/]" if r.ok else "[red]✗[/]"
            steps.line(f"{mark} {c.problem.name}/{escape(c.path.name)}: {r.got} (expected {c.expected.value})")
    broken = [r for r in rows if r.prepared.status is Status.INTERNAL_ERROR]
    failed = [r for r in rows if not r.ok and r not in broken]
    if as_json:
        print(json.dumps([{"problem": r.control.problem.name, "file": str(r.control.path),
                           "expected": r.control.expected.value, "got": r.got, "ok": r.ok,
                           "settled": r.settled, "message": r.prepared.message} for r in rows], indent=2))
    else:
        t = Table(title=f"verify --build-only ({arch})")
        for col in ("problem", "file", "expected", "got", ""):
            t.add_column(col)
        for r in rows:
            t.add_row(r.control.problem.name, r.control.path.name, r.control.expected.value, r.got,
                      ("ok" if r.settled else "built (needs a GPU)") if r.ok else "FAIL")
        out.print(t)
        for r in failed + broken:
            out.print(f"[red]FAIL[/] {escape(str(r.control.path))}: expected {r.control.expected.value}, "
                      f"got {r.got}\n  {escape(r.prepared.message[:2000])}")
        settled = sum(r.ok and r.settled for r in rows)
        out.print(f"{settled} reached their verdict, {sum(r.ok for r in rows) - settled} built (their verdict "
                  f"needs a GPU), {len(failed) + len(broken)} failed; nothing was run")
    return EXIT_NOT_YOUR_CODE if broken else 1 if failed else 0


def _no_gpu(r) -> bool:
    """Built, but not judged: this machine has no GPU (not a failure of the control)."""
    return not r.ok and r.report.status == Status.INTERNAL_ERROR and "no CUDA device" in r.report.message


def _write_table(rows) -> str | None:
    """Merge the timed reference rows into reference_solutions/results.json and regenerate the
    README table from it. Returns what was written, or None when nothing was timed."""
    from judge.practice import results_table as table

    new = [r for r in (table.row(c.control.problem, c.report) for c in rows
                       if c.control.kind == "reference" and c.ok) if r is not None]
    if not new:
        return None
    folder = paths.solutions_root()
    data, readme = folder / "results.json", folder / "README.md"
    merged = [r for r in table.merge(table.load(data), new) if (folder / r.problem / r.solution).is_file()]
    table.save(data, merged)
    table.write_between_markers(readme, table.markdown(merged, "judge verify --table [PROBLEM...]"))
    return f"{len(new)} row(s) measured, {len(merged)} in {readme}"
