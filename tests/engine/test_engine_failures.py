"""The engine's failure → status mapping, on the CPU: the parts driven with fake workers (tests/fakes.py)
that fail in every way a worker can, as the candidate, as a baseline, and as `judge compare`'s A or B."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from conftest import PROBLEMS_DIR
from fakes import (
    GPU,
    PEAKS,
    QUICK,
    CpuSolver,
    FakeWorker,
    Log,
    cpu_session,
    drive,
    fails_on,
    pair_session,
    with_benchmarks,
)

from judge.contract.verdict import Status
from judge.engine import compare as comparing
from judge.engine import correctness, guards, reservoir
from judge.engine.benchmarks import TimedPhase
from judge.engine.compare import Comparison
from judge.engine.outcome import RunFailure
from judge.engine.roles import baseline_role, blame
from judge.engine.stats import TimingPolicy
from judge.engine.timing import Timer
from judge.gpu import device, health
from judge.gpu.cudart import CudaError
from judge.problem import spec
from judge.worker.client import WorkerFailure
from judge.worker.protocol import CHECK_COUNT, CHECK_FINGERPRINT

pytestmark = pytest.mark.usefixtures("no_nvml")  # tests/conftest.py

# kind of WorkerFailure -> (the candidate's status, how its message starts)
CANDIDATE = {"timeout": (Status.TIMEOUT, "solve(): no answer"),
             "crash": (Status.RUNTIME_ERROR, "solve(): no answer"),
             "cuda": (Status.RUNTIME_ERROR, "solve(): no answer"),
             "python": (Status.RUNTIME_ERROR, "solve(): no answer"),
             "os": (Status.RUNTIME_ERROR, "solve(): no answer"),
             "protocol": (Status.REJECTED, "result channel: solve(): no answer"),
             "malformed": (Status.RUNTIME_ERROR, "solve(): no answer")}
KINDS = sorted(CANDIDATE)
LONGER = TimingPolicy(min_samples=40, warmup_ms=0.0, batch_s=0.00001, budget_s=0.05, min_time_s=0.0, rest=0.0)


@pytest.fixture
def vector_add():
    return spec.load_problem(PROBLEMS_DIR / "vector_add")


def failure(kind: str) -> WorkerFailure:
    return WorkerFailure(kind, "solve(): no answer", "the worker's last words\n")


# -- blame, directly --------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_blame_by_role(kind):
    status, start = CANDIDATE[kind]
    f = blame(FakeWorker(), failure(kind))
    assert f.status == status and f.message.startswith(start) and f.culprit is None
    assert f.message.endswith("worker output (tail):\nthe worker's last words")
    base = blame(FakeWorker(role=baseline_role("torch")), failure(kind))
    assert base.status == Status.INTERNAL_ERROR and base.message.startswith("baseline torch: solve(): no answer")
    b = blame(FakeWorker(label="B"), failure(kind))
    assert b.status == status and b.message.startswith(f"B: {start}") and b.culprit == "B"


def test_blame_of_a_judged_output_names_the_side_only():
    wrong = RunFailure(Status.WRONG_ANSWER, "a timed call's output is wrong on n=7")
    assert blame(FakeWorker(), wrong) is wrong
    a = blame(FakeWorker(label="A"), wrong)
    assert (a.status, a.message, a.culprit) == (Status.WRONG_ANSWER, "A: a timed call's output is wrong on n=7", "A")


# -- the candidate ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
def test_candidate_failing_a_test_call(vector_add, kind):
    s = cpu_session(vector_add)
    s.candidate = FakeWorker(fail=fails_on("call", failure(kind)))
    case, f = correctness.test_one(s, correctness.Case({"n": 100}, "n=100", "test0", False))
    status, start = CANDIDATE[kind]
    assert f is not None and f.status == status and f.message.startswith(f"on n=100: {start}"), f
    assert not case.passed and case.error.startswith(start) and s.called


@pytest.mark.parametrize("kind", KINDS)
def test_candidate_failing_a_hidden_test_hides_nothing_but_fails(vector_add, kind):
    s = cpu_session(vector_add)
    s.candidate = FakeWorker(fail=fails_on("map", failure(kind)))
    with pytest.raises(RunFailure) as info:  # mapping is a request too: the same mapping
        correctness.test_one(s, correctness.Case({"n": 100}, "hidden 1", "hidden1", True))
    assert info.value.status == CANDIDATE[kind][0]


@pytest.mark.parametrize("kind", KINDS)
def test_candidate_failing_the_correctness_phase_ends_it(vector_add, kind):
    s = cpu_session(vector_add, hidden=1)
    s.candidate = FakeWorker(on=CpuSolver(s), fail=fails_on("call", failure(kind), after=1))
    with pytest.raises(RunFailure) as info:
        list(correctness.run_tests(s))
    assert info.value.status == CANDIDATE[kind][0]
    assert [c.passed for c in s.report.tests] == [True, False]


@pytest.mark.parametrize("kind", KINDS)
def test_candidate_failing_a_timed_batch(vector_add, kind):
    s = cpu_session(vector_add, mode="submit", policy=QUICK)
    s.candidate = FakeWorker(on=CpuSolver(s), fail=fails_on("time_batch", failure(kind), after=2))
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    status, start = CANDIDATE[kind]
    assert info.value.status == status and info.value.message.startswith(start)


def test_candidate_impossible_and_malformed_times(vector_add):
    s = cpu_session(vector_add, mode="submit", policy=QUICK)
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().time(s, FakeWorker(10_000.0), "n=1000", "candidate", QUICK))
    assert info.value.status == Status.REJECTED and info.value.message.startswith("impossible time on n=1000: ")
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().time(s, FakeWorker(count=lambda k: k - 1), "n=1000", "candidate", QUICK))
    assert info.value.status == Status.REJECTED and info.value.message.startswith("result channel: timing: asked")


@pytest.mark.parametrize("role", ["candidate", baseline_role("torch")])
def test_a_worker_that_does_not_start_is_the_judges_problem(vector_add, role):
    s = cpu_session(vector_add)
    w = FakeWorker(role=role, not_ready=failure("crash"))
    with pytest.raises(RunFailure) as info:
        s.load(w, {"lib": "/x/lib.so"})
    assert info.value.status == Status.INTERNAL_ERROR and "solve(): no answer" in info.value.message


# -- the timed phase, end to end on the CPU ---------------------------------------------------------

def test_timed_shape_on_the_cpu(vector_add, monkeypatch):
    # the noise rule, not the wall-time budget, ends the loop (a loaded CPU ran out of QUICK's 0.05 s
    # after 3 batches), and the re-check's budget is never reached
    steady = replace(QUICK, budget_s=10.0)
    monkeypatch.setattr(reservoir, "CHECK_BUDGET_S", 60.0)
    s = cpu_session(vector_add, mode="submit", policy=steady, baseline_policy=steady)
    s.candidate = FakeWorker(0.002, on=CpuSolver(s))
    s.baselines = [(vector_add.baselines[0], FakeWorker(0.004, role=baseline_role("torch"), on=CpuSolver(s)))]
    r = drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert r.workload == "n=1000" and r.stats.median_ms == 0.002 and r.stats.batches >= 5
    assert r.rechecked_slots == min(reservoir.MAX_STASH, r.stats.batches)  # memory for all 8 kept calls
    assert [b.speedup for b in r.baselines] == [pytest.approx(2.0)]
    assert s.candidate.ops[:2] == ["map", "prepare"] and s.candidate.ops[-1] == "unmap" and not s.buffers.buffers


def test_timed_outputs_from_a_cache_are_wrong(vector_add):
    warm = TimingPolicy(min_samples=5, warmup_ms=0.02, batch_s=0.00001, budget_s=0.05, min_time_s=0.0, rest=0.0)
    s = cpu_session(vector_add, mode="submit", policy=warm)  # 10 warm-up calls: every slot's answer cached
    s.candidate = FakeWorker(0.002, on=CpuSolver(s, cache=True))
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.WRONG_ANSWER and "timed call" in s.report.tests[-1].workload


def test_timed_calls_writing_an_input_are_rejected(vector_add):
    s = cpu_session(vector_add, mode="submit", policy=LONGER)
    solver = CpuSolver(s)

    def scribble(op, args, worker):
        solver(op, args, worker)
        if op == "time_batch" and len(worker.asked) == 3:  # the second timed batch
            a = s.buffers.buffers[solver.slots[(solver.next - 1) % len(solver.slots)][0]["buf"]]
            a.tensor.add_(1.0)

    s.candidate = FakeWorker(0.002, on=scribble)
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.REJECTED and "modified its input A" in info.value.message


def test_timed_inputs_are_sealed_until_their_own_call(vector_add):
    """judge/gpu/seal.py: warm-up batches are not sealed; every timed batch is, with a key per call,
    and what is in the slots before the batch (all that work left behind by an earlier call, or run
    between two calls, could read) is noise, not the inputs the calls are then given."""
    s = cpu_session(vector_add, mode="submit", policy=LONGER)
    solver = CpuSolver(s)
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []

    def snoop(op, args, worker):
        bufs = s.buffers.buffers
        if op == "time_batch" and worker.keys is not None:
            ids = [(solver.next + i) % len(solver.slots) for i in range(args["k"])]
            before = [bufs[solver.slots[k][0]["buf"]].tensor.clone() for k in ids]
            solver(op, args, worker)
            seen.extend((b, bufs[solver.slots[k][0]["buf"]].tensor.clone()) for b, k in zip(before, ids))
            assert len(worker.keys) == args["k"] and args["sealed"] is True
        else:
            solver(op, args, worker)

    s.candidate = FakeWorker(0.002, on=snoop)
    drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    sealed = s.candidate.sealed
    assert sealed[0] is False and sealed[-1] is True and sealed == sorted(sealed)  # the warm-up first, unsealed
    assert len(seen) >= 5
    for noise, opened in seen:
        assert (noise != opened).float().mean() > 0.99


def test_a_worker_that_leaves_its_inputs_sealed_is_rejected(vector_add):
    """A worker that never opens a call's inputs (no key asked for, none given to its gate) leaves them
    noise: the inputs' checksums after the batch say so."""
    s = cpu_session(vector_add, mode="submit", policy=LONGER)
    solver = CpuSolver(s)

    def ignore_keys(op, args, worker):
        worker.keys = None
        solver(op, args, worker)

    s.candidate = FakeWorker(0.002, on=ignore_keys)
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.REJECTED and "modified its input A" in info.value.message


