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

Commands (judge/worker/protocol.py, shared with the parent): init, rehearse, map, unmap, call,
prepare, time_batch, exit. Any CUDA error is answered with its runtime name and text, then the worker
exits: after a sticky error its context is unusable. A baseline's outputs are not checked for
completeness (the parent sends no `counter`) and its inputs are never sealed: its failures are the
judge's own. The Triton candidate's worker (judge/worker/triton_gpu.py) is this class with a
submission loaded instead of a baseline, and gets both, with the native worker's semantics
(judge/worker/native/worker.cu: checks on a stream of the greatest priority, GPU stamps, the
sealed inputs' keys asked for once the gate holds every SM).
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
    CHECK_START,
    CHECK_STRIDE,
    ERROR_TEXT_CHARS,
    FLUSH_MIN_BYTES,
    MAX_CALLS_PER_BATCH,
    OPS,
    POISON_BYTES,
    worker_channel,
)


class Worker:
    def __init__(self, out, nonce: str, read_line: Callable[[], str] = sys.stdin.readline):
        self.out, self.nonce, self.read_line = out, nonce, read_line
        self.rng = random.SystemRandom()  # the poison patterns: nothing in the process can predict them
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
        self.slot_pairs: list[list[tuple[int, int]]] = []  # the same tables, on the host
        self.counter = 0  # the parent's check records for the timed calls (device address), if any
        self.check_stream = self.rt.priority_stream()

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

    def rehearse(self, workloads: list[list[dict]]) -> dict:
        """The baseline's first call on each workload (one argument list each: a tensor as
        {"alloc": {"dtype", "shape"}}, zeros this worker allocates, or a scalar), untimed, so that
        what a library does once per shape (cuDNN's plan, a kernel's lazy load) is done before the
        baseline is timed (judge/engine/rehearsal.py). Everything allocated is freed."""
        import torch

        t0 = time.perf_counter()
        for args in workloads:
            tensors = [torch.zeros(a["alloc"]["shape"], dtype=getattr(torch, a["alloc"]["dtype"]), device="cuda")
                       if "alloc" in a else a.get("int", a.get("float")) for a in args]
            self.call_target(tensors)
            self.rt.last_error("the baseline's first call")
            self.rt.synchronize("the baseline's first call")
            del tensors
        torch.cuda.empty_cache()
        return {"seconds": float(round(time.perf_counter() - t0, 4))}

    def _args(self, args: list) -> list:
        return [self.tensors[a["buf"]] if "buf" in a else a["int"] if "int" in a else a["float"] for a in args]

    def call(self, args: list, outputs: list[dict] | None = None, counter: str | None = None) -> dict:
        """One call; with `counter`, the check of each poisoned output (`word`) into the record at
        counter[0..1], right after solve() returns, before synchronising."""
        self.rt.synchronize("before the call")
        self.call_target(self._args(args))
        self.rt.last_error("launching solve()")
        if counter:
            self._after_solve(self._call_checks, outputs or [], self.buffers[counter])
        self.rt.synchronize("solve() on the device")
        return {}

    def _call_checks(self, outputs: list[dict], record: int) -> None:
        for j, o in enumerate(outputs):
            if o.get("word") is not None:
                self._check(self.buffers[o["buf"]], o["nbytes"], o["dtype"], o["word"], j, record)

    def _after_solve(self, work: Callable[..., None], *args: object) -> None:
        """A launch of the judge's after solve() that fails: most likely solve()'s own sticky error,
        reported as the synchronisation words it."""
        try:
            work(*args)
        except CudaError:
            self.rt.synchronize("solve() on the device")
            raise

    def _check(self, ptr: int, nbytes: int, dtype: str, word: int, salt: int, record: int) -> None:
        self.kernels.check(ptr, nbytes, WIDTH[dtype], word, salt, record, self.check_stream)

    def _poison(self, ptr: int, nbytes: int, dtype: str) -> int | None:
        word = poison_word(dtype, self.rng)
        if word is None:
            self.rt.memset_async(ptr, self.rng.choice(POISON_BYTES), nbytes)
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
        """Set the timed calls: one argument list per slot, the outputs to poison per slot, the
        check records (`counter`, a candidate's), and the inputs each call's gate reads or opens
        first (a table of pointer and bytes per slot, in device memory)."""
        if len(outputs) != len(slots) or not slots or (inputs is not None and len(inputs) != len(slots)):
            raise ValueError("prepare needs a slot at least, and one list of outputs (and of inputs) per slot")
        self.counter = self.buffers[counter] if counter else 0
        self.slots = [self._args(a) for a in slots]
        self.slot_outputs = [[(self.buffers[o["buf"]], o["nbytes"], o.get("dtype", "uint8")) for o in outs]
                             for outs in outputs]
        for ptr in self.slot_inputs:
            self.rt.free(ptr)
        self.slot_inputs = []
        self.slot_pairs = [[(self.buffers[x["buf"]], x["nbytes"]) for x in ins] for ins in inputs or []]
        for pairs in self.slot_pairs:
            if any(ptr % 16 for ptr, _ in pairs):
                raise ValueError("an input that is not 16-byte aligned")
            table = b"".join(struct.pack("<QQ", ptr, nbytes) for ptr, nbytes in pairs)
            ptr = self.rt.malloc(max(len(table), 16))
            if table:
                self.rt.copy_to_device(ptr, table)
            self.slot_inputs.append(ptr)
        self.slot_jobs = [len(pairs) for pairs in self.slot_pairs]
        self.next_slot = 0
        while len(self.events) < MAX_CALLS_PER_BATCH:
            self.events.append((self.rt.event(), self.rt.event()))
        return {}

    def time_batch(self, k: int, rest: float = 0.0, per_call: bool = False, hold: bool = False,
                   sealed: bool = False) -> dict:
        """k timed calls, rotating over the slots; before each: poisoned outputs, then the gate
        (judge/worker/hold.py: the L2 flush, and with `hold` the GPU-side hold, let go once the call
        is queued), or a plain flush where the gate cannot fill the SMs. With check records
        (`prepare`'s counter): the start stamp (by the gate), and after the end event the end stamp
        and the outputs' checks. With `sealed`, each call's key is asked for once its gate holds every
        SM (`unseal`, judge/gpu/seal.py) and the gate opens the inputs with it.

        With `rest` > 0 the GPU idles `rest` × the busy time, after each call (`per_call`, for
        long calls) or after the batch (short calls run back to back within it), so a heavy
        kernel's average power stays under the board's cap and the clocks do not sag while it is
        timed, nor in the shapes timed after it. Candidate and baselines get the same treatment.
        """
        k = max(1, min(k, MAX_CALLS_PER_BATCH))
        if not getattr(self, "slots", None):
            raise ValueError("time_batch before prepare")
        if sealed and len(self.slot_jobs) != len(self.slots):
            raise ValueError("a sealed batch without prepared inputs")
        gate = self.hold.usable
        held = hold and gate
        crowded, late = self.hold.crowded(), self.hold.late()
        host = []
        for i in range(k):
            s = self.next_slot % len(self.slots)
            self.next_slot += 1
            outs = self.slot_outputs[s]
            words = [self._poison(*o) for o in outs]  # poison first, then flush: the poison's lines leave L2
            self._clear_persisting_l2()
            record = self.counter + CHECK_STRIDE * i if self.counter else 0
            start, end = self.events[i]
            opens = sealed and self.slot_jobs[s] > 0
            if gate:
                jobs = (self.slot_inputs[s], self.slot_jobs[s]) if self.slot_inputs else (0, 0)
                self.hold.begin(held, *jobs, sealed=sealed, stamp=record + 8 * CHECK_START if record else 0)
                self.rt.record(start)
                if held or opens:
                    self.hold.wait_resident()
                if opens:
                    self.hold.open(self._key(i))
            else:
                if sealed:
                    key = self._key(i)
                    for j, (ptr, nbytes) in enumerate(self.slot_pairs[s]):
                        self.kernels.crypt(ptr, nbytes, j, key)
                self.kernels.read(self.flush_ptr, self.flush_bytes)
                if record:
                    self.kernels.stamp(record + 8 * CHECK_START, None)
                self.rt.record(start)
            t0 = time.perf_counter()
            self.call_target(self.slots[s])
            host.append((time.perf_counter() - t0) * 1000)
            self.rt.record(end)
            self.rt.last_error("launching solve()")
            if record:  # right after the end event, before any synchronisation
                self._after_solve(self._end_checks, record, outs, words)
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


    def _end_checks(self, record: int, outs: list[tuple[int, int, str]], words: list[int | None]) -> None:
        self.kernels.stamp(record + 8 * (CHECK_START + 1), None)
        for j, ((ptr, nbytes, dtype), word) in enumerate(zip(outs, words)):
            if word is not None:
                self._check(ptr, nbytes, dtype, word, j, record)

    def _key(self, i: int) -> list[int]:
        """Call i's key from the parent: a line {"unseal": i} on the channel, answered by one line
        {"key": [k0, k1, k2]} on stdin."""
        self.send(unseal=i)
        try:
            key = json.loads(self.read_line())["key"]
        except (ValueError, KeyError, TypeError):
            raise ValueError("no key for a sealed call, or not a JSON object with one") from None
        if not (isinstance(key, list) and len(key) == 3
                and all(isinstance(w, int) and 0 <= w <= 0xFFFFFFFF for w in key)):
            raise ValueError("a key of other than three 32-bit words")
        return key


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
        send_error(out, nonce, e)
        return
    serve(worker)


