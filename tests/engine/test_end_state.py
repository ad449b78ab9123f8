"""Issue 16's classes 3, 5 and 9 on the CPU (docs/security.md): the fingerprint of the outputs after
the end event, the GPU stamps against the reported times, guard regions after every buffer, and
what the parent reads before the candidate runs. The worker's part is tests/fakes.py's
(`CpuSolver`, `record_check`, `record_stamps`); the parent's is the engine's own code."""
from __future__ import annotations

import math

import pytest
import torch
from conftest import PROBLEMS_DIR
from fakes import PEAKS, QUICK, CpuSolver, FakeWorker, cpu_session, drive, record_check, record_stamps

from judge.contract.verdict import Status
from judge.engine import correctness, guards, stamps
from judge.engine.batch_checks import BatchChecks
from judge.engine.benchmarks import TimedPhase
from judge.engine.buffers import make_slots
from judge.engine.outcome import RunFailure
from judge.engine.roles import baseline_role
from judge.gpu import device, guard_regions, integrity
from judge.problem import spec
from judge.worker.protocol import CHECK_COUNT, CHECK_FINGERPRINT, CHECK_STRIDE, MAX_CALLS_PER_BATCH

pytestmark = pytest.mark.usefixtures("no_nvml")  # tests/conftest.py


@pytest.fixture
def vector_add():
    return spec.load_problem(PROBLEMS_DIR / "vector_add")


@pytest.fixture
def reduce_sum():
    return spec.load_problem(PROBLEMS_DIR / "reduce_sum")




# -- the fingerprint's reference ---------------------------------------------------------------------

def test_mix_is_splitmix64s_finaliser():
    """mix(0, 1, 0) finalises the golden ratio alone: splitmix64's first output from seed 0, the
    published 0xE220A8397B1DCDAF."""
    assert integrity.mix(0, 1, 0) == 0xE220A8397B1DCDAF
    assert integrity.mix(0, 0, 0) == 0


def _by_hand(words: list[int], width: int, salt: int) -> int:
    """The kernel's sum, one word at a time, in Python integers."""
    m = (1 << 64) - 1
    total = 0
    for i, w in enumerate(words):
        x = ((w & ((1 << 8 * width) - 1)) ^ (i * 0x9E3779B97F4A7C15) ^ (salt << 56)) & m
        x ^= x >> 30
        x = (x * 0xBF58476D1CE4E5B9) & m
        x ^= x >> 27
        x = (x * 0x94D049BB133111EB) & m
        total += x ^ (x >> 31)
    return total & m


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int32])
def test_fingerprint_matches_a_hand_computation(dtype):
    g = torch.Generator().manual_seed(5)
    t = (torch.randn(1001, generator=g) * 100).to(dtype)
    width = t.element_size()
    raw = t.view(torch.int16 if width == 2 else torch.int32).tolist()  # signed: the sign bits must not leak
    for salt in (0, 1, 3):
        assert integrity.fingerprint(t, salt) == _by_hand(raw, width, salt)
    assert integrity.fingerprint(t, 0) != integrity.fingerprint(t, 1)  # outputs of a call differ by salt
    swapped = t.clone()
    swapped[[3, 4]] = t[[4, 3]]
    assert t[3] == t[4] or integrity.fingerprint(swapped, 0) != integrity.fingerprint(t, 0)  # position counts
    assert integrity.fingerprint(t[:0], 0) == 0


# -- the stamps ------------------------------------------------------------------------------------

def test_stamps_agree_with_honest_times():
    # two calls of 1 ms each, 3 us of launch gaps inside each pair of stamps
    excess = stamps.check(0, 10_000_000, [(1000, 1_004_000), (2_001_000, 3_004_000)], [1.0, 1.0])
    assert excess == pytest.approx(0.003)


