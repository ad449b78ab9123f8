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
