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

from judge.contract.report import BenchResult, Report
from judge.problem.spec import LEVELS, Problem, workload_id

BEGIN = "<!-- judge verify --table: begin (generated; edit by re-running the command) -->"
END = "<!-- judge verify --table: end -->"


class Shape(BaseModel):
    """One benchmark shape of one solution."""
    model_config = ConfigDict(extra="forbid")

    workload: str
    median_ms: float
    value: float  # in the row's unit
    pct_of_copy: float | None  # GB/s over the measured copy bandwidth (memory-bound problems)
    pct_of_roofline: float
    baseline_ms: float | None
    speedup: float | None  # baseline time / solution time
    memory_bound: bool | None = None  # this shape's bytes take longer than its FLOPs at the peaks
    # (None in rows measured before it was recorded)


class SolutionRow(BaseModel):
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
    shapes: list[Shape] = []  # every benchmark shape, in the spec's order


def largest_benchmark(problem: Problem) -> str:
    """The workload id of the benchmark with the most elements (the first of ties)."""
    def size(w) -> int:
        return sum(math.prod(problem.shape_of(t.name, w)) for t in problem.tensors)
    return workload_id(max(problem.spec.benchmarks, key=size))


def row(problem: Problem, report: Report) -> SolutionRow | None:
    """The row of one timed, ACCEPTED reference solution (None when nothing was timed)."""
    wid = largest_benchmark(problem) if problem.spec.benchmarks else None
    b: BenchResult | None = next((x for x in report.benchmarks if x.workload == wid), None)
    if b is None:
        return None
    env = report.environment
    memory_bound = bytes_bound(b, env.peak_copy_gbps, env.peak_tflops)
    shapes = [_shape(x, memory_bound, env.peak_copy_gbps, env.peak_tflops) for x in report.benchmarks]
    return SolutionRow(problem=problem.name, level=problem.spec.level, solution=Path(report.solution).name,
               workload=b.workload, unit="GB/s" if memory_bound else "TFLOPS",
               value=round(b.gbps if memory_bound else b.tflops, 1), pct_of_roofline=round(b.roofline_pct, 1),
               baseline=report.baseline_name,
               pct_of_baseline=round(100 * b.speedup, 1) if b.speedup is not None else None,
               geomean_speedup=round(report.geomean_speedup, 3) if report.geomean_speedup is not None else None,
               gpu=env.gpu, torch=env.torch, date=report.started_at[:10], shapes=shapes)


def bytes_bound(b: BenchResult, peak_copy_gbps: float | None, peak_tflops: float | None) -> bool:
    """Whether the shape's bytes take longer than its FLOPs at the peaks (a missing peak counts as
    taking no time)."""
    memory_ms = b.bytes / (peak_copy_gbps * 1e6) if peak_copy_gbps else 0.0
    compute_ms = b.flops / (peak_tflops * 1e9) if peak_tflops else 0.0
    return memory_ms >= compute_ms


def _shape(b: BenchResult, memory_bound: bool, peak_copy_gbps: float | None, peak_tflops: float | None) -> Shape:
    """One shape, in the row's unit (`memory_bound` is the row's); whether bytes bound this shape
    itself is recorded apart (fp8_gemm's rows are in GB/s, but only its decode shape is bound by them)."""
    base = b.baselines[0].median_ms if b.baselines else None
    own = bytes_bound(b, peak_copy_gbps, peak_tflops) if peak_copy_gbps and peak_tflops else None
    return Shape(workload=b.workload, median_ms=round(b.stats.median_ms, 4),
                 value=round(b.gbps if memory_bound else b.tflops, 1),
                 pct_of_copy=round(100 * b.gbps / peak_copy_gbps, 1) if memory_bound and peak_copy_gbps else None,
                 pct_of_roofline=round(b.roofline_pct, 1), baseline_ms=round(base, 4) if base else None,
                 speedup=round(b.speedup, 3) if b.speedup is not None else None, memory_bound=own)


def load(path: Path) -> list[SolutionRow]:
    if not path.exists():
        return []
    return [SolutionRow.model_validate(r) for r in json.loads(path.read_text())]


def merge(old: list[SolutionRow], new: list[SolutionRow]) -> list[SolutionRow]:
    """New rows replace old ones of the same problem and solution; rows of solutions that no
    longer exist are the caller's to drop (`keep`)."""
    by_key = {(r.problem, r.solution): r for r in old}
    by_key.update({(r.problem, r.solution): r for r in new})
    return sorted(by_key.values(), key=lambda r: (LEVELS.index(r.level), r.problem, r.solution))