def test_a_median_under_half_the_roofline_floor_is_rejected(vector_add):
    s = cpu_session(vector_add, mode="submit", policy=QUICK)
    s.candidate = FakeWorker(1e-9, on=CpuSolver(s))
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.REJECTED and "below half the roofline floor" in info.value.message


# -- a baseline -------------------------------------------------------------------------------------

OWN = [k for k in KINDS if k != "timeout"]  # what a worker does itself ("crash": no signal named)


@pytest.mark.parametrize("kind", OWN)
@pytest.mark.parametrize("op", ["init", "map", "time_batch", "unmap"])
def test_baseline_failing_is_an_internal_error(vector_add, kind, op):
    s = cpu_session(vector_add, mode="submit", policy=QUICK, baseline_policy=QUICK)
    s.candidate = FakeWorker(on=CpuSolver(s))
    s.baselines = [(vector_add.baselines[0], FakeWorker(role=baseline_role("torch"), fail=fails_on(op, failure(kind))))]
    s.spawn = lambda *a, **k: pytest.fail("restarted a baseline for its own failure")
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().load_baselines(s))
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.INTERNAL_ERROR and info.value.message.startswith("baseline torch: ")


def test_baseline_impossible_time_is_an_internal_error(vector_add):
    s = cpu_session(vector_add, mode="submit", policy=QUICK)
    w = FakeWorker(10_000.0, role=baseline_role("torch"))
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().time(s, w, "n=1000", "torch (before)", QUICK))
    assert info.value.status == Status.INTERNAL_ERROR and "impossible time on n=1000" in info.value.message