def serve(worker: Worker, error: Callable[[Exception], dict] | None = None) -> None:
    """The ready reply, then one command per stdin line until `exit` or the first failure.
    `error(e)` words a failure that is not CUDA's (default: the exception's name and text)."""
    worker.send(ok=True, ready=True, pid=os.getpid())
    while line := worker.read_line():
        cmd = json.loads(line)
        op = cmd.pop("op")
        if op == "exit":
            break
        try:
            if op not in OPS or not callable(getattr(worker, op, None)):
                raise ValueError(f"unknown command {op!r}")
            result = getattr(worker, op)(**cmd)
        except CudaError as e:
            send_error(worker.out, worker.nonce, e)
            return
        except Exception as e:  # noqa: BLE001 — reported to the parent as the worker's failure
            worker.send(ok=False, error=error(e) if error else {"kind": "python", "name": type(e).__name__,
                                                                 "text": str(e)[:ERROR_TEXT_CHARS]})
            return
        worker.send(ok=True, **result)


def send_error(out, nonce: str, e: BaseException) -> None:
    if isinstance(e, CudaError):
        err = {"kind": "cuda", "name": e.name, "text": e.text[:ERROR_TEXT_CHARS], "where": e.where}
    else:
        err = {"kind": "os", "name": type(e).__name__, "text": str(e)[:ERROR_TEXT_CHARS]}
    out.write(json.dumps({"nonce": nonce, "ok": False, "error": err}) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
