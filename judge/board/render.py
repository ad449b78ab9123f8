"""Leaderboards as markdown (for `$GITHUB_STEP_SUMMARY`) and as JSON. Pure: boards in, text out."""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from judge.board.rank import KindBoard, ProblemBoard, Score
from judge.build import toolchain
from judge.contract.report import Report

OVERALL_RULE = ("Overall: ranked by the number of problems solved (latest result ACCEPTED and timed), "
                "then by the geomean of the speedups over the baseline across those problems. "
                "Results whose 95% intervals overlap share a rank, shown =N.")


def times(v: float) -> str:
    return f"{v:.1f}×" if v >= 100 else f"{v:.3f}×" if v >= 0.1 else f"{v:#.3g}×"


def interval(s: Score) -> str:
    return f"{times(s.low)[:-1]}–{times(s.high)}"


def language(report: Report) -> str | None:
    """The language of a result's file, by its suffix (judge/build/toolchain.py: `cuda`, `triton`);
    None when no toolchain takes it (a problem folder with no file in it)."""
    return toolchain.language_of(Path(report.solution))


def language_text(report: Report) -> str:
    return language(report) or "–"


def first_line(message: str, limit: int = 100) -> str:
    line = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[:limit - 1] + "…"


def baseline_name(pb: ProblemBoard) -> str:
    for r in pb.ranking:
        if r.report.baseline_name:
            return r.report.baseline_name
        if r.report.benchmarks and r.report.benchmarks[0].baselines:
            return r.report.benchmarks[0].baselines[0].name
    return "baseline"


def _cell(text: str) -> str:
    """Text as a markdown table cell: HTML escaped (a name is shown, never rendered: GitHub renders
    tags in markdown), backslashes and pipes escaped, one line."""
    return html.escape(text, quote=False).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown(boards: list[KindBoard]) -> str:
    if not boards:
        return "# Leaderboard\n\nNo leaderboard results yet (run `judge leaderboard run SUBMISSIONS_DIR`).\n"
    lines: list[str] = []
    for kb in boards:
        kind = _cell(kb.gpu_kind)
        lines += [f"# Leaderboard · {kind}", "", f"## Overall · {kind}", "", OVERALL_RULE, ""]
        if kb.overall:
            lines += ["| rank | participant | solved | geomean speedup | 95% interval |",
                      "|---:|---|---:|---:|---|"]
            lines += [f"| {e.rank_text} | {_cell(e.participant)} | {e.solved}/{e.attempted} | "
                      f"{times(e.score.point)} | {interval(e.score)} |" for e in kb.overall]
        else:
            lines.append("Nobody has solved a problem yet.")
        lines.append("")
        for pb in kb.problems:
            lines += [f"## {_cell(pb.problem)} · {kind}", ""]
            if pb.ranking:
                lines += [f"| rank | participant | language | speedup over {_cell(baseline_name(pb))} | 95% interval "
                          "| file | judged |",
                          "|---:|---|---|---:|---|---|---|"]
                lines += [f"| {r.rank_text} | {_cell(r.participant)} | {language_text(r.report)} | "
                          f"{times(r.score.point)} | {interval(r.score)} | "
                          f"{_cell(Path(r.report.solution).name)} | {r.report.started_at} |" for r in pb.ranking]
                lines.append("")
            if pb.unranked:
                lines += ["Not ranked:", "", "| participant | language | status | message | file |",
                          "|---|---|---|---|---|"]
                lines += [f"| {_cell(u.participant)} | {language_text(u.report)} | {u.report.status.value} | "
                          f"{_cell(first_line(u.report.message) or '(ACCEPTED, not timed)')} | "
                          f"{_cell(Path(u.report.solution).name)} |" for u in pb.unranked]
                lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def to_json(boards: list[KindBoard]) -> dict[str, Any]:
    out_boards: list[dict[str, Any]] = []
    out = {"overall_rule": OVERALL_RULE, "boards": out_boards}
    for kb in boards:
        out_boards.append({
            "gpu_kind": kb.gpu_kind,
            "overall": [{"rank": e.rank, "rank_text": e.rank_text, "tied": e.tied, "participant": e.participant,
                         "solved": e.solved, "attempted": e.attempted, "speedup": _r(e.score.point),
                         "ci_low": _r(e.score.low), "ci_high": _r(e.score.high)} for e in kb.overall],
            "problems": [{
                "problem": pb.problem,
                "baseline": baseline_name(pb),
                "ranking": [{
                    "rank": r.rank, "rank_text": r.rank_text, "tied": r.tied, "participant": r.participant,
                    "language": language(r.report), "speedup": _r(r.score.point), "ci_low": _r(r.score.low),
                    "ci_high": _r(r.score.high),
                    "file": r.report.solution, "sha256": r.report.source_sha256, "judged_at": r.report.started_at,
                    "shapes": [{"workload": b.workload, "median_ms": _r(b.stats.median_ms),
                                "ci_low_ms": _r(b.stats.ci_low_ms), "ci_high_ms": _r(b.stats.ci_high_ms),
                                "baseline_ms": _r(b.baselines[0].median_ms) if b.baselines else None,
                                "speedup": _r(b.speedup), "tflops": _r(b.tflops), "gbps": _r(b.gbps),
                                "floor_ms": _r(b.floor_ms), "roofline_pct": _r(b.roofline_pct)}
                               for b in r.report.benchmarks]} for r in pb.ranking],
                "unranked": [{"participant": u.participant, "language": language(u.report),
                              "status": u.report.status.value,
                              "message": first_line(u.report.message, 500), "file": u.report.solution,
                              "judged_at": u.report.started_at} for u in pb.unranked],
            } for pb in kb.problems],
        })
    return out