# -- judge compare's A and B ------------------------------------------------------------------------

def compare_run(monkeypatch, vector_add, a, b, solvers=None, policy=QUICK):
    """compare's timing of `a` and `b` (each solving on the CPU: fakes.CpuSolver, with `solvers[i]`)
    on vector_add's small shapes; the Comparison."""
    log = Log()
    a.name, a.log, b.name, b.log = "A", log, "B", log
    monkeypatch.setattr(device, "gpus", lambda: [GPU])
    problem = with_benchmarks(vector_add, {"n": 1000}, {"n": 4099})
    result = Comparison(problem=problem.name, a="a.cu", b="b.cu", status=Status.INTERNAL_ERROR)
    built = [type("B", (), {"load": {"lib": f"/x/{n}.so"}, "language": "cuda"})() for n in "ab"]
    list(comparing.time_pair(pair_session(problem, [a, b], solvers, policy=policy), built, result))
    return result


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("side", ["A", "B"])
@pytest.mark.parametrize("op", ["init", "map", "time_batch", "unmap"])
def test_compare_blames_the_side_that_failed(monkeypatch, vector_add, kind, side, op):
    bad = FakeWorker(fail=fails_on(op, failure(kind), after=1 if op == "time_batch" else 0))
    good = FakeWorker()
    a, b = (bad, good) if side == "A" else (good, bad)
    result = compare_run(monkeypatch, vector_add, a, b)
    status, start = CANDIDATE[kind]
    assert result.status == status and result.failed == side
    assert result.message.startswith(f"{side}: {start}"), result.message
    assert a.closed and b.closed


