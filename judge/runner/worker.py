"""The worker: the only process that runs submitted (or baseline) code.

    python -m judge.runner.worker RESULT_FD NONCE [--torch]

It reads one JSON command per line on stdin and answers one JSON line, tagged with the run's
nonce, on RESULT_FD; its own stdout/stderr go to a capped log the parent reads. It holds no
reference outputs and no seeds: only the buffers the parent shares with it through CUDA IPC.
A candidate worker never imports torch (start-up stays well under a second); a baseline worker
imports torch and the problem's reference.py.

Commands: init, map, unmap, call, prepare, time_batch, exit. Any CUDA error is answered with its runtime name
and text, then the worker exits: after a sticky error its context is unusable.
"""
from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import random
import sys
import time

from ..cuda import CudaError, Runtime

POISON_BYTES = [*range(0x40, 0x80), *range(0xC0, 0x100)]  # |value| >= 2 or NaN in f32/f16/bf16
FLUSH_MIN_BYTES = 64 << 20
MAX_EVENTS = 1000


class Worker:
    def __init__(self, out, nonce: str):
        self.out, self.nonce = out, nonce
        self.rt = Runtime()
        self.flush_bytes = max(2 * self.rt.l2_bytes(), FLUSH_MIN_BYTES)
        self.flush_ptr = self.rt.malloc(self.flush_bytes)
        self.buffers: dict[str, int] = {}
        self.tensors: dict[str, object] = {}
        self.call_target = None
        self.torch_mode = False
        self.events: list[tuple[int, int]] = []

    def send(self, **msg) -> None:
        msg["nonce"] = self.nonce
        self.out.write(json.dumps(msg) + "\n")
        self.out.flush()

    # -- commands ---------------------------------------------------------------------------
    def init(self, params: list[dict], lib: str | None = None, baseline: dict | None = None) -> dict:
        self.params = params
        if lib:
            so = ctypes.CDLL(lib, mode=ctypes.RTLD_LOCAL)
            fn = so.solve
            fn.restype = None
            fn.argtypes = [ctypes.c_void_p if p["kind"] == "tensor" else
                           ctypes.c_int if p["kind"] == "int" else ctypes.c_float for p in params]
            self.call_target = lambda args: fn(*args)
        else:
            assert baseline is not None
            import torch  # noqa: F401  (baseline workers only)

            self.torch_mode = True

            spec = importlib.util.spec_from_file_location("judge_problem_reference", baseline["file"])
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            func = getattr(module, baseline["func"])
            names = [p["name"] for p in params]
            self.call_target = lambda args: func(**dict(zip(names, args)))
        return {}

    def map(self, buffers: list[dict]) -> dict:
        for b in buffers:
            ptr = self.rt.ipc_open(bytes.fromhex(b["handle"]))
            self.buffers[b["id"]] = ptr
            if self.torch_mode:
                from ..devmem import tensor_at

                self.tensors[b["id"]] = tensor_at(ptr, b["nbytes"], b["dtype"], b["shape"])
        return {}

    def unmap(self) -> dict:
        self.tensors.clear()
        for ptr in self.buffers.values():
            self.rt.ipc_close(ptr)
        self.buffers.clear()
        return {}

    def _args(self, args: list) -> list:
        out = []
        for a in args:
            if "buf" in a:
                out.append(self.tensors[a["buf"]] if self.torch_mode else self.buffers[a["buf"]])
            else:
                out.append(a["int"] if "int" in a else a["float"])
        return out

    def call(self, args: list) -> dict:
        self.rt.synchronize("before the call")
        self.call_target(self._args(args))  # type: ignore[misc]
        self.rt.last_error("launching solve()")
        self.rt.synchronize("solve() on the device")
        return {}

    def prepare(self, slots: list[list], outputs: list[list[dict]]) -> dict:
        """Set the timed calls: one argument list per slot, and the outputs to poison per slot."""
        self.slots = [self._args(a) for a in slots]
        self.slot_outputs = [[(self.buffers[o["buf"]], o["nbytes"]) for o in outs] for outs in outputs]
        self.next_slot = 0
        while len(self.events) < MAX_EVENTS:
            self.events.append((self.rt.event(), self.rt.event()))
        return {}

    def time_batch(self, k: int, rest: float = 0.0, per_call: bool = False) -> dict:
        """k timed calls, rotating over the slots; before each: L2 flush and poisoned outputs.

        With `rest` > 0 the GPU idles `rest` × the busy time, after each call (`per_call`, for
        long calls) or after the batch (short calls run back to back within it), so a heavy
        kernel's average power stays under the board's cap and the clocks do not sag while it is
        timed, nor in the shapes timed after it. Candidate and baselines get the same treatment.
        """
        k = max(1, min(k, MAX_EVENTS))
        self.rt.reset_persisting_l2()
        for i in range(k):
            s = self.next_slot % len(self.slots)
            self.next_slot += 1
            for ptr, nbytes in self.slot_outputs[s]:  # poison first, then flush: the poison's
                self.rt.memset_async(ptr, random.choice(POISON_BYTES), nbytes)  # lines leave L2
            self.rt.memset_async(self.flush_ptr, random.choice(POISON_BYTES), self.flush_bytes)
            start, end = self.events[i]
            self.rt.record(start)
            self.call_target(self.slots[s])  # type: ignore[misc]
            self.rt.record(end)
            if rest > 0 and per_call:
                self.rt.event_synchronize(end)
                time.sleep(self.rt.elapsed_ms(start, end) * rest / 1000)
        self.rt.last_error("launching solve()")
        self.rt.synchronize("solve() on the device")
        times = [self.rt.elapsed_ms(*self.events[i]) for i in range(k)]
        if rest > 0 and not per_call:
            time.sleep(sum(times) * rest / 1000)
        return {"times_ms": times, "calls": self.next_slot}


def main() -> None:
    fd, nonce = int(sys.argv[1]), sys.argv[2]
    out = os.fdopen(fd, "w")
    try:
        if "--torch" in sys.argv[3:]:  # a baseline worker: pay torch's start-up while others work
            import torch

            torch.zeros(1, device="cuda")
        worker = Worker(out, nonce)
    except (CudaError, OSError) as e:
        _send_error(out, nonce, e)
        return
    worker.send(ok=True, ready=True, pid=os.getpid())
    for line in sys.stdin:
        cmd = json.loads(line)
        op = cmd.pop("op")
        if op == "exit":
            break
        try:
            result = getattr(worker, op)(**cmd)
        except CudaError as e:
            _send_error(out, nonce, e)
            return
        except Exception as e:  # noqa: BLE001 — reported to the parent as the worker's failure
            worker.send(ok=False, error={"kind": "python", "name": type(e).__name__, "text": str(e)})
            return
        worker.send(ok=True, **result)


def _send_error(out, nonce: str, e: BaseException) -> None:
    if isinstance(e, CudaError):
        err = {"kind": "cuda", "name": e.name, "text": e.text, "where": e.where}
    else:
        err = {"kind": "os", "name": type(e).__name__, "text": str(e)}
    out.write(json.dumps({"nonce": nonce, "ok": False, "error": err}) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