@pytest.mark.parametrize("before, after, pairs, times, words", [
    (5000, 10**7, [(1000, 1_004_000)], [1.0], "before the judge's stamp before the request"),
    (0, 10**7, [(1000, 900)], [0.0], "before its start stamp"),
    (0, 10**7, [(1000, 1_004_000), (500_000, 1_504_000)], [1.0, 1.0], "before call 0's end stamp"),
    (0, 1_000_000, [(1000, 1_004_000)], [1.0], "after the judge's stamp after the reply"),
    (0, 10**7, [(1000, 1_004_000)], [1.5], "call 0 reported 1.5000 ms, but its stamps are 1.0030 ms apart"),
    (0, 10**8, [(0, 10_000_000)] * 1 + [(10_000_000, 20_000_000)], [1.0, 1.0], "2 call(s) reported 2.0000 ms"),
])
def test_stamps_catch_times_that_do_not_fit(before, after, pairs, times, words):
    with pytest.raises(stamps.Disagreement) as info:
        stamps.check(before, after, pairs, times)
    assert words in str(info.value)


def test_a_coarse_timer_widens_the_tolerances():
    pairs, times = [(0, 0)], [0.03]  # a 30 us call whose stamps fell in one tick of the timer
    with pytest.raises(stamps.Disagreement):
        stamps.check(0, 10**6, pairs, times)
    stamps.check(0, 10**6, pairs, times, tick_ns=50_000)


# -- guard regions -----------------------------------------------------------------------------------

def test_guard_regions_are_large_and_their_input_patterns_break_sums_and_maxima():
    for nbytes in (1, 4, 4000, 4099 * 4):
        total = guard_regions.padded(nbytes)
        assert total - nbytes >= guard_regions.GUARD_BYTES and total % guard_regions.ALLOC_ALIGN == 0
    for dtype in ("float32", "float16", "bfloat16"):
        slack = guard_regions.pattern(64, dtype, output=False).view(getattr(torch, dtype)).double()
        assert slack[0] == float("inf") and slack[1] != slack[1] and slack[2] == float("-inf")
        x = torch.rand(5, dtype=torch.float64)
        assert not torch.isfinite(torch.cat([x, slack[:1]]).sum())  # one element past the end
        assert torch.cat([x, slack[:1]]).max() == float("inf")
    ints = guard_regions.pattern(16, "int32", output=False).view(torch.int32)
    assert (ints == 0x5A5A5A5A).all()
    a, b = guard_regions.pattern(4096, "float32", output=True), guard_regions.pattern(4096, "float32", output=True)
    assert not torch.equal(a, b)  # an output's slack is random per buffer


def test_overrun_says_how_far_past_the_end(vector_add):
    s = cpu_session(vector_add)
    b = s.device_buffers().alloc("x:C", "float32", (7,))
    assert b.overrun() == 0 and b.slack.numel() >= guard_regions.GUARD_BYTES
    b.slack[8:12] = b.expected[8:12] ^ 1  # the third float past n
    assert b.overrun() == 12


def test_the_counter_buffer_holds_a_record_per_call(vector_add):
    s = cpu_session(vector_add)
    counts = guards.counter(s, "bench0", MAX_CALLS_PER_BATCH)
    assert counts.nbytes == MAX_CALLS_PER_BATCH * CHECK_STRIDE and counts.tensor.shape == (MAX_CALLS_PER_BATCH, 4)
    counts.tensor[2, CHECK_FINGERPRINT] = 99  # not a count
    guards.require_complete(counts, 3, "n=7")
    counts.tensor[2, CHECK_COUNT] = 4
    with pytest.raises(RunFailure, match="4 element"):
        guards.require_complete(counts, 3, "n=7")
    counts.tensor[0, CHECK_FINGERPRINT] = -1
    assert guards.records(counts, 1)[0][CHECK_FINGERPRINT] == (1 << 64) - 1  # unsigned, as the kernel's u64


# -- a test call ---------------------------------------------------------------------------------------

def one_call(problem, solve, n, late=None):
    """One test call whose `solve(buffers)` runs in the fake worker, then the worker's check of the
    outputs, then `late(buffers)` (work that finished after the check)."""
    s = cpu_session(problem)

    def on(op, args, worker):
        if op == "call":
            bufs = {b.id.split(":")[-1]: b for b in s.buffers.buffers.values()}
            solve(bufs)
            record_check(s.buffers.buffers[args["counter"]], 0,
                         [(s.buffers.buffers[o["buf"]], o["word"]) for o in args["outputs"]])
            if late:
                late(bufs)

    s.candidate = FakeWorker(on=on)
    return correctness.test_one(s, correctness.Case({"n": n}, f"n={n}", "test0", False))