def test_compare_blames_an_impossible_time(monkeypatch, vector_add):
    result = compare_run(monkeypatch, vector_add, FakeWorker(), FakeWorker(10_000.0))
    assert result.status == Status.REJECTED and result.failed == "B" and result.message.startswith("B: impossible time")


def _late_input(t):
    t["A"][0] += 1.0  # after the call's check: an input changed by the timed call


def _late_output(t):
    t["C"][0] += 1.0  # after the call's check: work finished outside the timed window


def _past_the_end(t):
    t["slack"]["C"][100] ^= 0xFF  # 101 bytes past the end of C


WARM = TimingPolicy(min_samples=5, warmup_ms=0.02, batch_s=0.00001, budget_s=0.05, min_time_s=0.0, rest=0.0)
# what a side's CpuSolver does wrong -> (its worker's time per call, the policy, status, how the message goes on)
CHEATS = {
    "incomplete": ({"unwritten": True}, 0.002, QUICK, Status.REJECTED,
                   "output not complete when solve() returned on a timed call on n=1000: "),
    "modified input": ({"late": _late_input}, 0.002, QUICK, Status.REJECTED,
                       "solve() modified its input A (input slot "),
    "changed after the end event": ({"late": _late_output}, 0.002, QUICK, Status.REJECTED,
                                    "solve()'s outputs changed after its end event on n=1000: "),
    "write past the end": ({"late": _past_the_end}, 0.002, QUICK, Status.REJECTED,
                           "solve() wrote past the end of C (101 bytes after it) on n=1000 (input slot "),
    "impossible stamps": ({"gap_ns": 200_000}, 0.002, QUICK, Status.REJECTED,
                          "the worker's reported times disagree with the judge's GPU timestamps on n=1000: "),
    "stale cached answers": ({"cache": True}, 0.002, WARM, Status.WRONG_ANSWER,
                             "a timed call's output is wrong on n=1000"),
    "under the roofline floor": ({}, 1e-9, QUICK, Status.REJECTED, "impossible time on n=1000: the median"),
}


