"""The reference-solutions table (`judge verify --table`): what each model answer measured.

Measurements accumulate in a JSON file beside the README (one row per problem and solution, the
newest measurement wins), and the README's table is regenerated from all of it, so judging a few
problems updates their rows and keeps the others.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .report import BenchResult, Report
from .spec import LEVELS, Problem, workload_id

BEGIN = "<!-- judge verify --table: begin (generated; edit by re-running the command) -->"
END = "<!-- judge verify --table: end -->"


class Row(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem: str
    level: str
    solution: str
    workload: str  # the largest benchmark shape
    unit: str  # "GB/s" | "TFLOPS": whichever bound the roofline
    value: float
    pct_of_roofline: float
    baseline: str | None
    pct_of_baseline: float | None  # 100 × baseline time / solution time on that shape
    geomean_speedup: float | None  # over every benchmark shape
    gpu: str | None
    torch: str | None
    date: str


def largest_benchmark(problem: Problem) -> str:
    """The workload id of the benchmark with the most elements (the first of ties)."""
    def size(w) -> int:
        return sum(math.prod(problem.shape_of(t.name, w)) for t in problem.tensors)
    return workload_id(max(problem.spec.benchmarks, key=size))


def row(problem: Problem, report: Report) -> Row | None:
    """The row of one timed, ACCEPTED reference solution (None when nothing was timed)."""
    wid = largest_benchmark(problem) if problem.spec.benchmarks else None
    b: BenchResult | None = next((x for x in report.benchmarks if x.workload == wid), None)
    if b is None:
        return None
    env = report.environment
    memory_ms = b.bytes / (env.peak_copy_gbps * 1e6) if env.peak_copy_gbps else 0.0
    compute_ms = b.flops / (env.peak_tflops * 1e9) if env.peak_tflops else 0.0
    memory_bound = memory_ms >= compute_ms
    return Row(problem=problem.name, level=problem.spec.level, solution=Path(report.solution).name,
               workload=b.workload, unit="GB/s" if memory_bound else "TFLOPS",
               value=round(b.gbps if memory_bound else b.tflops, 1), pct_of_roofline=round(b.roofline_pct, 1),
               baseline=report.baseline_name,
               pct_of_baseline=round(100 * b.speedup, 1) if b.speedup is not None else None,
               geomean_speedup=round(report.geomean_speedup, 3) if report.geomean_speedup is not None else None,
               gpu=env.gpu, torch=env.torch, date=report.started_at[:10])


def load(path: Path) -> list[Row]:
    if not path.exists():
        return []
    return [Row.model_validate(r) for r in json.loads(path.read_text())]


def merge(old: list[Row], new: list[Row]) -> list[Row]:
    """New rows replace old ones of the same problem and solution; rows of solutions that no
    longer exist are the caller's to drop (`keep`)."""
    by_key = {(r.problem, r.solution): r for r in old}
    by_key.update({(r.problem, r.solution): r for r in new})
    return sorted(by_key.values(), key=lambda r: (LEVELS.index(r.level), r.problem, r.solution))


def save(path: Path, rows: list[Row]) -> None:
    path.write_text(json.dumps([r.model_dump() for r in rows], indent=1) + "\n")


def markdown(rows: list[Row], command: str) -> str:
    gpus = sorted({r.gpu or "?" for r in rows})
    dates = sorted({r.date for r in rows})
    torches = sorted({r.torch or "?" for r in rows})
    head = (f"Measured by `{command}` on {', '.join(gpus)} (torch {', '.join(torches)}), "
            f"{dates[0] if dates else '?'}" + (f" to {dates[-1]}" if len(dates) > 1 else "") + ". "
            "Each row is the largest benchmark shape; % of baseline is the baseline's time over the "
            "solution's (above 100% is faster); % of roofline is the measured floor (copy bandwidth or "
            "peak FLOP rate of this GPU) over the solution's time; the last column is the geomean "
            "speedup over every benchmark shape.\n\n")
    lines = ["| problem | level | solution | shape | measured | % of baseline | % of roofline | speedup (all shapes) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        base = f"{r.pct_of_baseline:.0f}% of {r.baseline}" if r.pct_of_baseline is not None else "–"
        speed = f"{r.geomean_speedup:.2f}×" if r.geomean_speedup is not None else "–"
        lines.append(f"| {r.problem} | {r.level} | `{r.solution}` | {r.workload} | {r.value:,.1f} {r.unit} | "
                     f"{base} | {r.pct_of_roofline:.0f}% | {speed} |")
    return head + "\n".join(lines) + "\n"


def write_between_markers(path: Path, text: str) -> None:
    """Replace what lies between the markers (appending them when the file has none)."""
    old = path.read_text() if path.exists() else ""
    block = f"{BEGIN}\n{text}{END}\n"
    if BEGIN in old and END in old:
        before, rest = old.split(BEGIN, 1)
        after = rest.split(END, 1)[1].lstrip("\n")
        path.write_text(before + block + after)
    else:
        path.write_text(old + ("\n" if old and not old.endswith("\n\n") else "") + block)