def add(b):
    b["C"].tensor.copy_(b["A"].tensor + b["B"].tensor)


def float4_add(b):
    """A float4 kernel without its tail: C[0..n+2] from A and B (it reads, and writes, past n)."""
    n = b["C"].tensor.numel()
    past = (-n) % 4
    a = torch.cat([b["A"].tensor, b["A"].slack[:4 * past].view(torch.float32)])
    bb = torch.cat([b["B"].tensor, b["B"].slack[:4 * past].view(torch.float32)])
    add(b)
    b["C"].slack[:4 * past] = (a + bb)[n:].view(torch.uint8)


def test_a_test_call_that_writes_past_the_end_of_its_output_is_rejected(vector_add):
    case, failure = one_call(vector_add, float4_add, 1001)
    assert failure is not None and failure.status == Status.REJECTED, failure
    assert failure.message == "solve() wrote past the end of C (12 bytes after it) on n=1001"
    assert not case.passed
    case, failure = one_call(vector_add, add, 1001)
    assert failure is None and case.passed


def test_a_test_call_that_writes_past_the_end_of_an_input_is_rejected(vector_add):
    def scribble(b):
        add(b)
        b["B"].slack[:4] = 0

    _, failure = one_call(vector_add, scribble, 100)
    assert failure is not None and failure.status == Status.REJECTED
    assert failure.message == "solve() wrote past the end of its input B (4 bytes after it) on n=100"


def test_a_test_call_that_reads_past_the_end_of_an_input_is_wrong(reduce_sum):
    """A float4 sum that folds the 3 floats past n into the total: the slack's +inf, NaN, -inf."""
    def float4_sum(b):
        x = b["X"].tensor
        past = (-x.numel()) % 4
        b["out"].tensor[0] = torch.cat([x, b["X"].slack[:4 * past].view(torch.float32)]).sum()

    def exact_sum(b):
        b["out"].tensor[0] = b["X"].tensor.double().sum().float()

    _, failure = one_call(reduce_sum, float4_sum, 1025)
    assert failure is not None and failure.status == Status.WRONG_ANSWER, failure
    _, failure = one_call(reduce_sum, exact_sum, 1025)
    assert failure is None


def test_outputs_that_change_after_the_workers_check_are_rejected(reduce_sum):
    """Zeros before the check, the real sum after it (a low-priority side stream that outlived the
    call): complete, right once synchronised, and REJECTED by the fingerprint."""
    def zero(b):
        b["out"].tensor.zero_()

    def finish(b):
        b["out"].tensor[0] = b["X"].tensor.double().sum().float()

    case, failure = one_call(reduce_sum, zero, 1000, late=finish)
    assert failure is not None and failure.status == Status.REJECTED, failure
    assert failure.message.startswith("solve()'s outputs changed after it returned on n=1000: ")
    assert not case.passed


# -- timed batches ------------------------------------------------------------------------------------

def timed(problem, **solver):
    s = cpu_session(problem, mode="submit", policy=QUICK)
    s.candidate = FakeWorker(0.002, on=CpuSolver(s, **solver))
    return s


def test_timed_batches_pass_and_record_the_stamps_excess(vector_add):
    s = timed(vector_add, gap_ns=3000)
    r = drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert r.stamp_excess_ms == pytest.approx(0.003, abs=1e-6)
    assert s.witness().asked and max(s.witness().asked) <= 8  # at most the slots, the last call on each


def test_outputs_finished_after_the_end_event_are_rejected(vector_add):
    def late(t):
        t["C"][0] += 1.0

    s = timed(vector_add, late=late)
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.REJECTED
    assert info.value.message == ("solve()'s outputs changed after its end event on n=1000: work finished "
                                  "outside the timed window")


