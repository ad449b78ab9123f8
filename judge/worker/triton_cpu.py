"""The child of `judge test --cpu` (judge/engine/cpu_check.py): runs a Python (Triton) submission's
solve() through Triton's interpreter on CPU, in a process of its own, on inputs the parent drew.

`python -m judge.worker.triton_cpu JOB_DIR`: reads `JOB_DIR/job.pt` (the module's path and, per
case, the arguments: inputs and poisoned outputs as tensors, scalars as numbers), and writes each
case's outputs to `JOB_DIR/out.pt` and one JSON line per case to `JOB_DIR/records.jsonl`:
`{"case", "error", "launches", "ops"}` (stdout and stderr are the submission's). The expected
outputs never come here: the parent checks.

What the child does before the submission's code first runs: imports torch and Triton, opens
the output file, and installs the worker's seccomp filter (judge/sandbox/seccomp.py) where the
machine has one: from then on the process cannot open a file for writing, start a process, signal
another or reach the network. While solve() runs, every torch operation it calls outside a
kernel launch is recorded (`ops`): the parent refuses compute done by torch rather than by
Triton kernels. Launches are counted (`launches`).

On CPU, `triton.autotune` cannot time its configurations: each one is run once (so each is
checked to run) and the first is used.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from judge.worker.triton_watch import ALLOWED_OPS, op_name

MAX_ERROR_CHARS = 4000


def main(job_dir: Path) -> int:
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    import triton  # noqa: F401 — imported before the filter: its modules load from disk
    from torch.utils._python_dispatch import TorchDispatchMode
    from triton.runtime import autotuner, interpreter

    from judge.sandbox import seccomp

    job = torch.load(job_dir / "job.pt", weights_only=True)
    state: dict[str, Any] = {"depth": 0, "launches": 0, "ops": []}

    run = interpreter.InterpretedFunction.run

    def counted(self, *args, **kwargs):
        state["launches"] += 1
        state["depth"] += 1
        try:
            return run(self, *args, **kwargs)
        finally:
            state["depth"] -= 1

    interpreter.InterpretedFunction.run = counted

    def bench_once(kernel_call, quantiles=None, **_):
        kernel_call()
        return [1.0, 1.0, 1.0] if quantiles else 1.0

    autotuner.Autotuner.do_bench = property(lambda self: bench_once)

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if state["depth"] == 0:
                name = op_name(func)
                if name not in ALLOWED_OPS and name not in state["ops"]:
                    state["ops"].append(name)
            return func(*args, **(kwargs or {}))

    _warm_up(Record)  # what the interpreter and the mode import lazily, imported before the filter
    state["launches"] = 0
    # Opened before the filter, which refuses opening a file to write. The records go to a file of
    # their own, never stdout: the submission's prints cannot pass for them.
    out_file = open(job_dir / "out.pt", "wb")
    records = open(job_dir / "records.jsonl", "w")

    def record(line: dict) -> None:
        records.write(json.dumps(line) + "\n")
        records.flush()

    why_not = seccomp.supported()
    if why_not is None:
        seccomp.install(seccomp.program(os.getpid()))
    record({"filter": why_not is None, "why_not": why_not})

    spec = importlib.util.spec_from_file_location("submission", job["module"])
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        solve = module.solve
    except Exception:  # noqa: BLE001 — the submission's failure is its report, never ours
        record({"case": -1, "error": _tail(traceback.format_exc()), "launches": 0, "ops": []})
        return 0
    outputs = []
    for i, case in enumerate(job["cases"]):
        state["launches"], state["ops"] = 0, []
        error = None
        try:
            with Record(), torch.no_grad():
                solve(**case["args"])
        except Exception:  # noqa: BLE001
            error = _tail(traceback.format_exc())
        outputs.append({name: case["args"][name] for name in case["outputs"]})
        record({"case": i, "error": error, "launches": state["launches"], "ops": state["ops"]})
    torch.save(outputs, out_file)
    out_file.close()
    return 0


def _warm_up(record) -> None:
    """One launch of a kernel of ours under the recording mode: the modules the interpreter and
    torch load at a first launch (torch._dynamo among them, which asks the system for the user's
    name over a socket) are loaded while the process may still do so."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def copy(src, dst, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + i, tl.load(src + i, mask=i < n), mask=i < n)

    x = torch.arange(8, dtype=torch.float32)
    y = torch.empty_like(x)
    with record(), torch.no_grad():
        copy[(1,)](x, y, 8, BLOCK=8)
    if not torch.equal(x, y):
        raise RuntimeError("Triton's interpreter does not work here: a copy kernel of the judge's gave a wrong answer")


def _tail(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else "...\n" + text[-MAX_ERROR_CHARS:]


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
