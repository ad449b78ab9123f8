"""Proof that the judge's numbers are fair (issue 17), on a GPU machine with Nsight Compute:

    python3 scripts/measure/fair_timing.py [--problems a,b,c] [--all-answers | --answers F,G] [--runs 5]
                                           [--replays 100] [--ncu-calls 3] [--walls-only] [--json FILE] > out.md
    python3 scripts/measure/fair_timing.py --merge PART.json [PART.json ...] > out.md

For every problem (default: all under problems/), each model answer (reference_solutions/<problem>/;
default: only the last file in name order, the fastest; `--all-answers` for every one, `--answers`
for the files named) and every benchmark shape of the problem's spec, one table row:

(a) the judge's median (the median over the runs of `judge submit --json --no-record`'s
    benchmarks[i].stats.median_ms) against Nsight Compute's summed kernel duration per solve()
    call (one `judge profile PROBLEM FILE --shape i --calls C --json` per shape: the C profiled calls'
    kernels summed call by call, the median of those sums). Target: within 3%. ncu times kernels
    only (a memset or copy solve() enqueues is not in its sum) and each kernel alone (the gaps
    between one call's kernels are not either);
(b) each baseline's judged median (benchmarks[i].baselines[*].median_ms, the median over the runs)
    against a CUDA-graph replay of the same baseline call in this process: the shape's inputs
    drawn by the problem's generator (judge.problem.workloads.fill_inputs), the outputs allocated
    as the spec says, the baseline called with keyword arguments as the baseline worker does,
    captured in a torch.cuda.CUDAGraph after a warm-up, then REPLAYS replays timed with CUDA
    events, each preceded by the baseline worker's gate, unheld (it reads the call's inputs, then
    flushes L2 by reading a buffer of max(2 × L2, 64 MiB); outside the events), in
    batches and with rest as the judge times (docs/timing.md); the median. A baseline that cannot
    be captured reads `n/a (why)`. Target: within 2%;
(c) the spread of the judge's median over the runs, max/min - 1. Target: at most 1%;
(d) `judge submit`'s wall time over torch's CUDA start (`python3 -c "import torch;
    torch.zeros(1, device='cuda')"`, timed once after a run of `import torch` that warms the file
    cache, then again just before each submit, whose `judge test` run (e) follows it at once): the
    median over the ACCEPTED runs of each run's wall clock less the start timed just before the
    pair, the machine's state drifting over minutes (on a fresh H200 torch's start took 4.7-5.4 s,
    fifteen minutes later 2.1 s). The report's wall_s beside it.
    Target by the problem's level: easy ≤ + 3 s, medium + 4 s, hard + 6 s, hard+ and hard++ + 25 s.
    Shown on an answer's first row (one value per answer); a Triton answer's also says how much is
    left beyond its warm-ups (the submission's own compiling and tuning, `warm_up` in the report),
    while the target still holds the whole wall;
(e) `judge test`'s wall time (`judge test --json --no-record`, one after each submit: the build
    cached) over the same start, ≤ + 1.5 s on every level. Shown on an answer's
    first row, a Triton answer's beyond its warm-up as in (d).

A Triton answer's autotuners may keep different configurations in different runs: the report's
`warm_up[].tuned` says which (kept in `--json`). Its profiles run the configuration the runs kept
most often on that shape (`judge profile --tuned`), so (a) compares one kernel with itself; an (a)
cell whose profile ran another configuration than the runs timed says so, and a (c) cell whose
runs kept different ones says how many.

`--walls-only` measures (c), (d) and (e) alone (no profiles, no replays): a verdict-time check in
minutes.

`--merge` measures nothing: it renders one table from the `--json` files of runs made in parts (one
problem per process, a device session's time at a time), each row from its own part's numbers and
torch's starts, the header listing every part's date, commit and command. The parts must come from
one setup (GPU, driver, CUDA, nvcc, torch); an answer measured in two parts keeps the later file's.

stdout: a markdown table headed by the device, driver, CUDA, torch and the date, ready for
docs/benchmarks.md; `--json FILE` keeps every raw number. Progress goes to stderr. The subprocesses
and the profiles run first, the CUDA graphs last (so no CUDA context of this process sits beside a
judged run). Exit status 0 when every measured target is met, 1 when one is not or the run was
stopped before it measured everything (`--merge`: a part was), 2 on a bad command line. GPU 0 unless
`--device N` (nvidia-smi's numbering).

Stopped by SIGTERM (`timeout`) or Ctrl-C, a run keeps what it measured: the table and `--json` hold
every submit, test, profile and replay done by then, the rest reads n/a, and the header says what it
was measuring when it was stopped (`cut_off`; `--merge` repeats it on the part's line).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # `judge` without an install (on_device.sh installs it editable anyway)
sys.path.insert(0, str(Path(__file__).resolve().parent))  # fair_table, beside this file, also when loaded by path

from fair_table import (
    TORCH_START,
    AnswerRaw,
    Graphs,
    GraphTiming,
    Header,
    NcuShape,
    PartError,
    Submit,
    build_rows,
    load_part,
    log,
    merge,
    render,
    short,
    tally,
    timed_picks,
)

from judge import paths
from judge.build import toolchain
from judge.contract.report import Environment, Report
from judge.problem import spec as problem_spec
from judge.problem.spec import Problem, Workload, workload_id

MIN_REPLAYS = 50
SUBMIT_TIMEOUT_S = 1800


# -- the judge's JSON, and what to measure ----------------------------------------------------------
def pick_answers(files: Sequence[Path], all_answers: bool, names: set[str] | None = None) -> list[Path]:
    """The model answers to measure: those `names` names (file names), else all of them in name
    order, else only the last (the fastest) of each language."""
    ordered = sorted(files, key=lambda f: f.name)
    if names:
        return [f for f in ordered if f.name in names]
    if all_answers:
        return ordered
    last = {f.suffix: f for f in ordered}
    return sorted(last.values(), key=lambda f: f.name)


def submit_from_stdout(stdout: str, returncode: int, subprocess_s: float, stderr: str = "") -> Submit:
    """`judge submit --json`'s stdout → a Submit: the report's medians, or the error it printed."""
    try:
        data = json.loads(stdout)
    except ValueError:
        tail = " ".join((stderr or stdout).strip().splitlines()[-3:])
        return Submit(status="NO_REPORT", message=f"exit {returncode}, no JSON on stdout: {tail}"[:300],
                      subprocess_s=subprocess_s)
    if isinstance(data, dict) and "error" in data and "status" not in data:
        return Submit(status="ERROR", message=str(data["error"])[:300], subprocess_s=subprocess_s)
    try:
        report = Report.model_validate(data)
    except ValidationError as e:
        return Submit(status="NO_REPORT", message=f"not a report: {short(str(e), 200)}", subprocess_s=subprocess_s)
    return Submit(status=report.status.value, message=report.message[:300], wall_s=report.wall_s,
                  subprocess_s=subprocess_s,
                  medians={b.workload: b.stats.median_ms for b in report.benchmarks},
                  baselines={b.workload: {t.name: t.median_ms for t in b.baselines} for b in report.benchmarks},
                  environment=report.environment.model_dump(), phases_s=dict(report.phases_s),
                  warm_up=[w.model_dump() for w in report.warm_up])


def per_call_ms(durations_ns: Sequence[float | None], calls: int) -> list[float]:
    """The profiled kernels' durations (launch order, `calls` calls of solve()) → ms per call.

    When the kernels split evenly over the calls, one sum per call; otherwise (a solve() whose
    kernel count varies) the total divided by the calls, once. [] when a duration is missing."""
    if calls < 1 or not durations_ns or any(d is None for d in durations_ns):
        return []
    ns = [float(d) for d in durations_ns if d is not None]
    if len(ns) % calls:
        return [sum(ns) / calls / 1e6]
    k = len(ns) // calls
    return [sum(ns[i * k:(i + 1) * k]) / 1e6 for i in range(calls)]


def ncu_from_stdout(workload: str, calls: int, stdout: str, returncode: int, stderr: str = "") -> NcuShape:
    """`judge profile --json`'s stdout (judge/runner/profile.py's Profile.to_json, or an error)."""
    try:
        data = json.loads(stdout)
    except ValueError:
        tail = " ".join((stderr or stdout).strip().splitlines()[-3:])
        return NcuShape(workload, calls, error=f"exit {returncode}, no JSON on stdout: {tail}"[:300])
    if not isinstance(data, dict):
        return NcuShape(workload, calls, error="not a profile: " + short(stdout, 100))
    if "error" in data:
        return NcuShape(workload, calls, error=str(data["error"]).splitlines()[0][:300])
    kernels = [{"kernel": k.get("kernel", ""), "duration_ns": k.get("duration_ns")} for k in data.get("kernels", [])]
    sums = per_call_ms([k["duration_ns"] for k in kernels], calls)
    error = None if sums else "ncu gave no duration for every kernel" if kernels else "ncu profiled no kernel"
    if data.get("workload") not in (None, workload):
        error = f"profiled {data.get('workload')}, not {workload}"
        sums = []
    tuned = [t for t in data.get("tuned", []) if isinstance(t, str)]
    return NcuShape(workload, calls, kernels=kernels, per_call_ms=sums, error=error, tuned=tuned)


def merge_main(files: Sequence[Path]) -> int:
    try:
        headers, rows = merge([load_part(f) for f in files])
    except PartError as e:
        print(f"fair_timing.py: error: {e}", file=sys.stderr)
        return 2
    print(render(headers, rows), end="")
    _, failed, _ = tally(rows)
    return 1 if failed or any(h.cut_off for h in headers) else 0


def git_commit() -> str | None:
    """The measured tree's commit (`--dirty` when it has changes), None outside a git checkout."""
    try:
        p = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                           text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() or None if p.returncode == 0 else None