@pytest.mark.parametrize("cheat", sorted(CHEATS))
@pytest.mark.parametrize("side", ["A", "B"])
def test_compare_guards_each_sides_batches_as_submit_does(monkeypatch, vector_add, cheat, side):
    """A side whose timed batches fail one of `judge submit`'s per-batch checks (the completeness
    count, the input checksums, the fingerprint after the end event, the guard regions, the GPU
    stamps, the stash's re-check) or the roofline floor gets the status submit gives, blamed on
    that side, whichever side it is and whichever goes first."""
    solver, ms, policy, status, text = CHEATS[cheat]
    bad, good = FakeWorker(ms), FakeWorker(0.002)
    a, b = (bad, good) if side == "A" else (good, bad)
    solvers = [solver, {}] if side == "A" else [{}, solver]
    result = compare_run(monkeypatch, vector_add, a, b, solvers, policy)
    assert (result.status, result.failed) == (status, side), result.message
    assert result.message.startswith(f"{side}: {text}"), result.message
    assert result.shapes == [] and a.closed and b.closed
    if status is Status.WRONG_ANSWER:  # the evidence: the wrong stashed call, against the reference
        assert result.evidence and not result.evidence[-1].passed and "timed call" in result.evidence[-1].workload


def test_compare_timer_failure_through_guarded():
    t = Timer(FakeWorker(label="B", fail=fails_on("time_batch", failure("timeout"))), QUICK, 1.0)
    with pytest.raises(RunFailure) as info:
        comparing.guarded(t.worker, "n=7", t.warm_up)
    assert (info.value.status, info.value.culprit) == (Status.TIMEOUT, "B")


def test_guarded_names_the_side_once():
    """A failure found by the parent's checks (unlabelled) gets the side's name; one that names its
    side already (BatchChecks blames its own worker) is passed on unchanged."""
    w = FakeWorker(label="A")

    def fails(f):
        def run():
            raise f
        return run

    with pytest.raises(RunFailure) as info:
        comparing.guarded(w, "n=7", fails(RunFailure(Status.REJECTED, "output not complete")))
    assert (info.value.message, info.value.culprit) == ("A: output not complete", "A")
    with pytest.raises(RunFailure) as info:
        comparing.guarded(w, "n=7", fails(RunFailure(Status.REJECTED, "A: stamps", culprit="A")))
    assert info.value.message == "A: stamps"


# -- the parent's guards ----------------------------------------------------------------------------

@pytest.mark.parametrize("called, status", [(False, Status.INTERNAL_ERROR), (True, Status.RUNTIME_ERROR)])
def test_memory_exhausted_in_the_parent_is_blamed_on_whoever_caused_it(vector_add, called, status):
    s = cpu_session(vector_add)
    s.called = called
    for exc in (MemoryError("CUDA out of memory\\nmore"),
                CudaError(2, "cudaErrorMemoryAllocation", "out of memory", "cudaMalloc")):
        with pytest.raises(RunFailure) as info:
            with guards.memory(s, "the inputs of n=7"):
                raise exc
        assert info.value.status == status and "the inputs of n=7" in info.value.message
    with pytest.raises(CudaError):  # another CUDA error is no verdict of the guard's
        with guards.memory(s, "x"):
            raise CudaError(700, "cudaErrorIllegalAddress", "illegal address", "x")


def test_an_unfit_gpu_is_the_judges_problem(vector_add, monkeypatch):
    def unfit(index, dead, **kw):
        raise health.Unhealthy("clock slowdown: HW_SLOWDOWN")

    monkeypatch.setattr(health, "wait_until_fit", unfit)
    with pytest.raises(RunFailure) as info:
        guards.gate(cpu_session(vector_add), "the tests")
    assert info.value.status == Status.INTERNAL_ERROR and info.value.message.startswith("before the tests: clock")


def test_incomplete_outputs_are_rejected(vector_add):
    s = cpu_session(vector_add)
    counts = guards.counter(s, "bench0", 4)
    guards.require_complete(counts, 4, "n=7")
    counts.tensor[2, CHECK_FINGERPRINT:] = 7  # a fingerprint and stamps: not counts
    guards.require_complete(counts, 4, "n=7")
    counts.tensor[3, CHECK_COUNT] = 5  # call 3's record (judge/worker/protocol.py's CHECK_STRIDE layout)
    guards.require_complete(counts, 3, "n=7")  # only the batch's calls count
    with pytest.raises(RunFailure) as info:
        guards.require_complete(counts, 4, "a timed call on n=7")
    assert info.value.status == Status.REJECTED and "5 element(s)" in info.value.message
    guards.zero(s, counts)
    assert int(counts.tensor.sum()) == 0 and counts.tensor.dtype == torch.int64


