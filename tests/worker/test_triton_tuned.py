"""judge/worker/triton_tuned.py: which configuration a Triton submission's autotuners kept, read
from real `triton.autotune` objects (no GPU: the cache is filled as the autotuner fills it)."""
from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import ROOT

from judge.worker import triton_tuned

pytestmark = pytest.mark.usefixtures("triton_installed")  # tests/conftest.py

KERNELS = '''
import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4), triton.Config({"BLOCK": 128}, num_warps=8)],
                 key=["n"])
@triton.heuristics(values={"EVEN": lambda a: a["n"] % 2 == 0})
@triton.jit
def wrapped(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pass

@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=2), triton.Config({"BLOCK": 256}, num_warps=4)],
                 key=["n"])
@triton.jit
def plain(x, n, BLOCK: tl.constexpr):
    pass

@triton.jit
def untuned(x, n):
    pass

also_plain = plain  # the same autotuner under a second name: named once
def solve(x, n):
    pass
'''


@pytest.fixture
def module(tmp_path):
    path = tmp_path / "kernels.py"  # @triton.jit reads its source from the file
    path.write_text(KERNELS)
    spec = importlib.util.spec_from_file_location("kernels_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("kernels_under_test", None)


def test_finds_each_autotuner_once_through_heuristics(module):
    found = triton_tuned.autotuners(vars(module))
    assert sorted(map(triton_tuned.kernel_name, found)) == ["plain", "wrapped"]


def test_a_call_names_what_it_added_or_changed(module):
    tuners = triton_tuned.autotuners(vars(module))
    before = triton_tuned.snapshot(tuners)
    assert before == {} and triton_tuned.chosen(before, before) == ""
    module.plain.cache[(4096, "torch.float16")] = module.plain.configs[1]  # as Autotuner.run keeps its pick
    after = triton_tuned.snapshot(tuners)
    (line,) = triton_tuned.chosen(before, after).splitlines()
    assert line.startswith("plain: BLOCK: 256") and "num_warps: 4" in line
    assert triton_tuned.chosen(after, after) == ""  # the next shape's call: nothing new
    module.plain.cache[(4096, "torch.float16")] = module.plain.configs[0]  # re-tuned to another
    assert triton_tuned.chosen(after, triton_tuned.snapshot(tuners)).startswith("plain: BLOCK: 32")
    module.wrapped.cache[(7,)] = module.wrapped.configs[0]
    assert triton_tuned.chosen(after, triton_tuned.snapshot(tuners)).count("\n") == 1  # both, a line each


def test_no_autotuner_no_triton_and_odd_globals_give_nothing(monkeypatch):
    class Odd:
        fn = property(lambda self: self)  # a loop of .fn: walked a bounded number of steps
    assert triton_tuned.autotuners({"odd": Odd(), "n": 3, "cls": Odd}) == []
    monkeypatch.setitem(sys.modules, "triton.runtime.autotuner", None)  # no Triton here
    assert triton_tuned.autotuners({"x": 1}) == []


def test_the_parent_keeps_printable_capped_lines():
    assert triton_tuned.clean(None) == [] and triton_tuned.clean(["a"]) == []
    assert triton_tuned.clean("k: A\x1b[31m\n\n  \nk2: B\x00") == ["k: A[31m", "k2: B"]
    many = "\n".join(f"k{i}: " + "x" * 1000 for i in range(100))
    got = triton_tuned.clean(many)
    assert len(got) == triton_tuned.MAX_LINES and all(len(x) == triton_tuned.MAX_CHARS for x in got)


@pytest.mark.parametrize("answer,kernels", [("hgemm/triton_01_tl_dot.py", ["hgemm_kernel"]),
                                            ("flash_attn/triton_02_causal_band.py", None)])
def test_the_workers_namespace_holds_the_model_answers_autotuners(tmp_path, answer, kernels):
    """What the Triton worker reads at `init` (the globals of the solve() its load() returned)
    finds the autotuners of the model answers that autotune."""
    from judge.worker.triton_gpu import load

    path = ROOT / "reference_solutions" / answer
    found = triton_tuned.autotuners(load(path.read_text(), str(path)).__globals__)
    assert found and (kernels is None or sorted(map(triton_tuned.kernel_name, found)) == kernels)


def test_pin_narrows_each_named_autotuner_to_that_configuration(module):
    tuners = triton_tuned.autotuners(vars(module))
    wanted = f"plain: {module.plain.configs[1]}"
    assert triton_tuned.pin(tuners, [wanted]) is None
    assert [str(c) for c in module.plain.configs] == [wanted.split(": ", 1)[1]]  # one left: no tuning
    assert len(module.wrapped.configs) == 2  # not named: untouched
    why = triton_tuned.pin(tuners, ["nothere: BLOCK: 64"])
    assert "no autotuned kernel 'nothere'" in why and "plain, wrapped" in why
    why = triton_tuned.pin(tuners, ["wrapped: BLOCK: 3"])
    assert "wrapped: no configuration 'BLOCK: 3'" in why and "BLOCK: 64" in why and "BLOCK: 128" in why
    assert len(module.wrapped.configs) == 2  # a line that matches nothing changes nothing