def environment_of(raws: Sequence[AnswerRaw]) -> dict[str, Any]:
    """The first judged report's environment (the judge's own account of the machine)."""
    return next((s.environment for r in raws for s in r.submits if s.environment), {})


# -- inputs for a baseline call (CPU-testable) ------------------------------------------------------
def make_tensors(torch: Any, problem: Problem, w: Workload, device: str) -> dict[str, Any]:
    """Every tensor parameter allocated as the spec says (shape, dtype); the inputs drawn by the
    problem's own generator (secret 0), the outputs left as allocated."""
    from judge.problem import workloads

    tensors = {p.name: torch.empty(problem.shape_of(p.name, w), device=device,
                                   dtype=getattr(torch, p.ctype.element.dtype))  # type: ignore[union-attr]
               for p in problem.tensors}
    workloads.fill_inputs(problem, w, tensors, secret=0, phase="fair_timing")
    return tensors


def call_kwargs(problem: Problem, w: Workload, tensors: dict[str, Any]) -> dict[str, Any]:
    """A baseline's keyword arguments, as the baseline worker calls it: every parameter of the
    signature by name (outputs included), ints as int and floats as float."""
    return {name: tensors[name] if ct.is_tensor else int(w[name]) if ct.scalar == "int" else float(w[name])
            for name, ct in problem.params}


