"""fair_timing.py's table (issue 17): the raw numbers a run measures, each answer's rows held
against the targets, the markdown table, and parts measured apart joined into one (`--merge`).
Pure Python: no GPU, no subprocess, no judge import; scripts/measure/fair_timing.py measures."""
from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

A_TARGET = 0.03  # |judge median / ncu per call - 1|
B_TARGET = 0.02  # |judged baseline median / CUDA-graph replay median - 1|
C_TARGET = 0.01  # max / min - 1 of the judge's medians over the runs
WALL_ALLOWANCE_S = {"easy": 3.0, "medium": 4.0, "hard": 6.0, "hard+": 25.0, "hard++": 25.0}  # over torch's start
TEST_ALLOWANCE_S = 1.5  # `judge test`'s wall time over torch's start, every level
TORCH_START = "import torch; torch.zeros(1, device='cuda')"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- what is measured (raw) ------------------------------------------------------------------------
@dataclass
class Submit:
    """One `judge submit --json --no-record` run."""

    status: str
    message: str = ""
    wall_s: float | None = None  # the report's
    subprocess_s: float = 0.0  # this script's wall clock around the subprocess
    medians: dict[str, float] = field(default_factory=dict)  # workload → the judge's median, ms
    baselines: dict[str, dict[str, float]] = field(default_factory=dict)  # workload → baseline → median, ms
    environment: dict[str, Any] = field(default_factory=dict)
    torch_start_s: float | None = None  # torch's CUDA start, timed just before this run (`excess_s`)
    phases_s: dict[str, float] = field(default_factory=dict)  # the report's: where the wall time went
    warm_up: list[dict[str, Any]] = field(default_factory=list)  # the report's, a Triton answer's per worker

    @property
    def accepted(self) -> bool:
        return self.status == "ACCEPTED"


@dataclass
class NcuShape:
    """One `judge profile --json` of one shape: its kernels and the sums per profiled call."""

    workload: str
    calls: int
    kernels: list[dict[str, Any]] = field(default_factory=list)  # {"kernel", "duration_ns"} in launch order
    per_call_ms: list[float] = field(default_factory=list)
    error: str | None = None
    tuned: list[str] = field(default_factory=list)  # a Triton answer's: what its autotuners kept here

    @property
    def ms(self) -> float | None:
        return statistics.median(self.per_call_ms) if self.per_call_ms else None


@dataclass
class GraphTiming:
    """A baseline's CUDA-graph replays on one shape (times in ms), or why there are none."""

    times_ms: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None


@dataclass
class AnswerRaw:
    problem: str
    level: str
    answer: str
    workloads: list[str]
    baselines: list[str]
    submits: list[Submit] = field(default_factory=list)
    ncu: list[NcuShape] = field(default_factory=list)
    tests: list[Submit] = field(default_factory=list)  # `judge test --json` runs (reports without benchmarks)


Graphs = dict[str, dict[str, GraphTiming]]  # workload → baseline name → replays


# -- the rows, held against the targets ------------------------------------------------------------
def timed_picks(runs: list[Submit], workload: str) -> tuple[str, ...]:
    """The configurations a Triton answer's accepted runs kept most often on this shape (the first
    run's on a tie), for `judge profile --tuned`: the profile then times what the runs timed.
    () for a CUDA answer."""
    picks = [kept(s, workload) for s in runs if s.accepted]
    picks = [p for p in picks if p]
    return max(picks, key=picks.count) if picks else ()


def kept(run: Submit, workload: str) -> tuple[str, ...]:
    """What a Triton answer's autotuners kept for this shape in a run's timed worker (the report's
    `warm_up[].tuned`, "shape: kernel: config"); () for a CUDA answer."""
    prefix = f"{workload}: "
    return tuple(sorted(line[len(prefix):] for w in run.warm_up if w.get("phase") == "timed"
                        for line in w.get("tuned", []) if line.startswith(prefix)))


def rel(value: float, reference: float) -> float:
    return value / reference - 1


def spread(values: Sequence[float]) -> float:
    return max(values) / min(values) - 1


def short(error: str, n: int = 120) -> str:
    one = " ".join(error.split())
    return one if len(one) <= n else one[:n - 1] + "…"


@dataclass
class Cell:
    """One measured column: what the table shows, and whether its target is met (None: n/a)."""

    text: str
    ok: bool | None = None
    value: float | None = None  # the number held against the target (a ratio - 1, or seconds)