def test_reported_times_shorter_than_the_stamps_are_rejected(vector_add):
    s = timed(vector_add, gap_ns=200_000)  # each call took 0.2 ms more on the GPU than it reported
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.REJECTED
    assert info.value.message.startswith("the worker's reported times disagree with the judge's GPU timestamps "
                                         "on n=1000: ")


def test_a_timed_write_past_the_end_is_rejected(vector_add):
    solver = None

    def late(t):
        bufs = solver.s.buffers.buffers
        c = next(b for b in bufs.values() if b.tensor is t["C"])
        c.slack[100] ^= 0xFF

    s = cpu_session(vector_add, mode="submit", policy=QUICK)
    solver = CpuSolver(s, late=late)
    s.candidate = FakeWorker(0.002, on=solver)
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.REJECTED
    assert info.value.message.startswith("solve() wrote past the end of C (101 bytes after it) on n=1000 (input slot ")


def test_a_baselines_disagreeing_times_are_the_judges_problem(vector_add):
    s = cpu_session(vector_add, mode="submit")
    w = {"n": 100}
    slots = make_slots(s, 0, w)
    counts = guards.counter(s, "bench0", 4)
    checks = BatchChecks(s, FakeWorker(role=baseline_role("torch")), w, slots, counts)
    checks.start()
    clock = s.witness().clock
    start = clock.now()
    clock.t += 10**6
    record_stamps(counts, 0, start, clock.now())  # 1 ms on the GPU
    record_check(counts, 0, [(slots.bufs[0]["C"], None)])
    with pytest.raises(RunFailure) as info:
        checks.verify([0], [0.1])  # reported: 0.1 ms
    assert info.value.status == Status.INTERNAL_ERROR
    assert info.value.message.startswith("the worker's reported times disagree with the judge's GPU timestamps "
                                         "on n=100: 1 call(s) reported 0.1000 ms in all")


# -- read before the candidate runs -------------------------------------------------------------------

def test_the_peaks_are_read_before_any_worker_starts(vector_add, monkeypatch):
    from judge.engine import run

    order = []
    s = cpu_session(vector_add, mode="submit")
    s.peaks = None
    monkeypatch.setattr(device, "cached_peaks", lambda gpu: order.append("peaks") or PEAKS)
    s.spawn = lambda role, torch=False, label="": order.append(role) or FakeWorker(role=role)
    s.start_torch = lambda: order.append("torch")
    run.start_workers(s)
    assert order == ["peaks", "candidate", "candidate", "baseline torch.add", "torch"] and s.peaks is PEAKS
    assert s.spare is not None and s.spare is not s.candidate  # the timed calls' own worker


def test_preload_reads_the_baselines_and_the_timed_phase_sends_their_text(vector_add):
    s = cpu_session(vector_add, mode="submit")
    path, _ = vector_add.impl_path(vector_add.baselines[0].impl)
    assert s.baseline_sources == {vector_add.baselines[0].impl: path.read_text()}
    sent = {}
    w = FakeWorker(role=baseline_role("torch"), on=lambda op, args, wk: sent.update(args))
    s.baselines = [(vector_add.baselines[0], w)]
    list(TimedPhase().load_baselines(s))  # a generator: a restarted baseline is loaded again
    assert sent["baseline"]["source"] == path.read_text()


def test_the_baseline_worker_runs_the_text_it_was_sent(tmp_path):
    from judge.worker.main import baseline_module

    f = tmp_path / "reference.py"
    f.write_text("def baseline():\n    return 'rewritten after the candidate ran'\n")
    sent = "def baseline():\n    return 'read before'\n"
    module = baseline_module({"file": str(f), "func": "baseline", "source": sent})
    assert module.baseline() == "read before"
    assert baseline_module({"file": str(f), "func": "baseline"}).baseline() == "rewritten after the candidate ran"


def test_the_timed_phase_needs_the_peaks_read_before(vector_add):
    s = cpu_session(vector_add, mode="submit")
    s.peaks = None
    s.baselines = []
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase()(s))
    assert info.value.status == Status.INTERNAL_ERROR and "peaks" in info.value.message