def save(path: Path, rows: list[SolutionRow]) -> None:
    path.write_text(json.dumps([r.model_dump() for r in rows], indent=1) + "\n")


def markdown(rows: list[SolutionRow], command: str) -> str:
    gpus = sorted({r.gpu or "?" for r in rows})
    dates = sorted({r.date for r in rows})
    torches = sorted({r.torch or "?" for r in rows})
    mixed = len(gpus) > 1  # then each row names its GPU: rows of different GPUs do not compare
    head = (f"Measured by `{command}` on {', '.join(gpus)} (torch {', '.join(torches)}), "
            f"{dates[0] if dates else '?'}" + (f" to {dates[-1]}" if len(dates) > 1 else "") + ". "
            + ("The GPU column says where each row was measured; compare rows measured on one GPU only. " if mixed
               else "")
            + "Each row is the largest benchmark shape; % of baseline is the baseline's time over the "
            "solution's (above 100% is faster); % of roofline is the measured floor (copy bandwidth or "
            "peak FLOP rate of this GPU; in rows measured since 2026-11-28 11:00 UTC, no higher than the "
            "baseline's time in the same run) over the solution's time; the last column is the geomean "
            "speedup over every benchmark shape.\n\n")
    gpu_head, gpu_rule = ("| GPU ", "|---") if mixed else ("", "")
    lines = [f"| problem | level | solution | shape | measured | % of baseline | % of roofline | speedup (all shapes) "
             f"{gpu_head}|", f"|---|---|---|---|---|---|---|---{gpu_rule}|"]
    for r in rows:
        base = f"{r.pct_of_baseline:.0f}% of {r.baseline}" if r.pct_of_baseline is not None else "–"
        speed = f"{r.geomean_speedup:.2f}×" if r.geomean_speedup is not None else "–"
        gpu = f" {r.gpu or '?'} |" if mixed else ""
        lines.append(f"| {r.problem} | {r.level} | `{r.solution}` | {r.workload} | {r.value:,.1f} {r.unit} | "
                     f"{base} | {r.pct_of_roofline:.0f}% | {speed} |{gpu}")
    return head + "\n".join(lines) + "\n" + memory_bound_shapes(rows)


def memory_bound_shapes(rows: list[SolutionRow]) -> str:
    """Every benchmark shape of each memory-bound problem's fastest model answer: the most GB/s at
    the row's shape, whatever its language (a file's name says nothing of its speed)."""
    best: dict[str, SolutionRow] = {}
    for r in rows:
        if _memory_bound(r) and (r.problem not in best or r.value > best[r.problem].value):
            best[r.problem] = r
    if not best:
        return ""
    lines = ["", "### Memory-bound problems: every benchmark shape of the fastest model answer", "",
             "% of copy is the solution's GB/s (the problem's declared bytes over its time) over this GPU's "
             "measured copy bandwidth (the faster of a device-to-device copy and an add, counting bytes read "
             "and written); speedup is the baseline's median time over the solution's, both measured in the "
             "same run.", "",
             "| problem | solution | shape | median ms | GB/s | % of copy | baseline ms | speedup |",
             "|---|---|---|---|---|---|---|---|"]
    for r in best.values():
        for x in r.shapes:
            copy = f"{x.pct_of_copy:.1f}%" if x.pct_of_copy is not None else "–"
            base = f"{x.baseline_ms:.4f}" if x.baseline_ms is not None else "–"
            speed = f"{x.speedup:.3f}×" if x.speedup is not None else "–"
            lines.append(f"| {r.problem} | `{r.solution}` | {x.workload} | {x.median_ms:.4f} | {x.value:,.1f} | "
                         f"{copy} | {base} | {speed} |")
    return "\n".join(lines) + "\n"


def _memory_bound(r: SolutionRow) -> bool:
    """The copy bandwidth bounds every benchmark shape (not only the row's: fp8_gemm's M=128 shape
    is memory-bound, its square ones are not). Rows measured before shapes recorded their own bound
    are judged by their percentages: % of copy equals % of roofline (to the 0.1 that rounding
    leaves) only where bytes bound the shape, and two zeros say nothing (fp8_gemm's naive step)."""
    if r.unit != "GB/s" or not r.shapes:
        return False
    if all(x.memory_bound is not None for x in r.shapes):
        return all(x.memory_bound for x in r.shapes)
    return all(x.pct_of_copy is not None and x.pct_of_roofline > 0 and abs(x.pct_of_copy - x.pct_of_roofline) <= 0.1
               for x in r.shapes)


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
