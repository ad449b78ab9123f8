"""The Triton worker's parts that run without a GPU (judge/worker/triton_gpu.py, triton_watch.py):
loading the parent's text, the wording of failures, and the watch's refusals. The worker itself
runs on the GPU: tests/test_triton_gpu.py."""
from __future__ import annotations

import pytest
from conftest import ROOT

from judge.worker.triton_watch import Refused, Watch

pytestmark = pytest.mark.usefixtures("triton_installed")  # tests/conftest.py


@pytest.fixture
def watch(monkeypatch):
    """A Watch installed on Triton's classes, which are restored after the test."""
    from triton.runtime import autotuner, jit

    for cls, name in ((jit.JITFunction, "run"), (jit.JITFunction, "_do_compile"), (autotuner.Autotuner, "_bench")):
        monkeypatch.setattr(cls, name, getattr(cls, name))
    w = Watch()
    w.install()
    return w


def test_the_module_runs_from_the_parents_text_not_the_file(tmp_path):
    from judge.worker.triton_gpu import load

    path = tmp_path / "answer.py"
    path.write_text("def solve(A, B, C, n):\n    raise SystemExit('the file on disk ran')\n")  # rewritten since
    text = (ROOT / "reference_solutions" / "vector_add" / "triton_01_blocked.py").read_text()
    solve = load(text, str(path))
    kernel = solve.__globals__["add_kernel"]
    assert kernel.src.startswith("def add_kernel(")  # Triton read the kernel's source from the text
    with pytest.raises(ValueError, match="defines no solve"):
        load("x = 1\n", str(path))


def test_failures_are_worded_for_the_parent():
    from judge.build.policy import PolicyError
    from judge.worker.triton_gpu import error_of

    assert error_of(Refused("solve() launched no Triton kernel"))["kind"] == "policy"
    assert error_of(PolicyError("x.py:1: import os"))["kind"] == "policy"
    try:
        [][1]
    except IndexError as e:
        err = error_of(e)
    assert err["kind"] == "python" and err["name"] == "IndexError" and "Traceback" in err["text"]


def test_torch_compute_and_no_kernel_are_refused(watch):
    import torch

    a = torch.ones(4)
    with pytest.raises(Refused, match=r"outside Triton kernels \(add\)"):
        watch.call(lambda: a.add(a))
    with pytest.raises(Refused, match="launched no Triton kernel"):
        watch.call(lambda: torch.zeros(4).fill_(1.0))  # allowed ops alone: no work done


def test_after_the_lock_compiling_and_tuning_are_refused(watch):
    from triton.runtime import autotuner, jit

    watch.lock()
    with pytest.raises(Refused, match="compiled a Triton kernel .* after the warm-up"):
        jit.JITFunction._do_compile(object(), None, None, None, None, None, None, False)
    with pytest.raises(Refused, match="autotuned after the warm-up"):
        autotuner.Autotuner._bench(object())
    assert watch.compiled == 0 and watch.configs == 0


def test_tuning_time_leaves_out_the_compiling_inside_it(monkeypatch):
    """The autotuner compiles each configuration inside its benchmarking: that time is compile_s's,
    the rest of the benchmarking tune_s's."""
    import time
    import types

    from triton.runtime import autotuner, jit

    def compile_(fn, *args, **kwargs):
        time.sleep(0.2)

    def bench(tuner, *args, **kwargs):
        jit.JITFunction._do_compile(object())  # the watched one, as Triton's own _bench reaches it
        time.sleep(0.02)
        return [1.0, 1.0, 1.0]

    monkeypatch.setattr(jit.JITFunction, "run", jit.JITFunction.run)
    monkeypatch.setattr(jit.JITFunction, "_do_compile", compile_)
    monkeypatch.setattr(autotuner.Autotuner, "_bench", bench)
    w = Watch()
    w.install()
    assert autotuner.Autotuner._bench(types.SimpleNamespace()) == [1.0, 1.0, 1.0]
    assert w.configs == 1 and w.compiled == 1
    assert 0.02 <= w.tune_s < 0.2 <= w.compile_s


def test_quick_tuning_times_each_configuration_by_one_call(monkeypatch):
    """The tests' worker's tuning: the autotuner's benchmark is `one_call_ms` for that call only;
    before and after it, the autotuner's own (Triton's `do_bench`: a cached property over
    `_do_bench`, which the watch sets and restores both of)."""
    import inspect
    from functools import cached_property

    from triton.runtime import autotuner, jit

    from judge.worker.triton_watch import one_call_ms

    assert isinstance(inspect.getattr_static(autotuner.Autotuner, "do_bench"), (cached_property, property))
    seen = []

    def bench(tuner, *args, **kwargs):
        seen.append(tuner.do_bench)
        return [1.0, 1.0, 1.0]

    class Tuner:  # the installed Triton's shape
        def __init__(self):
            self._do_bench = None

        @cached_property
        def do_bench(self):
            return self._do_bench or "the autotuner's own"

    monkeypatch.setattr(jit.JITFunction, "run", jit.JITFunction.run)
    monkeypatch.setattr(jit.JITFunction, "_do_compile", jit.JITFunction._do_compile)
    monkeypatch.setattr(autotuner.Autotuner, "_bench", bench)
    w = Watch()
    w.install()
    t = Tuner()
    for quick in (False, True, False):
        w.quick_tuning = quick
        autotuner.Autotuner._bench(t)
    assert seen == ["the autotuner's own", one_call_ms, "the autotuner's own"]
    assert t._do_bench is None and w.configs == 3
