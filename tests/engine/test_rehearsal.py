"""The baselines' rehearsal (judge/engine/rehearsal.py), on the CPU with fake workers: each baseline's
worker is loaded and makes its first call on every benchmark shape in a thread, the timed phase
joins it instead of loading again, its failures come out in the main thread as a load's would, and
it never starts while the device's peaks are still to be measured."""
from __future__ import annotations

import threading

import pytest
from conftest import PROBLEMS_DIR
from fakes import PEAKS, QUICK, CpuSolver, FakeWorker, cpu_session, drive, fails_on, with_benchmarks

from judge.contract.verdict import Status
from judge.engine import run
from judge.engine.benchmarks import TimedPhase
from judge.engine.outcome import RunFailure
from judge.engine.rehearsal import Rehearsal, workload_args
from judge.engine.roles import baseline_role
from judge.gpu import device
from judge.problem import spec
from judge.worker.client import WorkerFailure

pytestmark = pytest.mark.usefixtures("no_nvml")  # tests/conftest.py

KILLED = WorkerFailure("crash", "x: the worker was killed by SIGKILL", signal="SIGKILL")


@pytest.fixture
def vector_add():
    return with_benchmarks(spec.load_problem(PROBLEMS_DIR / "vector_add"), {"n": 1000}, {"n": 3000})


def session(problem, baseline: FakeWorker):
    s = cpu_session(problem, mode="submit", policy=QUICK, baseline_policy=QUICK)
    baseline.role = baseline_role("torch")
    s.baselines = [(problem.baselines[0], baseline)]
    return s


def test_each_shape_is_rehearsed_once_as_dtypes_and_shapes(vector_add):
    args = [workload_args(cpu_session(vector_add), w) for w in vector_add.spec.benchmarks]
    assert args == [[{"alloc": {"dtype": "float32", "shape": [n]}}] * 3 + [{"int": n}] for n in (1000, 3000)]


def test_the_timed_phase_joins_the_rehearsal_instead_of_loading_again(vector_add):
    sent: list[tuple[str, dict]] = []
    w = FakeWorker(0.004, on=lambda op, a, wk: sent.append((op, a)))
    s = session(vector_add, w)
    s.rehearsal = Rehearsal(s)
    s.rehearsal.start()
    drive(TimedPhase().load_baselines(s))
    assert w.ops[:2] == ["init", "rehearse"] and w.ops.count("init") == 1
    assert sent[0][1]["baseline"]["source"] == s.baseline_sources[vector_add.baselines[0].impl]
    assert [len(x) for x in sent[1][1]["workloads"]] == [4, 4]
    assert s.report.rehearsal_s == {"torch.add": 0.0}  # the worker's seconds (a fake's reply has none)
    # then timed as ever, on the parent's inputs
    s.candidate, s.spare, s.library = FakeWorker(0.002), FakeWorker(0.002, on=CpuSolver(s)), {"lib": "x.so"}
    drive(TimedPhase()(s))
    assert "time_batch" in w.ops and w.ops.index("time_batch") > w.ops.index("rehearse")


def test_the_rehearsals_deadline_grows_with_the_shapes(vector_add):
    w = FakeWorker(0.004)
    s = session(vector_add, w)
    s.rehearsal = Rehearsal(s)
    s.rehearsal.start()
    s.rehearsal.wait()
    deadline = dict(w.requests)["rehearse"]
    assert deadline == pytest.approx(2 * (vector_add.spec.timeout_s + 30.0))


def test_a_baseline_that_fails_its_rehearsal_is_the_judges_problem(vector_add):
    err = WorkerFailure("python", "the first call of baseline torch: RuntimeError: no kernel image")
    s = session(vector_add, FakeWorker(0.004, fail=fails_on("rehearse", err)))
    s.rehearsal = Rehearsal(s)
    s.rehearsal.start()
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().load_baselines(s))  # raised in the main thread, when joined
    assert info.value.status == Status.INTERNAL_ERROR and "no kernel image" in info.value.message


def test_a_baseline_killed_during_its_rehearsal_is_restarted_and_loaded(vector_add):
    """Killed from outside while the candidate's worker lives (an `Interference`): the timed phase
    restarts it as it would a worker killed during its load."""
    old = FakeWorker(0.004, fail=fails_on("rehearse", KILLED))
    s = session(vector_add, old)
    s.candidate = FakeWorker(0.002)
    new = FakeWorker(0.004)
    s.spawn = lambda role, torch=False, label="", triton=None: (setattr(new, "role", role), new)[1]
    s.rehearsal = Rehearsal(s)
    s.rehearsal.start()
    drive(TimedPhase().load_baselines(s))
    assert s.baselines[0][1] is new and old.closed and new.ops == ["init"]  # loaded, not rehearsed
    assert s.restarted == {baseline_role("torch")}