# -- GPU and subprocess parts (the lead engineer's H100) -------------------------------------------
DEVICE: int | None = None  # --device: the GPU's NVML index (nvidia-smi's); None: the judge's default


def judge_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "cli", *args, *(["--device", str(DEVICE)] if DEVICE is not None else [])]


def judge_env() -> dict[str, str] | None:
    """The judge's own environment: it takes the GPU as `--device`, an NVML index, so this
    script's CUDA_VISIBLE_DEVICES (set for its own torch) must not reach it."""
    if DEVICE is None:
        return None
    return {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}


def measure_torch_start(warm: bool = True) -> float:
    """torch's CUDA start as a whole process (`TORCH_START`); with `warm`, after a run of `import
    torch` that warms the file cache."""
    if warm:
        subprocess.run([sys.executable, "-c", "import torch"], cwd=ROOT, capture_output=True)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", TORCH_START], cwd=ROOT, capture_output=True, text=True)
    t = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"torch's CUDA start failed: {short(p.stderr or p.stdout, 300)}")
    return t


def timed_start(starts: list[float], warm: bool) -> float | None:
    """`measure_torch_start`, appended to `starts`; None (logged) when torch cannot start CUDA."""
    try:
        t = measure_torch_start(warm)
    except RuntimeError as e:
        log(str(e))
        return None
    starts.append(t)
    return t


