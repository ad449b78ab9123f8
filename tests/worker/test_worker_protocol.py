"""judge/worker/protocol.py: what parent and worker agree on, and the worker's independence from torch."""
from __future__ import annotations

import subprocess
import sys

import pytest

from judge.engine import stats, timing
from judge.worker import protocol


def test_the_worker_imports_neither_torch_nor_pydantic():
    code = ("import sys, judge.worker.main; bad = [m for m in ('torch', 'pydantic') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_command_is_a_method_of_the_worker():
    from judge.worker.main import Worker

    assert protocol.OPS == {"init", "rehearse", "map", "unmap", "call", "prepare", "time_batch", "warm", "confine",
                            "exit"}
    assert all(callable(getattr(Worker, op, None)) for op in protocol.OPS - protocol.TRITON_OPS - {"exit"})
    assert not any(hasattr(Worker, op) for op in protocol.TRITON_OPS)  # a baseline's worker refuses them


def test_the_triton_worker_adds_warm_and_confine():
    pytest.importorskip("triton")
    from judge.worker.triton_gpu import TritonWorker

    assert all(callable(getattr(TritonWorker, op, None)) for op in protocol.OPS - protocol.BASELINE_OPS - {"exit"})
    assert not any(callable(getattr(TritonWorker, op, None)) for op in protocol.BASELINE_OPS)  # a candidate's


def test_the_batch_limit_is_the_parents_too():
    assert stats.batch_size(1e-9, stats.TimingPolicy(batch_s=10.0)) == protocol.MAX_CALLS_PER_BATCH
    assert timing.MAX_CALLS_PER_BATCH is protocol.MAX_CALLS_PER_BATCH


def test_poison_bytes_are_large_or_nan_in_every_float_width():
    import struct

    for byte in protocol.POISON_BYTES:
        for fmt, width in (("<f", 4), ("<e", 2)):
            v = struct.unpack(fmt, bytes([byte]) * width)[0]
            assert v != v or abs(v) >= 2, (hex(byte), fmt, v)
        bf16 = struct.unpack("<f", b"\0\0" + bytes([byte]) * 2)[0]
        assert bf16 != bf16 or abs(bf16) >= 2, (hex(byte), "bf16", bf16)
