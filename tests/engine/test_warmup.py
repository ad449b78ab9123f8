"""judge/engine/warmup.py: a Triton candidate's warm-up, on CPU fakes."""
from __future__ import annotations

import pytest
from conftest import PROBLEMS_DIR
from fakes import FakeWorker, cpu_session, fails_on

from judge.contract.verdict import Status
from judge.engine.outcome import RunFailure
from judge.engine.warmup import COMPILE_S, warm_up
from judge.problem import spec
from judge.problem.spec import workload_id
from judge.worker.client import WorkerFailure


@pytest.fixture
def vector_add():
    return spec.load_problem(PROBLEMS_DIR / "vector_add")


class TritonFake(FakeWorker):
    triton = True

    def request(self, op, timeout_s, what, keys=None, **args):
        reply = super().request(op, timeout_s, what, keys=keys, **args)
        if op == "warm":
            return {"seconds": 0.5, "compile_s": 0.25, "compiled": 2, "configs": 3}
        return reply


class TunedFake(TritonFake):
    """Says which configuration it kept, on the first workload only, with a control character."""

    def request(self, op, timeout_s, what, keys=None, **args):
        reply = super().request(op, timeout_s, what, keys=keys, **args)
        if op == "warm" and self.ops.count("warm") == 1:
            reply["tuned"] = "k: BLOCK: 128, num_warps: 8\x1b\nk2: BLOCK: 64"
        return reply


def test_what_each_autotuner_kept_is_kept_per_shape_and_cleaned(vector_add):
    s = cpu_session(vector_add)
    warm_up(s, TunedFake(), shapes(vector_add), "timed")
    first = shapes(vector_add)[0][0]
    assert s.report.warm_up[0].tuned == [f"{first}: k: BLOCK: 128, num_warps: 8", f"{first}: k2: BLOCK: 64"]
    s = cpu_session(vector_add)
    warm_up(s, TritonFake(), shapes(vector_add), "timed")  # a worker that says nothing: nothing kept
    assert s.report.warm_up[0].tuned == []


def shapes(problem):
    return [(workload_id(w), w) for w in problem.spec.tests]


def test_each_workload_is_called_once_then_the_worker_confines_itself(vector_add):
    s = cpu_session(vector_add)
    kept = s.buffers.alloc("kept", "float32", (4,))  # a buffer of the run's, not the warm-up's
    w = TritonFake()
    n = len(vector_add.spec.tests)
    warm_up(s, w, shapes(vector_add), "tests")
    assert w.ops == ["map", "warm", "unmap"] * n + ["confine"]
    deadlines = [t for op, t in w.requests if op == "warm"]
    assert deadlines == [vector_add.spec.timeout_s + COMPILE_S] * n
    (entry,) = s.report.warm_up
    assert (entry.phase, entry.workloads, entry.kernels, entry.configs) == ("tests", n, 2 * n, 3 * n)
    assert entry.compile_s == pytest.approx(0.25 * n) and entry.seconds >= 0
    assert list(s.buffers.buffers) == ["kept"] and s.buffers.buffers["kept"] is kept
    assert s.called  # an OOM from here on may be the submission's


def test_a_native_worker_has_no_warm_up(vector_add):
    s = cpu_session(vector_add)
    w = FakeWorker()
    warm_up(s, w, shapes(vector_add), "tests")
    assert w.ops == [] and s.report.warm_up == []


def test_a_refusal_in_the_warm_up_is_rejected_and_names_the_shape(vector_add):
    s = cpu_session(vector_add)
    s.candidate = w = TritonFake(fail=fails_on("warm", WorkerFailure("policy", "solve() launched no Triton kernel")))
    with pytest.raises(RunFailure) as e:
        warm_up(s, w, [("hidden 1", vector_add.spec.tests[0])], "tests")
    assert e.value.status is Status.REJECTED and "launched no Triton kernel" in e.value.message
    assert "confine" not in w.ops
