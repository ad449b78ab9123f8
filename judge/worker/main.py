"""The baseline worker: runs the problem's reference (torch) as a timed baseline.

    python -m judge.worker.main --torch

Candidates (submissions) run in the native worker instead (judge/worker/native/worker.cu: no
interpreter in the process a submission owns, and a seccomp sandbox); this one runs only the
judge's own code, with the same protocol (judge/worker/protocol.py) and the same timing method.
Its result channel's fd number comes in $JUDGE_WORKER_FD (removed at once, the fd made
non-inheritable) and the run's nonce on the first line of stdin, never in argv
(judge/worker/protocol.py's `worker_channel`). Then it reads one JSON command per line on stdin
and answers one JSON line, tagged with the nonce, on the channel; its own stdout/stderr go to a
capped log the parent reads. It holds no reference outputs and no seeds: only the buffers the
parent shares with it through CUDA IPC, as torch tensors.

Commands (judge/worker/protocol.py, shared with the parent): init, map, unmap, call, prepare,
time_batch, exit. Any CUDA error is answered with its runtime name and text, then the worker
exits: after a sticky error its context is unusable. A baseline's outputs are not checked for
completeness (no `counter`): its failures are the judge's own.
"""
from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import random
import signal
import struct
import sys
import time
import types
from collections.abc import Callable

from judge.gpu.cudart import CudaError, Runtime
from judge.gpu.integrity import FLUSH_SINK_BYTES, WIDTH, Kernels, poison_word
from judge.worker.hold import Hold
from judge.worker.protocol import (
    ERROR_TEXT_CHARS,
    FLUSH_MIN_BYTES,
    MAX_CALLS_PER_BATCH,
    OPS,
    POISON_BYTES,
    worker_channel,
)


class Worker:
    def __init__(self, out, nonce: str):
        self.out, self.nonce = out, nonce
        self.rt = Runtime()
        self.flush_bytes = max(2 * self.rt.l2_bytes(), FLUSH_MIN_BYTES)
        self.flush_ptr = self.rt.malloc(self.flush_bytes + FLUSH_SINK_BYTES)
        self.rt.memset_async(self.flush_ptr, random.choice(POISON_BYTES), self.flush_bytes)  # set once, then only read
        self.rt.synchronize("filling the L2 flush buffer")
        self.buffers: dict[str, int] = {}
        self.tensors: dict[str, object] = {}
        self.call_target: Callable[[list], object] = _not_loaded
        self.events: list[tuple[int, int]] = []
        self.kernels = Kernels()  # judge-owned poison fill kernels, and the hold
        self.hold = Hold(self.rt, self.kernels, self.flush_ptr, self.flush_bytes)
        self._no_window = ctypes.create_string_buffer(64)  # cudaLaunchAttributeValue, all zero
        self.slot_inputs: list[int] = []  # per slot: the device table of its inputs (pointer, bytes), for the gate
        self.slot_jobs: list[int] = []

    def send(self, **msg) -> None:
        msg["nonce"] = self.nonce
        self.out.write(json.dumps(msg) + "\n")
        self.out.flush()

    # -- commands ---------------------------------------------------------------------------
    def init(self, params: list[dict], baseline: dict) -> dict:
        self.params = params
        func = getattr(baseline_module(baseline), baseline["func"])
        names = [p["name"] for p in params]
        self.call_target = lambda args: func(**dict(zip(names, args)))
        return {}

    def map(self, buffers: list[dict]) -> dict:
        from judge.gpu.devmem import tensor_at

        for b in buffers:
            ptr = self.rt.ipc_open(bytes.fromhex(b["handle"]))
            self.buffers[b["id"]] = ptr
            self.tensors[b["id"]] = tensor_at(ptr, b["nbytes"], b["dtype"], b["shape"])
        return {}

    def unmap(self) -> dict:
        self.tensors.clear()
        for ptr in self.buffers.values():
            self.rt.ipc_close(ptr)
        self.buffers.clear()
        return {}

    def _args(self, args: list) -> list:
        return [self.tensors[a["buf"]] if "buf" in a else a["int"] if "int" in a else a["float"] for a in args]

    def call(self, args: list, outputs: list[dict] | None = None, counter: str | None = None) -> dict:
        """One call of the reference (the outputs are not counted: `counter` is the candidate's)."""
        _no_counter(counter)
        self.rt.synchronize("before the call")
        self.call_target(self._args(args))
        self.rt.last_error("launching solve()")
        self.rt.synchronize("solve() on the device")
        return {}

    def _poison(self, ptr: int, nbytes: int, dtype: str) -> int | None:
        word = poison_word(dtype)
        if word is None:
            self.rt.memset_async(ptr, random.choice(POISON_BYTES), nbytes)
        else:
            self.kernels.fill(ptr, nbytes, WIDTH[dtype], word)
        return word

    def _clear_persisting_l2(self) -> None:
        """Persisting lines survive a plain flush: reset them, and the stream's access policy window
        (best effort: the call's error, if any, is cleared so that it is not taken for solve()'s)."""
        self.rt.reset_persisting_l2()
        if self.rt.lib.cudaStreamSetAttribute(None, 1, self._no_window) != 0:  # AccessPolicyWindow
            self.rt.lib.cudaGetLastError()

    def prepare(self, slots: list[list], outputs: list[list[dict]], counter: str | None = None,
                inputs: list[list[dict]] | None = None) -> dict:
        """Set the timed calls: one argument list per slot, the outputs to poison per slot, and the
        inputs each call's gate reads first (a table of pointer and bytes per slot, in device memory)."""
        _no_counter(counter)
        self.slots = [self._args(a) for a in slots]
        self.slot_outputs = [[(self.buffers[o["buf"]], o["nbytes"], o.get("dtype", "uint8")) for o in outs]
                             for outs in outputs]
        for ptr in self.slot_inputs:
            self.rt.free(ptr)
        self.slot_inputs = []
        for ins in inputs or []:
            table = b"".join(struct.pack("<QQ", self.buffers[x["buf"]], x["nbytes"]) for x in ins)
            ptr = self.rt.malloc(len(table))
            self.rt.copy_to_device(ptr, table)
            self.slot_inputs.append(ptr)
        self.slot_jobs = [len(ins) for ins in inputs or []]
        self.next_slot = 0
        while len(self.events) < MAX_CALLS_PER_BATCH:
            self.events.append((self.rt.event(), self.rt.event()))
        return {}

    def time_batch(self, k: int, rest: float = 0.0, per_call: bool = False, hold: bool = False) -> dict:
        """k timed calls, rotating over the slots; before each: poisoned outputs, then the gate
        (judge/worker/hold.py: the L2 flush, and with `hold` the GPU-side hold, let go once the call
        is queued), or a plain flush where the gate cannot fill the SMs.

        With `rest` > 0 the GPU idles `rest` × the busy time, after each call (`per_call`, for
        long calls) or after the batch (short calls run back to back within it), so a heavy
        kernel's average power stays under the board's cap and the clocks do not sag while it is
        timed, nor in the shapes timed after it. Candidate and baselines get the same treatment.
        """
        k = max(1, min(k, MAX_CALLS_PER_BATCH))
        gate = self.hold.usable
        held = hold and gate
        crowded, late = self.hold.crowded(), self.hold.late()
        host = []
        for i in range(k):
            s = self.next_slot % len(self.slots)
            self.next_slot += 1
            for ptr, nbytes, dtype in self.slot_outputs[s]:  # poison first, then flush: the poison's
                self._poison(ptr, nbytes, dtype)  # lines leave L2
            self._clear_persisting_l2()
            if gate:
                jobs = (self.slot_inputs[s], self.slot_jobs[s]) if self.slot_inputs else (0, 0)
                self.hold.begin(held, *jobs)
            else:
                self.kernels.read(self.flush_ptr, self.flush_bytes)
            start, end = self.events[i]
            self.rt.record(start)
            if held:
                self.hold.wait_resident()
            t0 = time.perf_counter()
            self.call_target(self.slots[s])
            host.append((time.perf_counter() - t0) * 1000)
            self.rt.record(end)
            self.rt.last_error("launching solve()")
            if held:
                self.hold.release()
            if rest > 0 and per_call:
                self.rt.event_synchronize(end)
                time.sleep(self.rt.elapsed_ms(start, end) * rest / 1000)
        self.rt.last_error("launching solve()")
        self.rt.synchronize("solve() on the device")
        times = [self.rt.elapsed_ms(*self.events[i]) for i in range(k)]
        if rest > 0 and not per_call:
            time.sleep(sum(times) * rest / 1000)
        return {"times_ms": times, "host_ms": host, "held": held, "crowded": self.hold.crowded() - crowded,
                "late": self.hold.late() - late, "calls": self.next_slot}


