"""Which kernels a problem's baselines run called as the judge calls them and replayed from a CUDA graph (issue 17 (b))

    python3 scripts/probes/graph_kernels.py PROBLEM [--shape I] [--calls 20]

fair_timing.py's (b) holds each baseline's judged median against a CUDA-graph replay of the same
call. Where the two differ, is it the host (the judge's window holding launch latency, what (b) is
for), the judge's gate, or the library choosing other kernels under stream capture? This calls each
baseline of PROBLEM on benchmark shape I (default: every shape) `--calls` times four ways: called,
and replayed from a graph captured once, each after the baseline worker's gate unheld (as (b)'s
replays: the inputs read, L2 flushed) and held (as the judge times: the gate holds every SM until
the call and its end event are queued; judge/worker/hold.py). Per way it prints the median of CUDA
events around the call, alone and again under torch.profiler, and the kernels it ran (the
profiler's trace: name, launches per call, mean µs; the gate's own kernels left out). On bad input
one line and exit 2.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import NoReturn

import probe_args

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "measure"))
GATE_KERNELS = ("judge_",)  # judge_hold, judge_read: the gate's, not the baseline's


def fail(msg: str) -> NoReturn:
    probe_args.fail("graph_kernels.py", msg)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = probe_args.problem_parser(__doc__, 20, "calls per way")
    ap.add_argument("--shape", type=int, help="a benchmark shape's index (default: every one)")
    args = ap.parse_args(argv)
    probe_args.check_problem_and_calls("graph_kernels.py", args.problem, args.calls)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    from judge.problem import spec, workloads

    problem = spec.load_problem(ROOT / "problems" / args.problem)
    shapes = list(problem.spec.benchmarks)
    if args.shape is not None and not 0 <= args.shape < len(shapes):
        fail(f"--shape {args.shape}: {args.problem} has benchmark shapes 0 to {len(shapes) - 1}")
    torch = probe_args.cuda_torch("graph_kernels.py")
    from fair_timing import call_kwargs, gate_hold, input_table, make_tensors

    gh = gate_hold(torch)  # the baseline worker's hold and its flush buffer, kept to the end
    hold = gh.hold
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; {args.calls} calls per way; "
          f"the gate {'holds' if hold.usable else 'cannot hold here: held reads unheld'}")
    for i, w in enumerate(shapes):
        if args.shape is not None and i != args.shape:
            continue
        tensors = make_tensors(torch, problem, w, "cuda")
        kwargs = call_kwargs(problem, w, tensors)
        inputs = [tensors[t.name] for t in problem.tensors if not t.ctype.is_output]
        table = input_table(torch, inputs)
        for b in problem.baselines:
            fn = workloads.load_function(problem, b.impl)
            for _ in range(3):
                fn(**kwargs)
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                kept = fn(**kwargs)
            called = lambda fn=fn, kw=kwargs: fn(**kw)
            for way, call, held in (("called", called, False), ("called, held", called, True),
                                    ("graph replay", graph.replay, False), ("graph replay, held", graph.replay, True)):
                ms, traced, kernels = profiled(torch, hold, table, len(inputs), call, held and hold.usable, args.calls)
                print(f"\n## {spec.workload_id(w)}, {b.name}, {way}: median {ms:.4f} ms "
                      f"({traced:.4f} under torch.profiler)")
                print("| kernel | per call | mean µs |\n|---|---|---|")
                for name, durs in kernels.items():
                    print(f"| `{name[:110]}` | {len(durs) / args.calls:g} | {statistics.fmean(durs):.2f} |")
            del kept, graph
        del tensors, kwargs, inputs, table
        torch.cuda.synchronize()


def profiled(torch, hold, table, njobs: int, call, held: bool, calls: int) -> tuple[float, float, dict[str, list[float]]]:
    """Median ms of CUDA events around `call`, each after the gate (`held`: let go once the call
    and its end event are queued, as the baseline worker does): `calls` calls alone, then as many
    under torch.profiler (whose tracing can change the time: kernels it records do not overlap);
    and the kernels the profiled calls ran."""
    def run() -> float:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
        for s, e in events:
            hold.begin(held, table.data_ptr() if njobs else 0, njobs)
            s.record()
            if held:
                hold.wait_resident()
            call()
            e.record()
            if held:
                hold.release()
            e.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in events)

    alone = run()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        traced = run()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.loads(Path(f.name).read_text())
    kernels: dict[str, list[float]] = defaultdict(list)
    for ev in trace.get("traceEvents", []):
        if ev.get("cat") == "kernel" and not ev.get("name", "").startswith(GATE_KERNELS):
            kernels[ev["name"]].append(float(ev.get("dur", 0)))
    return alone, traced, dict(kernels)

if __name__ == "__main__":
    main()