@dataclass
class BaselineCell:
    name: str
    judged_ms: float | None
    graph_ms: float | None
    cell: Cell


@dataclass
class Row:
    problem: str
    answer: str
    shape: str
    judge_ms: float | None
    ncu_ms: float | None
    a: Cell
    b: list[BaselineCell]
    c: Cell
    d: Cell | None  # on an answer's first row only
    e: Cell | None = None  # `judge test`'s wall time: on an answer's first row only


def na(why: str) -> Cell:
    return Cell(f"n/a ({short(why)})")


def against(judged_ms: float | None, reference_ms: float | None, target: float, why_none: str,
            why_no_reference: str, shown: str = "") -> Cell:
    """The judge's number against its reference, relative (`shown` before the percentage), or
    why there is none."""
    if judged_ms is None:
        return na(why_none)
    if reference_ms is None:
        return na(why_no_reference)
    d = rel(judged_ms, reference_ms)
    return Cell(f"{shown}{100 * d:+.2f}%", abs(d) <= target, d)


def build_rows(raw: AnswerRaw, graphs: Graphs, torch_start_s: float | None, runs: int) -> list[Row]:
    """One row per shape of one answer, every column held against its target."""
    ok = [s for s in raw.submits if s.accepted]
    failed = [s for s in raw.submits if not s.accepted]
    why_none = f"{failed[0].status}: {failed[0].message}" if failed and not ok else \
        "not in the judge's reports" if ok else "no run"
    note = f" ({len(ok)} of {runs} runs ACCEPTED)" if failed and ok else ""
    rows = []
    for i, w in enumerate(raw.workloads):
        medians = [s.medians[w] for s in ok if w in s.medians]
        judge_ms = statistics.median(medians) if medians else None
        ncu = raw.ncu[i] if i < len(raw.ncu) else None
        ncu_ms = ncu.ms if ncu else None
        a = against(judge_ms, ncu_ms, A_TARGET, why_none, ncu.error if ncu and ncu.error else "not profiled")
        picks = {kept(s, w) for s in ok} - {()}  # a Triton answer's: the configurations the runs timed
        if ncu and ncu.tuned and picks and tuple(sorted(ncu.tuned)) not in picks:
            a.text += " (profiled another configuration than the runs timed)"
        b = []
        for name in raw.baselines:
            judged = [s.baselines[w][name] for s in ok if name in s.baselines.get(w, {})]
            judged_ms = statistics.median(judged) if judged else None
            g = graphs.get(w, {}).get(name)
            graph_ms = g.median_ms if g else None
            cell = against(judged_ms, graph_ms, B_TARGET, why_none, g.error if g and g.error else "not replayed",
                           f"{judged_ms:.4f} / {graph_ms:.4f}, " if judged_ms and graph_ms else "")
            b.append(BaselineCell(name, judged_ms, graph_ms, cell))
        if len(medians) < 2:
            c = na(why_none if not medians else "one run")
        else:
            sp = spread(medians)
            c = Cell(f"{100 * sp:.2f}%{note}", sp <= C_TARGET, sp)
            if len(picks) > 1:
                c.text += f" (the runs' autotuners kept {len(picks)} different configurations)"
        rows.append(Row(raw.problem, raw.answer, w, judge_ms, ncu_ms, a, b, c,
                        wall_cell(raw, ok, torch_start_s, why_none) if i == 0 else None,
                        test_cell(raw.tests, torch_start_s) if i == 0 and raw.tests else None))
    return rows


def excess_s(runs: list[Submit], torch_start_s: float | None) -> float | None:
    """The median of the runs' wall clocks over torch's CUDA start: over the start timed just before
    each run where every run has one (the machine's state drifts: on a fresh H200, torch's start took
    4.7-5.4 s, and 2.1 s fifteen minutes later), else over the script's one start; None without either."""
    if runs and all(s.torch_start_s is not None for s in runs):
        return statistics.median(s.subprocess_s - s.torch_start_s for s in runs)  # type: ignore[operator]
    if torch_start_s is None or not runs:
        return None
    return statistics.median(s.subprocess_s for s in runs) - torch_start_s


def beyond_warm_ups_s(runs: list[Submit]) -> float | None:
    """A Triton answer's runs: the median of each run's wall clock over the torch start just before
    it, less its warm-ups (the submission's own compiling and tuning, which the report shows apart:
    docs/triton.md). None for a CUDA answer (no warm-ups) or runs without paired starts."""
    if not runs or not all(s.warm_up for s in runs) or any(s.torch_start_s is None for s in runs):
        return None
    return statistics.median(s.subprocess_s - (s.torch_start_s or 0.0)  # set in every run: checked above
                             - sum(float(w.get("seconds", 0.0)) for w in s.warm_up) for s in runs)


