"""`judge verify`: every problem tests itself (reference solutions ACCEPTED, wrong/*.cu as declared)."""
from __future__ import annotations

import json
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from judge import spec
from judge.verdict import Status

from .app import DebugOpt, JsonOpt, app, err, errors, out, problems_root, resolve


@app.command()
def verify(problems: Optional[List[str]] = typer.Argument(None, help="Problems (default: all)"),
           as_json: bool = JsonOpt, debug: bool = DebugOpt,
           device: int = typer.Option(0, help="GPU index."),
           arch: Optional[str] = typer.Option(None, help="Build for this arch (default: the GPU's).")) -> None:
    """Judge every reference solution and known-wrong control; each must get its declared status."""
    from judge.verify import verify as run_verify

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

            for checked in run_verify(probs, device, arch, on_build):
                rows.append(checked)
                if status:
                    c = checked.control
                    mark = "[green]✓[/]" if checked.ok else "[yellow]–[/]" if _no_gpu(checked) else "[red]✗[/]"
                    err.print(f"{mark} {c.problem.name}/{c.path.name}: {checked.report.status.value} "
                              f"(expected {c.expected.value})")
                    status.update(f"judging ({len(rows)} done)")
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
    raise typer.Exit(1 if failed else 3 if no_gpu else 0)


def _no_gpu(r) -> bool:
    """Built, but not judged: this machine has no GPU (not a failure of the control)."""
    return not r.ok and r.report.status == Status.INTERNAL_ERROR and "no CUDA device" in r.report.message