def test_no_rehearsal_while_the_peaks_are_to_be_measured(vector_add, monkeypatch):
    """Measuring the peaks wants the GPU to itself: with no cached peaks the rehearsal starts after
    `preload` measured them."""
    s = session(vector_add, FakeWorker(0.004))
    s.peaks = None
    run.rehearse(s)
    assert s.rehearsal is None
    monkeypatch.setattr(device, "peaks", lambda gpu: PEAKS)
    run.preload(s)
    run.rehearse(s)
    assert s.rehearsal is not None
    s.rehearsal.wait()


@pytest.mark.parametrize("mode, rehearse, started", [("submit", True, True), ("submit", False, False),
                                                     ("test", True, False)])
def test_only_timed_runs_rehearse_and_the_option_turns_it_off(vector_add, mode, rehearse, started):
    s = cpu_session(vector_add, mode=mode, rehearse=rehearse)
    s.baselines = [(vector_add.baselines[0], FakeWorker(role=baseline_role("torch")))]
    run.rehearse(s)
    assert (s.rehearsal is not None) is started
    if s.rehearsal:
        s.rehearsal.wait()


def test_the_rehearsal_runs_beside_the_main_thread(vector_add):
    """While a baseline's worker is busy with its first calls, the parent goes on (the build, the
    candidate's tests): the rehearsal waits on its worker, not the parent on the rehearsal."""
    go = threading.Event()
    w = FakeWorker(0.004, on=lambda op, a, wk: go.wait(5) if op == "rehearse" else None)
    s = session(vector_add, w)
    s.rehearsal = Rehearsal(s)
    s.rehearsal.start()
    assert s.rehearsal.threads["torch.add"].is_alive()  # still in `rehearse`: start() did not wait
    go.set()
    s.rehearsal.wait()
    assert w.ops == ["init", "rehearse"]


def test_a_triton_candidates_tests_worker_warms_up_beside_the_rehearsal(vector_add, monkeypatch, tmp_path):
    """Its tuning there only picks what the tests run, so its load does not wait for the baselines'
    first calls (it did before quick tuning: 3.2-3.8 s on flash_attn); the rehearsal is joined by the
    timed phase, before anything is timed."""
    from judge.engine.session import Phases

    order: list[str] = []
    go = threading.Event()  # the baseline's first calls end only once the candidate has warmed up
    baseline = FakeWorker(0.004, on=lambda op, a, wk: go.wait(10) if op == "rehearse" else None)

    def build_and_start(s, source, arch):
        s.triton, s.gpu, s.peaks = True, object(), PEAKS
        s.baselines = [(vector_add.baselines[0], baseline)]
        s.candidate = FakeWorker(0.002)
        yield from ()
        return type("Prepared", (), {"load": {"module": "x.py"}})()

    def warm_up(s, worker, workloads, phase):
        order.append(f"warm-up {phase}")
        go.set()

    def timed(s):
        s.rehearsal.wait()
        order.append("joined")
        yield from ()

    monkeypatch.setattr(run, "check_source", lambda s, source: "sm_90a")
    monkeypatch.setattr(run, "build_and_start", build_and_start)
    monkeypatch.setattr(run, "preload", lambda s: setattr(s, "baseline_sources", {vector_add.baselines[0].impl: "x"}))
    monkeypatch.setattr(run, "warm_up", warm_up)
    original = run.Session.load

    def load(self, worker, what, *args, **kwargs):
        if worker is self.candidate:
            order.append("load")
        else:
            original(self, worker, what, *args, **kwargs)

    monkeypatch.setattr(run.Session, "load", load)
    correctness = lambda s: iter(())
    source = tmp_path / "x.py"
    source.write_text("# judge: vector_add\n")
    opts = run.Options(mode="submit", secret=1, phases=Phases(correctness, timed))
    events = list(run.evaluate(vector_add, source, opts))
    assert events[-1].report.status == Status.ACCEPTED, events[-1].report.message
    assert order == ["load", "warm-up tests", "joined"] and baseline.ops == ["init", "rehearse"]
    assert "rehearsal" not in events[-1].report.phases_s