# -- a baseline killed or stopped from outside (the candidate runs as the same user) ----------------

KILLED = {"SIGKILL": WorkerFailure("crash", "timing solve(): the worker was killed by SIGKILL", "tail\n",
                                   signal="SIGKILL"),
          "SIGTERM": WorkerFailure("crash", "mapping buffers: the worker was killed by SIGTERM", signal="SIGTERM"),
          "SIGSTOP": WorkerFailure("timeout", "timing solve(): no answer within 12.0 s")}


def restartable(vector_add, spares, **opts):
    """A submit session with a candidate and a baseline (`s.baselines[0][1]`, to be set); `spawn`
    hands out `spares` in turn and records what it was asked."""
    s = cpu_session(vector_add, mode="submit", policy=QUICK, baseline_policy=QUICK, **opts)
    s.candidate = FakeWorker(0.002, on=CpuSolver(s))
    spawned, pool = [], iter(spares)

    def spawn(role, torch=False, label="", triton=None):
        spawned.append((role, torch, label))
        w = next(pool)
        w.role, w.label = role, label
        s.workers.append(w)
        return w

    s.spawn = spawn
    return s, spawned


@pytest.mark.parametrize("how", sorted(KILLED))
@pytest.mark.parametrize("op, after", [("init", 0), ("map", 0), ("time_batch", 0), ("time_batch", 6),
                                       ("unmap", 0)])
def test_a_baseline_killed_from_outside_is_restarted_once_and_timed_again(vector_add, how, op, after):
    s, spawned = restartable(vector_add, [FakeWorker(0.004, on=None)])
    old = FakeWorker(0.004, role=baseline_role("torch"), fail=fails_on(op, KILLED[how], after=after))
    s.baselines = [(vector_add.baselines[0], old)]
    drive(TimedPhase().load_baselines(s))
    r = drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    new = s.baselines[0][1]
    assert new is not old and old.closed and spawned == [(baseline_role("torch"), True, "")]
    assert new.ops[0] == "init" and r.baselines[0].speedup == pytest.approx(2.0)
    if op in ("map", "time_batch") and not (op == "time_batch" and after):  # killed before its first timing
        assert new.ops[1:3] == ["map", "prepare"] and "time_batch" in new.ops
    if op == "unmap":  # killed letting go of the "before" pass's slots: it holds nothing, times the "after" pass
        assert new.ops[:3] == ["init", "map", "prepare"] and new.ops.count("map") == 1 and new.ops[-1] == "unmap"
    assert s.restarted == {baseline_role("torch")}


@pytest.mark.parametrize("how", sorted(KILLED))
def test_a_baseline_killed_from_outside_twice_is_the_candidates_runtime_error(vector_add, how):
    again = FakeWorker(0.004, fail=fails_on("time_batch", KILLED[how]))
    s, _ = restartable(vector_add, [again])
    s.baselines = [(vector_add.baselines[0], FakeWorker(0.004, role=baseline_role("torch"),
                                                        fail=fails_on("time_batch", KILLED[how], after=2)))]
    drive(TimedPhase().load_baselines(s))
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    f = info.value
    assert f.status == Status.RUNTIME_ERROR and f.culprit is None
    what = "was killed by " + how if how != "SIGSTOP" else "stopped answering"
    assert f.message.startswith(f"the baseline torch worker {what}"), f.message
    assert "while the candidate's worker was running, again after the judge restarted it: baseline torch: " in f.message


def test_one_restart_per_baseline_and_run(vector_add):
    """Killed once on the first shape (restarted), once more on the second: the candidate's. (Each
    pass maps its own slots: the spare's third mapping is the second shape's.)"""
    spare = FakeWorker(0.004, fail=lambda op, w: KILLED["SIGKILL"] if op == "time_batch" and w.ops.count("map") == 3
                       else None)
    s, _ = restartable(vector_add, [spare])
    s.baselines = [(vector_add.baselines[0], FakeWorker(0.004, role=baseline_role("torch"),
                                                        fail=fails_on("time_batch", KILLED["SIGKILL"], after=1)))]
    drive(TimedPhase().load_baselines(s))
    drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 1, {"n": 2000}, PEAKS))
    assert info.value.status == Status.RUNTIME_ERROR and "SIGKILL" in info.value.message