def wall_cell(raw: AnswerRaw, ok: list[Submit], torch_start_s: float | None, why_none: str) -> Cell:
    if not ok:
        return na(why_none)
    return over_start_cell(ok, torch_start_s, WALL_ALLOWANCE_S[raw.level], report=True)


def test_cell(tests: list[Submit], torch_start_s: float | None) -> Cell:
    """`judge test`'s wall time (median of its ACCEPTED runs) against torch's start + TEST_ALLOWANCE_S."""
    ok = [s for s in tests if s.accepted]
    if not ok:
        return na(f"{tests[0].status}: {tests[0].message}" if tests else "no run")
    note = f" ({len(ok)} of {len(tests)} runs ACCEPTED)" if len(ok) < len(tests) else ""
    return over_start_cell(ok, torch_start_s, TEST_ALLOWANCE_S, note=note)


def over_start_cell(ok: list[Submit], torch_start_s: float | None, allowance: float, report: bool = False,
                    note: str = "") -> Cell:
    """The runs' median wall clock against torch's start + `allowance`: each run against the start
    timed just before it where there are such starts (`excess_s`), else against the one start."""
    sub = statistics.median(s.subprocess_s for s in ok)
    inside = [s.wall_s for s in ok if s.wall_s is not None]
    shown = f"{sub:.2f}" + (f" (report {statistics.median(inside):.2f})" if report and inside else "")
    over = excess_s(ok, torch_start_s)
    if over is None:
        return Cell(f"{shown}{note}; n/a (torch's start not measured)", None, sub)
    if all(s.torch_start_s is not None for s in ok):
        beyond = beyond_warm_ups_s(ok)
        warm = f" (+ {beyond:.2f} beyond its warm-ups)" if beyond is not None else ""
        return Cell(f"{shown}: its start + {over:.2f}{warm} ≤ + {allowance:g}{note}", over <= allowance, over)
    assert torch_start_s is not None
    return Cell(f"{shown} ≤ {torch_start_s + allowance:.2f}{note}", over <= allowance, sub)


@dataclass
class Header:
    environment: dict[str, Any]
    date: str
    command: str
    torch_start_s: float | None
    runs: int
    replays: int
    ncu_calls: int
    torch_starts: list[float] = field(default_factory=list)  # every start timed, the first one alone
    python: str = field(default_factory=lambda: sys.version.split()[0])
    commit: str | None = None  # `git describe --always --dirty` of the judge measured, where known
    # When the measuring began and ended (ISO 8601, UTC) and on which host: `--merge` says which parts
    # ran at the same time, on other GPUs of the host or on the same GPU (None: written before these).
    started: str | None = None
    finished: str | None = None
    host: str | None = None
    # Where a run was stopped (SIGTERM, Ctrl-C) before it measured everything: what it was doing. Its
    # JSON and table keep what was measured; the rest reads n/a ("not profiled", "not replayed").
    cut_off: str | None = None


def beside(parts: Sequence[Header]) -> list[list[int]]:
    """For each part, the others that ran on the same host while it did (by their recorded start and
    end; a part without them overlaps nothing)."""
    def span(h: Header) -> tuple[datetime, datetime] | None:
        if not (h.started and h.finished and h.host):
            return None
        return datetime.fromisoformat(h.started), datetime.fromisoformat(h.finished)
    spans = [span(h) for h in parts]
    return [[j for j, (o, b) in enumerate(zip(parts, spans))
             if j != i and a is not None and b is not None and o.host == h.host and a[0] < b[1] and b[0] < a[1]]
            for i, (h, a) in enumerate(zip(parts, spans))]


def mark(c: Cell) -> str:
    return c.text + ("" if c.ok is None else " pass" if c.ok else " **FAIL**")


def md(text: str) -> str:
    """A table cell's text: no line breaks, no column separators."""
    return " ".join(text.split()).replace("|", "\\|")


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.4f}"


COLUMNS = ("problem", "answer", "shape", "judge ms", "ncu ms/call", "(a) judge/ncu − 1, ≤ 3%",
           "(b) baseline: judged / graph ms, ≤ 2%", "(c) spread, ≤ 1%", "(d) submit s ≤ torch start + allowance",
           "(e) test s ≤ torch start + 1.5")