def run_judged(command: str, problem: Problem, answer: Path) -> Submit:
    """One `judge COMMAND PROBLEM ANSWER --json --no-record` (submit or test), timed from outside."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(judge_cmd(command, str(problem.root), str(answer), "--json", "--no-record"),
                           cwd=ROOT, env=judge_env(), capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Submit(status="NO_REPORT", message=f"judge {command} ran past {SUBMIT_TIMEOUT_S} s",
                      subprocess_s=time.perf_counter() - t0)
    return submit_from_stdout(p.stdout, p.returncode, time.perf_counter() - t0, p.stderr)


def run_submit(problem: Problem, answer: Path) -> Submit:
    return run_judged("submit", problem, answer)


def run_test(problem: Problem, answer: Path) -> Submit:
    """`judge test`: its report has no benchmarks; its wall time is (e)."""
    return run_judged("test", problem, answer)


def run_profile(problem: Problem, answer: Path, index: int, calls: int, tuned: Sequence[str] = ()) -> NcuShape:
    """`judge profile --json` of one shape; `tuned` (a Triton answer's): the configurations to run."""
    w = workload_id(problem.spec.benchmarks[index])
    try:
        p = subprocess.run(judge_cmd("profile", str(problem.root), str(answer), "--shape", str(index),
                                     "--calls", str(calls), "--json", *(x for t in tuned for x in ("--tuned", t))),
                           cwd=ROOT, env=judge_env(), capture_output=True, text=True, timeout=SUBMIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return NcuShape(w, calls, error=f"judge profile ran past {SUBMIT_TIMEOUT_S} s")
    return ncu_from_stdout(w, calls, p.stdout, p.returncode, p.stderr)


def graph_timings(problem: Problem, replays: int) -> Graphs:
    """Every baseline on every benchmark shape, captured once and replayed `replays` times."""
    import torch

    from judge.problem import workloads

    out: Graphs = {}
    for w in problem.spec.benchmarks:
        wid = workload_id(w)
        out[wid] = {}
        try:
            tensors = make_tensors(torch, problem, w, "cuda")
            kwargs = call_kwargs(problem, w, tensors)
            inputs = [tensors[t.name] for t in problem.tensors if not t.ctype.is_output]
        except Exception as e:  # noqa: BLE001 — recorded as the row's n/a
            for b in problem.baselines:
                out[wid][b.name] = GraphTiming(error=f"inputs: {type(e).__name__}: {e}")
            continue
        for b in problem.baselines:
            log(f"  graph {problem.name} {wid} {b.name}")
            try:
                fn = workloads.load_function(problem, b.impl)
            except Exception as e:  # noqa: BLE001 — recorded as the row's n/a
                out[wid][b.name] = GraphTiming(error=f"loading {b.impl}: {type(e).__name__}: {e}")
                continue
            out[wid][b.name] = replay(torch, fn, kwargs, replays, inputs)
            g = out[wid][b.name]
            log(f"    {g.median_ms:.4f} ms" if g.median_ms is not None else f"    n/a ({g.error})")
        del tensors, kwargs
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    return out


@dataclass
class GateHold:
    """The baseline worker's hold (judge/worker/hold.py) with the L2-flush buffer it reads: the hold
    has only the buffer's address, so the buffer must live as long as the hold. (Until 2026-11-29 it
    did not; replay() allocates nothing after making its gate, so its reads stayed within the
    allocator's cached block, but a probe that did allocate hit an illegal address.)"""
    hold: Any
    flush: Any


def gate_hold(torch: Any) -> GateHold:
    """The hold the baseline worker opens its gate with: a flush of twice L2 (at least the worker's
    minimum), judge_read's sink after it."""
    from judge.gpu.cudart import Runtime
    from judge.gpu.integrity import FLUSH_SINK_BYTES, Kernels
    from judge.worker.hold import Hold
    from judge.worker.protocol import FLUSH_MIN_BYTES

    rt = Runtime()
    nbytes = max(2 * rt.l2_bytes(), FLUSH_MIN_BYTES)
    flush = torch.full((nbytes + FLUSH_SINK_BYTES,), 0x55, dtype=torch.uint8, device="cuda")
    return GateHold(Hold(rt, Kernels(), flush.data_ptr(), nbytes), flush)


def input_table(torch: Any, inputs: Sequence[Any]) -> Any:
    """The gate's table of the call's inputs (pointer, bytes), which judge_hold reads first."""
    return torch.tensor([v for t in inputs for v in (t.data_ptr(), t.numel() * t.element_size())],
                        dtype=torch.int64, device="cuda")


def baseline_gate(torch: Any, inputs: Sequence[Any]) -> Callable[[], None]:
    """What the baseline worker runs on the GPU before each timed call (judge/worker/hold.py's
    `begin`, unheld): judge_hold reads the call's inputs (as a candidate's gate opens its sealed
    ones), then flushes L2 by reading judge_read's buffer, on the legacy default stream. So the
    replayed call starts with its inputs' pages as recently used as the judged call's."""
    gh, table = gate_hold(torch), input_table(torch, inputs)

    def gate() -> None:
        gh.hold.begin(False, table.data_ptr() if len(inputs) else 0, len(inputs))
    gate.buffers = (gh, table)  # type: ignore[attr-defined]  # alive as long as the gate
    return gate


def replay(torch: Any, fn: Callable, kwargs: dict[str, Any], replays: int,
           inputs: Sequence[Any] = ()) -> GraphTiming:
    """Warm-up, capture, then `replays` timed replays, each after the baseline worker's gate (it
    reads `inputs`, then flushes L2), in batches and with rest as the judge does it
    (judge/engine/timing.py, judge/worker/main.py's time_batch)."""
    from judge.engine.buffers import MAX_SLOTS
    from judge.engine.stats import TimingPolicy
    from judge.engine.timing import REST_PER_CALL_MS

    stage = "eager warm-up"
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn(**kwargs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        stage = "capture"
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            kept = fn(**kwargs)  # a returned tensor stays alive while the graph is replayed
        stage = "replay"
        gate = baseline_gate(torch, inputs)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(MAX_SLOTS)]

        def batch(k: int) -> list[float]:
            for i in range(k):
                gate()
                events[i][0].record()
                graph.replay()
                events[i][1].record()
            torch.cuda.synchronize()
            return [events[i][0].elapsed_time(events[i][1]) for i in range(k)]

        warm = batch(3)  # module loading, lazy initialisation; and the call's length
        k = 1 if statistics.median(warm) >= REST_PER_CALL_MS else MAX_SLOTS
        rest = TimingPolicy().rest
        times: list[float] = []
        while len(times) < replays:
            got = batch(min(k, replays - len(times)))
            times += got
            time.sleep(sum(got) * rest / 1000)
        del kept
        return GraphTiming(times_ms=times)
    except Exception as e:  # noqa: BLE001 — a baseline that cannot be captured is an n/a, not a stop
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 — the context may be gone; the next shape will say so
            pass
        return GraphTiming(error=f"{stage}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")


# -- the command line ------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="fair_timing.py", description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--problems", help="comma-separated problem names (default: every problem)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--all-answers", action="store_true", help="every model answer, not only the last (fastest)")
    which.add_argument("--answers", metavar="FILES",
                       help="comma-separated file names of model answers (e.g. 07_lean_tiles.cu): only these")
    ap.add_argument("--runs", type=int, default=5, help="judge submit runs per answer (default 5)")
    ap.add_argument("--replays", type=int, default=100, help=f"timed CUDA-graph replays (at least {MIN_REPLAYS})")
    ap.add_argument("--ncu-calls", type=int, default=3, help="solve() calls profiled per shape (1..20, default 3)")
    ap.add_argument("--device", type=int, metavar="N",
                    help="the GPU, as nvidia-smi numbers it (default: the judge's default, GPU 0)")
    ap.add_argument("--walls-only", action="store_true",
                    help="only (c), (d) and (e): no Nsight Compute profiles, no CUDA-graph replays")
    ap.add_argument("--json", type=Path, metavar="FILE", help="write every raw number here")
    ap.add_argument("--merge", type=Path, nargs="+", metavar="PART",
                    help="measure nothing: one table from these --json files of runs made in parts")
    a = ap.parse_args(argv)
    measuring = [f"--{k.replace('_', '-')}" for k, v in vars(a).items()
                 if k != "merge" and v != ap.get_default(k)]
    if a.merge and measuring:
        ap.error(f"--merge renders parts already measured: it takes no {', '.join(measuring)}")
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    if a.replays < MIN_REPLAYS:
        ap.error(f"--replays must be at least {MIN_REPLAYS}")
    if not 1 <= a.ncu_calls <= 20:
        ap.error("--ncu-calls must be 1..20 (judge profile's range)")
    if a.device is not None and a.device < 0:
        ap.error("--device must be a GPU index, 0 or more (nvidia-smi's numbering)")
    return a


def select_problems(names: str | None) -> list[Problem]:
    root = paths.problems_root()
    if not names:
        return [problem_spec.load_problem(d) for d in problem_spec.find_problems(root)]
    known = {d.name: d for d in problem_spec.find_problems(root)}
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown or not wanted:
        raise ValueError(f"no such problem: {', '.join(unknown) or '(none named)'} (known: {', '.join(known)})")
    return [problem_spec.load_problem(known[n]) for n in wanted]


def main(argv: Sequence[str] | None = None) -> int:
    global DEVICE
    a = parse_args(argv)
    if a.merge:
        return merge_main(a.merge)
    started = datetime.now(timezone.utc)
    if a.device is not None:  # this process's torch (graphs, torch's start) on that GPU, the judge told by --device
        DEVICE = a.device
        os.environ["CUDA_VISIBLE_DEVICES"] = str(a.device)
    try:
        problems = select_problems(a.problems)
    except (ValueError, problem_spec.ProblemError) as e:
        print(f"fair_timing.py: error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    files = {p.name: toolchain.solutions_in(paths.solutions_dir(p.root)) for p in problems}
    names = {n.strip() for n in a.answers.split(",") if n.strip()} if a.answers is not None else None
    missing = names - {f.name for fs in files.values() for f in fs} if names else set()
    if names is not None and (not names or missing):
        print(f"fair_timing.py: error: no such model answer: {', '.join(sorted(missing)) or '(none named)'} "
              f"in {', '.join(files)}", file=sys.stderr)
        return 2
    plan = []
    for p in problems:
        answers = pick_answers(files[p.name], a.all_answers, names)
        if not answers or not p.spec.benchmarks:
            log(f"{p.name}: skipped ({'no model answer' if not answers else 'no benchmark shape'})")
            continue
        plan.append((p, answers))
    starts: list[float] = []
    torch_start_s = timed_start(starts, warm=True)
    if torch_start_s is not None:
        log(f"torch's CUDA start: {torch_start_s:.2f} s")
    raws: list[AnswerRaw] = []
    graphs: dict[str, Graphs] = {}
    doing = ["starting"]  # what the run is measuring, for the header if it is stopped there
    cut_off = None
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        measure(a, plan, starts, raws, graphs, doing)
    except Stopped as e:
        cut_off = f"by {e.signal_name} during {doing[0]}"
        log(f"stopped {cut_off}: writing what was measured")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    torch_start_s = statistics.median(starts) if starts else None
    rows = [r for raw in raws for r in build_rows(raw, graphs.get(raw.problem, {}), torch_start_s, a.runs)]
    header = Header(environment=environment_of(raws) or torch_environment(),
                    date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    command=" ".join(["python3 scripts/measure/fair_timing.py",
                                      *(sys.argv[1:] if argv is None else argv)]),
                    torch_start_s=torch_start_s, runs=a.runs, replays=a.replays, ncu_calls=a.ncu_calls,
                    torch_starts=starts, commit=git_commit(), started=started.isoformat(timespec="seconds"),
                    finished=datetime.now(timezone.utc).isoformat(timespec="seconds"), host=socket.gethostname(),
                    cut_off=cut_off)
    print(render(header, rows), end="")
    if a.json:
        a.json.write_text(json.dumps({"header": asdict(header), "answers": [asdict(r) for r in raws],
                                      "graphs": {p: {w: {b: asdict(g) for b, g in bs.items()} for w, bs in gs.items()}
                                                 for p, gs in graphs.items()},
                                      "rows": [asdict(r) for r in rows]}, indent=1))
        log(f"raw numbers: {a.json}")
    _, failed, _ = tally(rows)
    return 1 if failed or cut_off else 0


class Stopped(Exception):
    """SIGTERM or SIGINT arrived: stop measuring, keep what was measured."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


def _stop(signum: int, _frame: Any) -> None:
    # raised where the run is, a `judge` subprocess's wait included (subprocess.run kills its child)
    raise Stopped(signal.Signals(signum).name)


def measure(a: argparse.Namespace, plan: Sequence[tuple[Problem, Sequence[Path]]], starts: list[float],
            raws: list[AnswerRaw], graphs: dict[str, Graphs], doing: list[str]) -> None:
    """The runs, profiles and replays of every planned answer, into `raws` and `graphs` as they come
    (so that a stopped run keeps them); `doing[0]` says what is being measured."""
    for p, answers in plan:
        for ans in answers:
            raw = AnswerRaw(p.name, p.spec.level, str(ans.relative_to(ROOT) if ans.is_relative_to(ROOT) else ans),
                            [workload_id(w) for w in p.spec.benchmarks], [b.name for b in p.baselines])
            raws.append(raw)
            for i in range(a.runs):
                doing[0] = f"{p.name} {ans.name}'s torch start {i + 1}/{a.runs}"
                start = timed_start(starts, warm=False)  # paired with the submit and the test after it: `excess_s`
                for what, run, into in (("submit", run_submit, raw.submits), ("test", run_test, raw.tests)):
                    doing[0] = f"{p.name} {ans.name}'s {what} {i + 1}/{a.runs}"
                    s = run(p, ans)
                    s.torch_start_s = start
                    log(f"{p.name} {ans.name} {what} {i + 1}/{a.runs}: {s.status} in {s.subprocess_s:.1f} s"
                        + (f" ({short(s.message)})" if not s.accepted else "")
                        + (f", torch's start before the pair: {start:.2f} s" if start is not None else ""))
                    into.append(s)
            if a.walls_only:
                raw.ncu = [NcuShape(w, 0, error="--walls-only") for w in raw.workloads]
                continue
            for i in range(len(p.spec.benchmarks)):
                doing[0] = f"{p.name} {ans.name}'s profile of {raw.workloads[i]}"
                n = run_profile(p, ans, i, a.ncu_calls, timed_picks(raw.submits, raw.workloads[i]))
                log(f"{p.name} {ans.name} profile {n.workload}: "
                    + (f"{n.ms:.4f} ms per call, {len(n.kernels)} kernels" if n.ms is not None else f"n/a ({n.error})"))
                raw.ncu.append(n)
    for p, _ in plan:
        if a.walls_only:
            graphs[p.name] = {workload_id(w): {b.name: GraphTiming(error="--walls-only") for b in p.baselines}
                              for w in p.spec.benchmarks}
            continue
        doing[0] = f"{p.name}'s CUDA-graph replays"
        log(f"{p.name}: CUDA-graph replays of the baselines")
        graphs[p.name] = graph_timings(p, a.replays)


def torch_environment() -> dict[str, Any]:
    """The header's facts when no judged report gave them."""
    try:
        import torch

        env = Environment(torch=torch.__version__, cuda_runtime=torch.version.cuda,
                          gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)
    except Exception:  # noqa: BLE001 — the header then says `?`
        env = Environment()
    return env.model_dump()


if __name__ == "__main__":
    sys.exit(main())
