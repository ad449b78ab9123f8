"""What the parent and the workers must agree on: the channel, the replies, the commands, the batch
limit, the poison bytes, the layout of the checks.

The single source of these constants for both workers: the Python one (judge/worker/main.py,
baselines) imports this module, and the native one (judge/worker/native/worker.cu, candidates) gets
them in a header generated from it when it is built (judge/worker/native_build.py's `header`);
the parent (judge/worker/client.py and the engine) imports it too. Pure Python, so that a baseline
worker imports torch only when it needs it.

The channel (docs/security.md, "The result channel"). The parent starts a worker with nothing of the
channel in its argv (`judge-worker`, or `python -m judge.worker.main --torch`). The number of the
reply pipe's write end is in the environment (`JUDGE_WORKER_FD`), which the worker removes at once,
and the fd is made non-inheritable there (nothing the worker starts holds it); the run's nonce
(`NONCE_HEX` hex digits, fresh per worker) is the first line of the worker's stdin. Then:

- a request is one JSON object per line on the worker's stdin: `{"op": OP, **args}`;
- a reply is one JSON object per line on the channel, UTF-8, at most `REPLY_CAP_BYTES` with its
  newline, nested at most `MAX_DEPTH` deep, carrying the run's `nonce` and `ok` (true or false);
  `ok: false` carries `error: {kind, name, text[, where]}` with a kind of `ERROR_KINDS`; a
  `progress` line (the nonce and `progress`) may come before the reply. The known fields have
  the types of `FIELD_TYPES`; others are passed on as they are. In a sealed `time_batch`
  (judge/gpu/seal.py) the worker asks for call i's key with a line of the nonce and `unseal: i`, in
  order, once per call, and the parent answers with one line `{"key": [k0, k1, k2]}` on stdin.
- per request the parent reads at most `REQUEST_CAP_BYTES` and `MAX_LINES` lines, before the
  request's deadline; and nothing between requests.
"""
from __future__ import annotations

import os
import re
import sys
from typing import Literal, TextIO, get_args

from judge import paths

# The worker's commands (a method of judge/worker/main.py's `Worker` each, but `exit`). `warm` and
# `confine` are the Triton candidate's (judge/worker/triton_gpu.py): solve() once per workload while
# Triton may still compile, then the sandbox; the other workers refuse them. `rehearse` is a
# baseline's alone (judge/engine/rehearsal.py): its first calls, on zeros it allocates itself.
Op = Literal["init", "rehearse", "map", "unmap", "call", "prepare", "time_batch", "warm", "confine", "exit"]
OPS: frozenset[str] = frozenset(get_args(Op))
TRITON_OPS = frozenset({"warm", "confine"})  # the Triton worker's alone
BASELINE_OPS = frozenset({"rehearse"})  # the baseline worker's alone

# Timed calls per `time_batch` request: the worker holds this many event pairs, and the parent
# keeps this many check records (CHECK_STRIDE bytes each) for a benchmark shape.
MAX_CALLS_PER_BATCH = 1000

# The parent's `counter` buffer (named in `call` and `prepare`) holds one record of CHECK_STRIDE
# bytes per timed call i of a batch, at counter + CHECK_STRIDE * i, four u64 written by the
# worker on the device (judge/gpu/integrity_kernels.cu):
#   [CHECK_COUNT]       words of the call's outputs still holding the poison after its end event,
#   [CHECK_FINGERPRINT] Σ over those outputs of judge_check's fingerprint, output j of the call's
#                       slot (in the order `prepare` lists them) with salt j (wrapping u64),
#   [CHECK_START]       %globaltimer (ns) stamped on the default stream just before the start event,
#   [CHECK_END]         %globaltimer stamped on the default stream just after the end event.
# `call` (a test call) writes [CHECK_COUNT] and [CHECK_FINGERPRINT] of record 0, no stamps. An
# output whose dtype has no poison word (integrity.WIDTH) is neither counted nor fingerprinted.
# The parent zeroes the records before every request and reads them after it.
CHECK_STRIDE = 32
CHECK_WORDS = CHECK_STRIDE // 8
CHECK_COUNT, CHECK_FINGERPRINT, CHECK_START, CHECK_END = range(CHECK_WORDS)