def _start(h: Header) -> str:
    return "not measured" if h.torch_start_s is None else f"{h.torch_start_s:.2f} s" + (
        f" median of {len(h.torch_starts)} ({min(h.torch_starts):.2f}–{max(h.torch_starts):.2f} s)"
        if len(h.torch_starts) > 1 else "")


def _count(parts: Sequence[Header], name: str) -> str:
    """A count the parts share ("5"), or their range ("3–5")."""
    values = sorted({getattr(h, name) for h in parts})
    return str(values[0]) if len(values) == 1 else f"{values[0]}–{values[-1]}"


def _at(h: Header) -> str:
    return f"{h.date}" + (f" at {h.commit}" if h.commit else "")


def _cut(h: Header) -> str:
    return f"; **cut off** {h.cut_off}, what it had not measured reads n/a" if h.cut_off else ""


def same_gpu(a: Header, b: Header) -> bool:
    gpu = a.environment.get("gpu_uuid")
    return gpu is not None and b.environment.get("gpu_uuid") == gpu


def _beside(h: Header, parts: Sequence[Header], others: Sequence[int]) -> str:
    """What ran on the part's host while it did: other GPUs' parts, or (named as such) its own GPU's."""
    if not others:
        return ""
    same = [j for j in others if same_gpu(h, parts[j])]
    rest = [j for j in others if j not in same]
    said = []
    if rest:
        said.append("while " + ", ".join(f"[{j + 1}]" for j in rest) + " ran on another GPU of its host")
    if same:
        said.append("**while " + ", ".join(f"[{j + 1}]" for j in same) + " ran on the same GPU**")
    return "; " + " and ".join(said)


