"""`judge verify`: every problem tests itself (reference solutions ACCEPTED, wrong/*.cu as declared)."""
from __future__ import annotations

import json
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from judge import paths
from judge.contract.verdict import Status
from judge.problem import spec

from .common import DebugOpt, JsonOpt, err, errors, out, problems_root, resolve

app = typer.Typer()


@app.command()
def verify(problems: Optional[List[str]] = typer.Argument(None, help="Problems (default: all)"),
           as_json: bool = JsonOpt, debug: bool = DebugOpt,
           device: int = typer.Option(0, help="GPU index."),
           arch: Optional[str] = typer.Option(None, help="Build for this arch (default: the GPU's)."),
           table: bool = typer.Option(False, "--table", help="Also time every reference solution against the "
                                      "baseline and regenerate the table in reference_solutions/README.md."),
           budget: float = typer.Option(1.0, help="With --table: seconds of GPU time per shape per solution.")) -> None:
    """Judge every reference solution and known-wrong control; each must get its declared status."""
    from judge.engine.stats import TimingPolicy
    from judge.practice.verify import verify as run_verify

    with errors(as_json, debug):
        probs = [resolve(p) for p in problems] if problems else \
            [spec.load_problem(p) for p in spec.find_problems(problems_root())]
        rows = []
        status = err.status("building", spinner="dots") if not as_json else None
        if status:
            status.start()
        try:
            def on_build(i: int, n: int, what: str) -> None:
                if status:
                    status.update(f"building {i}/{n}")

            def on_start(c, i: int, n: int) -> None:
                if status:
                    how = "timing" if table and c.kind == "reference" else "checking"
                    status.update(f"{how} {i + 1}/{n}: {c.problem.name}/{c.path.name}")

            policy = TimingPolicy(budget_s=budget) if table else None
            for checked in run_verify(probs, device, arch, on_build, policy, on_start):
                rows.append(checked)
                if status:
                    c = checked.control
                    mark = "[green]✓[/]" if checked.ok else "[yellow]–[/]" if _no_gpu(checked) else "[red]✗[/]"
                    err.print(f"{mark} {c.problem.name}/{c.path.name}: {checked.report.status.value} "
                              f"(expected {c.expected.value})")
        finally:
            if status:
                status.stop()
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