# The L2 flush before every timed call reads max(2 x L2, this) bytes (judge_read of integrity_kernels.cu).
FLUSH_MIN_BYTES = 64 << 20

# The GPU-side hold before a timed call (`time_batch` with `hold`: judge/worker/native/hold.h and
# judge/worker/hold.py) is `crowded` when its blocks are not all resident this long after its first
# one started (on an idle device they are within microseconds; kernels left running by an earlier
# call keep SMs), and `late` when the host has not let go after HOLD_TIMEOUT_MS.
HOLD_ARRIVE_US = 50
HOLD_TIMEOUT_MS = 20
# The gate's words (judge_hold of judge/gpu/integrity_kernels.cu says what each holds): in host memory
# mapped into the device (go, resident, crowded, late, the key's number, the key), and in device memory.
HOLD_CTL_WORDS = 8
HOLD_COUNT_WORDS = 8

# Bytes whose repeated pattern reads as |value| >= 2 or NaN in f32/f16/bf16: outputs without a
# poison word (judge/gpu/integrity.py) are filled with one of them before a call, and the worker
# fills its L2 flush buffer with one, once.
POISON_BYTES = (*range(0x40, 0x80), *range(0xC0, 0x100))

# -- the result channel ------------------------------------------------------------------------------
ENV_FD = paths.ENV_WORKER_FD
ENV_PID_NAMESPACE = paths.ENV_PID_NAMESPACE  # "0": the native worker asks for no pid namespace
NONCE_HEX = 32  # lowercase hex digits of a nonce
NONCE = re.compile(rf"[0-9a-f]{{{NONCE_HEX}}}")
REPLY_CAP_BYTES = 1 << 20  # one reply line; the largest real one (1000 times) is ~25 KB
# Everything the parent reads for one request; and the longest command line the native worker reads.
REQUEST_CAP_BYTES = 4 << 20
MAX_LINES = 1000  # lines read for one request (progress lines and the reply)
MAX_DEPTH = 8  # nesting of a reply; the real ones are 2 deep
ERROR_TEXT_CHARS = 4000  # the worker cuts an error's text to this (a reply stays far under the cap)
# What a worker says when it fails: a CUDA error, the Python worker's exception, a system call's
# failure (loading the library, confining the process), the native worker's refusal of a request,
# the Triton worker's refusal of what a solve() did (torch compute, no kernel, a late compile).
ERROR_KINDS = ("cuda", "python", "os", "native", "policy")
# The type of each field the parent reads (a list's items: numbers); other fields are not read.
FIELD_TYPES: dict[str, type] = {
    "nonce": str, "ok": bool, "ready": bool, "pid": int, "pid_namespace": bool, "calls": int, "times_ms": list,
    "error": dict, "host_ms": list, "held": bool, "crowded": int, "late": int, "unseal": int,
    "compiled": int, "configs": int, "compile_s": float, "tune_s": float, "seconds": float, "tuned": str}


def worker_channel() -> tuple[TextIO, str]:
    """In the worker: the result channel and the run's nonce, as the parent passed them. Exits
    with status 2 (and a line on stderr, which goes to the log) when either is missing."""
    try:
        fd = int(os.environ.pop(ENV_FD, ""))
        os.fstat(fd)
    except (ValueError, OSError):
        print(f"judge.worker.main: no result fd in ${ENV_FD}: the worker is started by judge/worker/client.py",
              file=sys.stderr)
        sys.exit(2)
    os.set_inheritable(fd, False)  # nothing the worker starts can write on the channel
    nonce = sys.stdin.readline().strip()
    if not NONCE.fullmatch(nonce):
        print("judge.worker.main: no nonce on the first line of stdin", file=sys.stderr)
        sys.exit(2)
    return os.fdopen(fd, "w", encoding="utf-8"), nonce
