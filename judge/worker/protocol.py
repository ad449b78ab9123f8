"""What the parent and the worker must agree on: the commands, the batch limit, the poison bytes.

Imported by both sides (judge/worker/main.py, judge/worker/client.py and the engine); pure Python,
so that the worker process stays free of torch. The wire format: one JSON object per line; a
request is `{"op": OP, **args}` on the worker's stdin, a reply carries the run's nonce and `ok`
on the result channel (judge/worker/client.py checks both).
"""
from __future__ import annotations

from typing import Literal, get_args

# The worker's commands (a method of judge/worker/main.py's `Worker` each, but `exit`).
Op = Literal["init", "map", "unmap", "call", "prepare", "time_batch", "exit"]
OPS: frozenset[str] = frozenset(get_args(Op))

# Timed calls per `time_batch` request: the worker holds this many event pairs, and the parent
# keeps this many completeness counts (one u64 per timed call) for a benchmark shape.
MAX_CALLS_PER_BATCH = 1000

# Bytes whose repeated pattern reads as |value| >= 2 or NaN in f32/f16/bf16: outputs without a
# poison word (judge/gpu/integrity.py) are filled with one of them before a call, and the worker
# fills its L2 flush buffer with one.
POISON_BYTES = (*range(0x40, 0x80), *range(0xC0, 0x100))
