"""The leaderboard as one static HTML page: inline CSS and inline SVG charts, no script, no fonts or
anything else from a network. Pure: boards in, text out.

Each problem's chart shows, per benchmark shape, each ranked participant's time and the
baseline's as a percentage of the roofline (floor ms / median ms: 100% is the roofline, drawn as
a dashed line); the candidates' bars carry their 95% interval as a whisker, and every bar's
tooltip gives the median in ms. At phone width every table scrolls inside its own box
(`.table-wrap`) and the charts scale down, so the page itself never scrolls sideways.
"""
from __future__ import annotations

from html import escape
from pathlib import Path
from statistics import median

from judge.board.rank import KindBoard, ProblemBoard
from judge.board.render import OVERALL_RULE, baseline_name, first_line, interval, language_text, times

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")
BASELINE_COLOUR = "#7f7f7f"
ROOFLINE_COLOUR = "#d62728"
MAX_SERIES = len(PALETTE)  # the chart shows the top ranked; the tables show everyone

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 2rem;
       color: #1b1b1b; background: #fff; max-width: 1200px; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.3rem; margin-top: 2.2rem; } h3 { font-size: 1.1rem; margin-top: 1.8rem; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25rem 0.7rem; text-align: left; white-space: nowrap; }
td.msg { white-space: normal; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.rule, .note { color: #555; font-size: 0.85rem; }
.status { font-weight: 600; color: #b00020; }
.legend span { display: inline-block; margin-right: 1rem; font-size: 0.85rem; }
.legend i { display: inline-block; width: 0.9rem; height: 0.9rem; margin-right: 0.3rem; vertical-align: -0.1rem; }
.legend i.line { height: 0; border-top: 2px dashed #d62728; width: 1.2rem; vertical-align: 0.25rem; }
svg.chart { display: block; max-width: 100%; height: auto; margin: 0.4rem 0; }
.table-wrap { max-width: 100%; overflow-x: auto; -webkit-overflow-scrolling: touch; }
@media (max-width: 640px) {
  body { margin: 0.8rem; }
  th, td { padding: 0.2rem 0.45rem; }
  table { font-size: 0.8rem; }
}
svg.chart text { font-family: inherit; font-size: 11px; fill: #333; }
svg.chart text.value { font-size: 9px; fill: #555; }
"""


def _num(v: float, digits: int = 4) -> str:
    return f"{v:.{digits}g}"


def _nice_step(top: float) -> float:
    raw = top / 5
    for e in range(-3, 8):
        for m in (1, 2, 2.5, 5):
            if m * 10 ** e >= raw:
                return m * 10 ** e
    return raw


def chart(pb: ProblemBoard) -> str:
    """The problem's SVG chart ("" when nothing is timed against a roofline)."""
    series = pb.ranking[:MAX_SERIES]
    shapes: list[str] = []
    for r in series:
        shapes += [b.workload for b in r.report.benchmarks if b.workload not in shapes and b.floor_ms > 0]
    if not shapes:
        return ""
    bars: dict[str, list[tuple[str, str, float, float | None, float | None, float]]] = {}
    for s in shapes:
        row: list[tuple[str, str, float, float | None, float | None, float]] = []
        for k, r in enumerate(series):
            b = next((b for b in r.report.benchmarks if b.workload == s), None)
            if b is None or b.floor_ms <= 0 or b.stats.median_ms <= 0:
                continue
            pct = 100 * b.floor_ms / b.stats.median_ms
            row.append((PALETTE[k], r.participant, pct, 100 * b.floor_ms / b.stats.ci_high_ms,
                        100 * b.floor_ms / b.stats.ci_low_ms if b.stats.ci_low_ms > 0 else None, b.stats.median_ms))
        base = [(b.floor_ms, b.baselines[0].median_ms) for r in series for b in r.report.benchmarks
                if b.workload == s and b.baselines and b.floor_ms > 0 and b.baselines[0].median_ms > 0]
        if base:
            floor, ms = base[0][0], median(m for _, m in base)
            row.append((BASELINE_COLOUR, baseline_name(pb), 100 * floor / ms, None, None, ms))
        bars[s] = row
    top = max([100.0] + [hi or pct for row in bars.values() for _, _, pct, _, hi, _ in row]) * 1.08
    step = _nice_step(top)
    bar_w, left, right, top_pad, plot_h, bottom = 20, 56, 16, 18, 220, 46
    group_w: float = max(150, (len(series) + 1) * bar_w + 40)
    width = max(left + group_w * len(shapes) + right, 440)
    group_w = (width - left - right) / len(shapes)
    height = top_pad + plot_h + bottom

    def y(v: float) -> float:
        return top_pad + plot_h * (1 - min(v, top) / top)

    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" data-problem="{escape(pb.problem)}">',
           f"<title>{escape(pb.problem)}: time per shape as % of the roofline</title>"]
    v = 0.0
    while v <= top:
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e4e4e4"/>'
                   f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{_num(v)}%</text>')
        v += step
    for g, s in enumerate(shapes):
        x0 = left + g * group_w + (group_w - len(bars[s]) * bar_w) / 2
        for i, (colour, who, pct, lo, hi, ms) in enumerate(bars[s]):
            x = x0 + i * bar_w
            kind = "baseline" if colour == BASELINE_COLOUR else "candidate"
            out.append(f'<rect class="bar {kind}" x="{x + 2:.1f}" y="{y(pct):.1f}" width="{bar_w - 4}" '
                       f'height="{max(y(0) - y(pct), 1):.1f}" fill="{colour}"><title>{escape(who)} · {escape(s)}: '
                       f'{_num(ms)} ms, {pct:.1f}% of the roofline</title></rect>')
            label = f"{pct:.0f}" if pct >= 10 else f"{pct:.1f}"
            out.append(f'<text class="value" x="{x + bar_w / 2:.1f}" y="{y(hi or pct) - 3:.1f}" '
                       f'text-anchor="middle">{label}</text>')
            if lo is not None and hi is not None:
                cx = x + bar_w / 2
                out.append(f'<line class="ci" x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(hi):.1f}" y2="{y(lo):.1f}" '
                           'stroke="#222" stroke-width="1.2"/>')
        out.append(f'<text x="{left + g * group_w + group_w / 2:.1f}" y="{top_pad + plot_h + 16}" '
                   f'text-anchor="middle">{escape(s)}</text>')
    out.append(f'<line class="roofline" x1="{left}" x2="{width - right}" y1="{y(100):.1f}" y2="{y(100):.1f}" '
               f'stroke="{ROOFLINE_COLOUR}" stroke-width="2.5" stroke-dasharray="7 4"><title>roofline (floor ms)'
               '</title></line>')
    out.append(f'<line x1="{left}" x2="{left}" y1="{top_pad}" y2="{y(0):.1f}" stroke="#888"/>'
               f'<line x1="{left}" x2="{width - right}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#888"/>')
    out.append(f'<text x="{left}" y="{height - 8}">% of roofline (floor ms ÷ median ms; higher is faster)</text>')
    out.append("</svg>")
    legend = "".join(f'<span><i style="background:{PALETTE[k]}"></i>{escape(r.participant)}</span>'
                     for k, r in enumerate(series))
    legend += (f'<span><i style="background:{BASELINE_COLOUR}"></i>{escape(baseline_name(pb))} (baseline)</span>'
               '<span><i class="line"></i>roofline</span>')
    return f'<div class="legend">{legend}</div>\n' + "\n".join(out)


def _problem(pb: ProblemBoard, kind: str) -> str:
    h = [f'<section class="problem" id="{escape(pb.problem)}"><h3>{escape(pb.problem)} · {escape(kind)}</h3>']
    if pb.ranking:
        h.append(f'<table><tr><th class="num">rank</th><th>participant</th><th>language</th><th class="num">'
                 f'speedup over {escape(baseline_name(pb))}</th><th>95% interval</th><th>file</th><th>judged</th></tr>')
        h += [f'<tr><td class="num">{r.rank_text}</td><td>{escape(r.participant)}</td>'
              f'<td>{escape(language_text(r.report))}</td><td class="num">{times(r.score.point)}</td>'
              f'<td>{interval(r.score)}</td>'
              f'<td>{escape(Path(r.report.solution).name)}</td><td>{escape(r.report.started_at)}</td></tr>'
              for r in pb.ranking]
        h.append("</table>")
        h.append(chart(pb))
        h.append('<details><summary>per-shape numbers</summary><table><tr><th>participant</th><th>shape</th>'
                 '<th class="num">median ms</th><th class="num">TFLOPS</th><th class="num">GB/s</th>'
                 '<th class="num">% roofline</th><th class="num">baseline ms</th></tr>')
        h += [f'<tr><td>{escape(r.participant)}</td><td>{escape(b.workload)}</td>'
              f'<td class="num">{_num(b.stats.median_ms)}'
              f'</td><td class="num">{b.tflops:.1f}</td><td class="num">{b.gbps:.0f}</td><td class="num">'
              f'{b.roofline_pct:.0f}%</td><td class="num">'
              f'{_num(b.baselines[0].median_ms) if b.baselines else "–"}</td></tr>'
              for r in pb.ranking for b in r.report.benchmarks]
        h.append("</table></details>")
    if pb.unranked:
        h.append('<p>Not ranked:</p><table><tr><th>participant</th><th>language</th><th>status</th><th>message</th>'
                 '<th>file</th></tr>')
        h += [f'<tr><td>{escape(u.participant)}</td><td>{escape(language_text(u.report))}</td>'
              f'<td class="status">{u.report.status.value}</td>'
              f'<td class="msg">{escape(first_line(u.report.message) or "(ACCEPTED, not timed)")}</td>'
              f'<td>{escape(Path(u.report.solution).name)}</td></tr>' for u in pb.unranked]
        h.append("</table>")
    return "\n".join(h) + "</section>"


def html(boards: list[KindBoard], title: str = "kernel-judge leaderboard", generated: str = "") -> str:
    body = [f"<h1>{escape(title)}</h1>"]
    if generated:
        body.append(f'<p class="note">generated {escape(generated)}</p>')
    if not boards:
        body.append("<p>No leaderboard results yet.</p>")
    for kb in boards:
        body.append(f"<h2>{escape(kb.gpu_kind)}</h2><h3>Overall · {escape(kb.gpu_kind)}</h3>"
                    f'<p class="rule">{escape(OVERALL_RULE)}</p>')
        if kb.overall:
            body.append('<table class="overall"><tr><th class="num">rank</th><th>participant</th>'
                        '<th class="num">solved</th><th class="num">geomean speedup</th><th>95% interval</th></tr>')
            body += [f'<tr><td class="num">{e.rank_text}</td><td>{escape(e.participant)}</td>'
                     f'<td class="num">{e.solved}/{e.attempted}</td><td class="num">{times(e.score.point)}</td>'
                     f'<td>{interval(e.score)}</td></tr>' for e in kb.overall]
            body.append("</table>")
        body += [_problem(pb, kb.gpu_kind) for pb in kb.problems]
    page = "\n".join(body).replace("<table", '<div class="table-wrap"><table').replace("</table>", "</table></div>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head>\n<body>\n" + page + "\n</body></html>\n")