def render(parts: Header | Sequence[Header], rows: Sequence[Row]) -> str:
    """The markdown table under its header: one measurement's, or the parts' a `--merge` joins."""
    parts = [parts] if isinstance(parts, Header) else list(parts)
    h = parts[0]
    env = h.environment
    allow = " / ".join(f"{v:g}" for v in dict.fromkeys(WALL_ALLOWANCE_S.values()))
    device = (f"Device: {env.get('gpu') or '?'}, driver {env.get('driver') or '?'}, "
              f"CUDA {env.get('cuda_runtime') or '?'} (nvcc {env.get('nvcc') or '?'}), "
              f"torch {env.get('torch') or '?'}, Python {h.python}")
    how = (f"torch's CUDA start (`python3 -c \"{TORCH_START}\"`, once with the file cache warmed, then before "
           f"each pair of a `judge submit` and a `judge test`; (d) and (e) hold each run against its pair's start)")
    if len(parts) == 1:
        lines = [f"{device}; measured {_at(h)} with", "", "```bash", h.command, "```", "",
                 f"{how}: {_start(h)}{_cut(h)}."]
    else:
        lines = [f"{device}; measured in {len(parts)} parts, each row from its own part's numbers ({how}):", ""]
        others = beside(parts)
        lines += [f"- [{i + 1}] {_at(p)}: `{p.command}`; torch's start {_start(p)}" + _beside(p, parts, others[i])
                  + _cut(p) for i, p in enumerate(parts)]
        lines.append("")
    runs = _count(parts, "runs")
    lines += [
        f"Targets: (a) the judge's median (of {runs} runs) within {100 * A_TARGET:g}% of Nsight Compute's summed "
        f"kernel time per solve() call (median of {_count(parts, 'ncu_calls')} profiled calls); (b) each baseline's "
        f"judged median within {100 * B_TARGET:g}% of a CUDA-graph replay of the same call "
        f"(after the baseline worker's gate: inputs read, L2 flushed; median of "
        f"{_count(parts, 'replays')}); (c) the spread max/min − 1 of the judge's median over {runs} runs "
        f"≤ {100 * C_TARGET:g}%; "
        f"(d) `judge submit`'s wall clock over torch's start (median of the runs; the report's wall_s beside it) ≤ + "
        f"{allow} s for easy / medium / hard / hard+ and hard++; (e) `judge test`'s wall clock (median of the runs, "
        f"build cached) ≤ torch's start + {TEST_ALLOWANCE_S:g} s.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in rows:
        b = "<br>".join(f"{x.name}: {mark(x.cell)}" for x in r.b) or "n/a (no baseline)"
        cells = [r.problem, Path(r.answer).name, r.shape, _ms(r.judge_ms), _ms(r.ncu_ms), mark(r.a), b, mark(r.c),
                 mark(r.d) if r.d else "(as above)", once_per_answer(r, r.e)]
        lines.append("| " + " | ".join(md(c) for c in cells) + " |")
    passed, failed, missing = tally(rows)
    lines += ["", f"{passed} of {passed + len(failed)} measured targets met; {missing} not measured (n/a)."]
    if failed:
        lines.append("Not met: " + "; ".join(failed) + ".")
    return "\n".join(lines) + "\n"


def once_per_answer(r: Row, c: Cell | None) -> str:
    """A column measured once per answer: on its first row (the one with (d)), "(as above)" after."""
    return mark(c) if c else "(as above)" if r.d is None else "n/a (no run)"


def cells_of(r: Row) -> list[tuple[str, Cell]]:
    return ([("(a)", r.a)] + [(f"(b) {x.name}", x.cell) for x in r.b] + [("(c)", r.c)]
            + ([("(d)", r.d)] if r.d else []) + ([("(e)", r.e)] if r.e else []))


def tally(rows: Sequence[Row]) -> tuple[int, list[str], int]:
    """(targets met, the ones not met as `problem answer shape column`, cells not measured)."""
    passed, failed, missing = 0, [], 0
    for r in rows:
        for what, c in cells_of(r):
            if c.ok is None:
                missing += 1
            elif c.ok:
                passed += 1
            else:
                failed.append(f"{r.problem} {Path(r.answer).name} {r.shape} {what}")
    return passed, failed, missing


# -- parts measured apart, joined (`--merge`) ------------------------------------------------------
SETUP = ("gpu", "driver", "cuda_runtime", "nvcc", "torch")  # what the parts of one table must share


class PartError(ValueError):
    """A `--merge` file that is not a `--json` of this script, or parts of different setups."""


@dataclass
class Part:
    path: Path
    header: Header
    raws: list[AnswerRaw]
    graphs: dict[str, Graphs]  # problem → its baselines' replays


def load_part(path: Path) -> Part:
    """A `--json` file of this script, back into its dataclasses."""
    try:
        data = json.loads(path.read_text())
        raws = [AnswerRaw(**{**r, "submits": [Submit(**x) for x in r["submits"]],
                             "tests": [Submit(**x) for x in r.get("tests", [])],
                             "ncu": [NcuShape(**x) for x in r["ncu"]]}) for r in data["answers"]]
        graphs = {p: {w: {b: GraphTiming(**g) for b, g in bs.items()} for w, bs in gs.items()}
                  for p, gs in data["graphs"].items()}
        return Part(path, Header(**data["header"]), raws, graphs)
    except OSError as e:
        raise PartError(f"{path}: {e.strerror or e}") from None
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise PartError(f"{path}: not a fair_timing.py --json file ({short(f'{type(e).__name__}: {e}', 80)})") from None


def merge(parts: Sequence[Part]) -> tuple[list[Header], list[Row]]:
    """One table's headers and rows from parts of one setup; an answer measured twice keeps the
    later part's numbers (the earlier is named on stderr)."""
    first = parts[0]
    for part in parts[1:]:
        for fact in SETUP:
            mine, theirs = part.header.environment.get(fact), first.header.environment.get(fact)
            if mine != theirs:
                raise PartError(f"{part.path} was measured with {fact} {mine}, {first.path} with {theirs}: "
                                "one table is one setup")
    headers = [p.header for p in parts]
    for i, others in enumerate(beside(headers)):
        for j in others:
            if j > i and same_gpu(headers[i], headers[j]):
                log(f"{parts[i].path} and {parts[j].path} ran at the same time on the same GPU: "
                    "each timed the other's load too")
    commits = list(dict.fromkeys(p.header.commit or "an unrecorded commit" for p in parts))
    if len(commits) > 1:  # allowed (the measured path may not have changed): said, and in the header
        log(f"the parts measured {len(commits)} commits: {', '.join(commits)}")
    latest: dict[tuple[str, str], tuple[Part, AnswerRaw]] = {}
    for part in parts:
        for raw in part.raws:
            key = (raw.problem, raw.answer)
            if key in latest:
                log(f"{raw.problem} {Path(raw.answer).name}: measured again in {part.path}, "
                    f"its numbers kept (not {latest[key][0].path}'s)")
            latest[key] = (part, raw)
    rows = [r for part, raw in latest.values()
            for r in build_rows(raw, part.graphs.get(raw.problem, {}), part.header.torch_start_s, part.header.runs)]
    return [p.header for p in parts], rows