@pytest.mark.parametrize("failure_", [
    WorkerFailure("crash", "timing solve(): the worker exited with status 1"),
    WorkerFailure("crash", "timing solve(): the worker was killed: it held 40.0 GiB of host memory, over the limit "
                  "of 32.0 GiB"),  # the judge's memory watch
    WorkerFailure("python", "timing solve(): CUBLAS_STATUS_NOT_SUPPORTED (RuntimeError)"),
    WorkerFailure("cuda", "timing solve(): an illegal memory access (cudaErrorIllegalAddress)"),
    WorkerFailure("malformed", "timing solve(): the worker sent a malformed reply: not JSON")])
def test_a_baselines_own_failure_stays_the_judges(vector_add, failure_):
    s, _ = restartable(vector_add, [])
    s.baselines = [(vector_add.baselines[0], FakeWorker(0.004, role=baseline_role("torch"),
                                                        fail=fails_on("time_batch", failure_)))]
    drive(TimedPhase().load_baselines(s))
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.INTERNAL_ERROR and not s.restarted


def test_interference_needs_a_candidate_beside_the_baseline():
    from judge.engine.roles import Interference, from_outside

    base, cand = FakeWorker(role=baseline_role("torch")), FakeWorker()
    for f in KILLED.values():
        assert from_outside(f)
        assert type(blame(base, f)) is RunFailure and blame(base, f).status == Status.INTERNAL_ERROR
        e = blame(base, f, cand)
        assert isinstance(e, Interference) and e.status == Status.INTERNAL_ERROR and e.worker is base
        assert type(blame(cand, f, cand)) is RunFailure  # the candidate's own: TIMEOUT / RUNTIME_ERROR
    assert from_outside(WorkerFailure("crash", "x: the worker was killed by SIGSEGV", signal="SIGSEGV")) \
        == "was killed by SIGSEGV"
    assert from_outside(WorkerFailure("crash", "x: the worker exited with status 1")) is None


def test_a_baseline_killed_before_it_said_ready_is_restarted(vector_add):
    s, _ = restartable(vector_add, [FakeWorker(0.004)])
    old = FakeWorker(0.004, role=baseline_role("torch"), not_ready=KILLED["SIGKILL"])
    s.baselines = [(vector_add.baselines[0], old)]
    drive(TimedPhase().load_baselines(s))
    assert s.baselines[0][1] is not old and s.baselines[0][1].ops == ["init"]


# -- per-call deadlines -------------------------------------------------------------------------------

def test_a_stall_after_fast_calls_is_a_timeout_within_the_per_call_deadline(vector_add):
    """issue 16, 7: fast first calls once made the next warm-up batch huge and its deadline with it
    ((timeout_s × k) × (1 + rest) + 30 s): a call that stalls 120 s was ACCEPTED. Every request's
    deadline is now timeout_s + the slack, and the stall a TIMEOUT that soon."""
    from judge.engine.timing import DEADLINE_SLACK_S, WARMUP_GROWTH

    calls = []

    def times(b, i):
        calls.append(b)
        return 120_000.0 if len(calls) == 40 else 0.01

    s = cpu_session(vector_add, mode="submit")  # the default policy: 25 ms of warm-up, rest 1
    w = FakeWorker(times, realtime=True)
    timeout_s = vector_add.spec.timeout_s
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().time(s, w, "n=1000", "candidate", s.opts.policy))
    assert info.value.status == Status.TIMEOUT and "no answer within" in info.value.message
    deadlines = [d for op, d in w.requests if op == "time_batch"]
    assert max(deadlines) <= timeout_s + DEADLINE_SLACK_S and len(set(deadlines)) == 1
    assert w.waited_s <= timeout_s + DEADLINE_SLACK_S + 0.1  # the fast calls, then one deadline
    assert w.asked[0] == 1 and all(b <= a * WARMUP_GROWTH for a, b in zip(w.asked, w.asked[1:]))