def baseline_module(baseline: dict) -> types.ModuleType:
    """A baseline's module: from `source`, the text of its file as the parent read it before any
    of the candidate's code ran (docs/security.md: the file may have been rewritten since), or
    from the file itself when no text came."""
    if "source" in baseline:
        module = types.ModuleType("judge_problem_reference")
        module.__file__ = baseline["file"]
        exec(compile(baseline["source"], baseline["file"], "exec"), module.__dict__)
        return module
    spec = importlib.util.spec_from_file_location("judge_problem_reference", baseline["file"])
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _not_loaded(args: list) -> object:
    raise RuntimeError("solve() called before init")


def _no_counter(counter: str | None) -> None:
    if counter:
        raise ValueError("the baseline worker does not check outputs (`counter` is for a candidate's native worker)")


def main() -> None:
    # Python ignores SIGXFSZ; restored, output past the log's cap (RLIMIT_FSIZE) kills the worker
    # instead of being dropped while the flood goes on.
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    out, nonce = worker_channel()
    if "--torch" not in sys.argv[1:]:
        print("judge.worker.main: runs baselines only (--torch); candidates run in the native worker",
              file=sys.stderr)
        sys.exit(2)
    try:
        import torch  # pay torch's start-up while others work

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
            if op not in OPS:
                raise ValueError(f"unknown command {op!r}")
            result = getattr(worker, op)(**cmd)
        except CudaError as e:
            _send_error(out, nonce, e)
            return
        except Exception as e:  # noqa: BLE001 — reported to the parent as the worker's failure
            worker.send(ok=False, error={"kind": "python", "name": type(e).__name__,
                                         "text": str(e)[:ERROR_TEXT_CHARS]})
            return
        worker.send(ok=True, **result)


def _send_error(out, nonce: str, e: BaseException) -> None:
    if isinstance(e, CudaError):
        err = {"kind": "cuda", "name": e.name, "text": e.text[:ERROR_TEXT_CHARS], "where": e.where}
    else:
        err = {"kind": "os", "name": type(e).__name__, "text": str(e)[:ERROR_TEXT_CHARS]}
    out.write(json.dumps({"nonce": nonce, "ok": False, "error": err}) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