# -- nothing of the candidate runs while a baseline is timed --------------------------------------------

def test_no_candidate_worker_lives_while_a_baseline_is_timed(vector_add):
    """The correctness phase's worker is ended before the first baseline batch; the timed calls'
    worker (the spare) loads the library after the last "before" batch and is ended before the
    first "after" batch (judge/engine/benchmarks.py)."""
    from fakes import with_benchmarks

    problem = with_benchmarks(vector_add, {"n": 1000}, {"n": 3000})
    s = cpu_session(problem, mode="submit", policy=QUICK, baseline_policy=QUICK)
    seen: list[tuple[str, str]] = []

    def worker(name, role, solver=None):
        def on(op, args, w):
            seen.append((name, op))
            if solver:
                solver(op, args, w)
        w = FakeWorker(0.002 if role == "candidate" else 0.004, name=name, role=role, on=on)
        w.close = lambda: seen.append((name, "close"))
        return w

    s.candidate = worker("tests", "candidate")
    s.spare = worker("timed", "candidate", CpuSolver(s))
    s.library = {"library": "solution.so"}
    s.baselines = [(problem.baselines[0], worker("base", baseline_role("torch")))]
    drive(TimedPhase()(s))
    batches = [(i, name) for i, (name, op) in enumerate(seen) if op == "time_batch"]
    at = {e: i for i, e in reversed(list(enumerate(seen)))}  # each (name, op)'s first index
    base = [i for i, name in batches if name == "base"]
    timed = [i for i, name in batches if name == "timed"]
    closed = [i for i, e in enumerate(seen) if e == ("timed", "close")]
    assert at[("tests", "close")] < base[0]
    before, after = [i for i in base if i < timed[0]], [i for i in base if i > timed[-1]]
    assert before and after and len(before) + len(after) == len(base)  # no baseline batch among the candidate's
    assert before[-1] < at[("timed", "init")] < timed[0] and timed[-1] < closed[0] < after[0]
    assert s.candidate.name == "timed" and len(s.report.benchmarks) == 2
    # where the wall time went, by pass, in the order the passes ran (Report.phases_s)
    assert list(s.report.phases_s) == ["load baselines", "baselines before", "load (timed)", "candidate",
                                       "baselines after"]
    assert all(v >= 0 for v in s.report.phases_s.values()) and s.report.phases_s["candidate"] > 0


def test_device_buffers_allocate_whole_2mib_multiples_zero_the_rest_and_guard_the_same_slack(monkeypatch):
    from judge.gpu import devmem

    PTR = 1 << 40
    sizes = []

    class Rt:
        def malloc(self, n):
            sizes.append(n)
            return PTR

        def ipc_handle(self, ptr):
            return b"\0" * 64

    memory: dict[int, torch.Tensor] = {}  # what the parent's memory held before: 0xEE everywhere

    def tensor_at(ptr, nbytes, dtype, shape):
        raw = memory.setdefault(ptr, torch.full((nbytes,), 0xEE, dtype=torch.uint8))
        return raw.view(getattr(torch, dtype)).view(tuple(shape))

    monkeypatch.setattr(devmem, "tensor_at", tensor_at)
    bufs = devmem.DeviceBuffers(Rt())
    # the last is 2 MiB exactly: its guard region takes a second 2 MiB
    for i, shape in enumerate(((7,), (1000, 1001), (1 << 19,))):
        nbytes = 4 * math.prod(shape)
        b = bufs.alloc(f"x{i}", "float32", shape)
        assert sizes[-1] % guard_regions.MAP_ALIGN == 0 and sizes[-1] >= guard_regions.padded(nbytes)
        assert sizes[-1] - guard_regions.MAP_ALIGN < guard_regions.padded(nbytes)  # the least such multiple
        assert b.nbytes == nbytes and b.slack.numel() == guard_regions.padded(nbytes) - nbytes
        tail = memory.pop(PTR + guard_regions.padded(nbytes))  # the rest the worker maps: zeroed
        assert tail.numel() == sizes[-1] - guard_regions.padded(nbytes) and not tail.any()
        memory.clear()
