"""Static policy (DESIGN.md §5): includes, host-side assembly and imported symbols, on a machine
without a GPU. Every file in tests/exploits/ declares on its first line the rule it breaks; the
pipeline must reject it naming that rule and the offending line or symbol."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import PROBLEMS_DIR, ROOT, nvcc_test

from judge.build import nvcc as build
from judge.build import policy
from judge.build.cuda import CUDA
from judge.contract.events import Finished
from judge.contract.verdict import Status
from judge.engine.run import Options, evaluate
from judge.problem import spec

EXPLOITS = sorted((ROOT / "tests" / "exploits").glob("*.cu"))
_DECL = re.compile(r"^// expected: REJECTED — \[([\w-]+)\] (.+)$")


def declared(path: Path) -> tuple[str, str]:
    m = _DECL.match(path.read_text().splitlines()[0])
    assert m, f"{path.name}: first line must be `// expected: REJECTED — [rule] what`"
    return m.group(1), m.group(2)


def test_includes():
    inc = [ROOT / "no-such-toolkit"]
    src = '#include <cstdint>\n#include <math.h>\n// #include </etc/passwd>\n#include "../x.h"\n#include <dlfcn.h>\n'
    v = policy.check_includes(src, "s.cu", inc)
    assert [(x.rule, x.where) for x in v] == [("include", "s.cu:4"), ("include", "s.cu:5")]
    assert "parent" in v[0].detail and "neither" in v[1].detail


def test_includes_keep_line_numbers_across_block_comments(tmp_path):
    (tmp_path / "cuda_fp16.h").write_text("")
    src = '/* one\n two\n #include <evil.h> */\n#include <cuda_fp16.h>\n#include <thread>\n'
    v = policy.check_includes(src, "s.cu", [tmp_path])
    assert [(x.where, x.detail.split(":")[0]) for x in v] == [("s.cu:5", "`<thread>`")]


def test_host_asm_only_from_the_submission():
    ii = ('# 1 "/usr/include/stdio.h"\nextern int f() __asm__("f");\n'
          '# 7 "src.cu"\nint x;\nstatic void g() { __asm__ volatile("nop"); }\n')
    v = policy.check_host_asm(ii, "src.cu", "mine.cu")
    assert [(x.rule, x.where) for x in v] == [("host-asm", "mine.cu:8")]


def test_symbols():
    ok = ["__cudaRegisterFatBinary@libcudart.so.13", "cudaMemsetAsync@libcudart.so.13", "__cxa_atexit@GLIBC_2.2.5",
          "_Unwind_Resume@GCC_3.0", "_Znwm@GLIBCXX_3.4", "memcpy@GLIBC_2.14", "expf@GLIBC_2.27", "sqrt",
          "fprintf", "stderr@GLIBC_2.2.5", "exit@GLIBC_2.2.5", "cudaGetDriverEntryPoint"]
    assert policy.check_symbols(ok) == []
    bad = ["dlopen@GLIBC_2.34", "socket", "fopen64", "execvp", "pthread_create", "cublasSgemm_v2", "cudnnCreate",
           "ncclAllReduce", "PyEval_GetGlobals", "cuLaunchKernel", "cudaIpcOpenMemHandle", "getpid", "mmap"]
    v = policy.check_symbols(bad)
    assert [x.where for x in v] == [b.split("@")[0] for b in bad]
    assert "not on the allow-list" in v[bad.index("getpid")].detail
    assert "cuBLAS" in v[bad.index("cublasSgemm_v2")].detail


def test_a_problem_can_allow_a_library():
    assert policy.check_symbols(["cublasSgemm_v2", "cublasCreate_v2"], allow=["cublas"]) == []
    assert [x.where for x in policy.check_symbols(["cudnnCreate"], allow=["cublas"])] == ["cudnnCreate"]


def test_spec_allow_names_known_libraries(tmp_path):
    from toy_problem import VALID, write_problem

    d = write_problem(tmp_path, {**VALID, "allow": ["openblas"]})
    with pytest.raises(spec.ProblemError) as e:
        spec.load_problem(d)
    assert any("allow" in loc for loc, _ in e.value.errors)


@pytest.fixture(scope="module")
def exploit_builds(judge_cache):
    p = spec.load_problem(PROBLEMS_DIR / "vector_add")
    results = build.build_many([CUDA.request(p, f, "sm_90a") for f in EXPLOITS])
    return p, dict(zip(EXPLOITS, results))


@nvcc_test
@pytest.mark.parametrize("path", EXPLOITS, ids=[f.name for f in EXPLOITS])
def test_exploit_is_rejected_naming_its_rule(exploit_builds, path):
    """Judged with no GPU needed: REJECTED, and the message names the rule and the line or symbol."""
    problem, results = exploit_builds
    rule, what = declared(path)
    prepared = CUDA.from_build(problem, path, "sm_90a", results[path])
    report = next(ev.report for ev in evaluate(problem, path, Options(mode="test", arch="sm_90a", prepared=prepared))
                  if isinstance(ev, Finished))
    assert report.status == Status.REJECTED, (report.status, report.message)
    assert f"[{rule}]" in report.message, report.message
    if rule == "symbol":
        assert f"] {what}:" in report.message, report.message
    elif rule == "include" and not what.startswith("a "):
        assert what in report.message, report.message
    else:
        assert f"{path.name}:" in report.message, report.message


@nvcc_test
def test_every_model_answer_and_control_passes_the_policy(problem_builds):
    """No false alarms: the repository's own files break no rule (checked on their sm_90a builds)."""
    failures = []
    for (name, relpath, arch), r in problem_builds.items():
        if arch != "sm_90a" or not r.ok:
            continue
        try:
            if relpath != "starter":
                policy.check_source((ROOT / relpath).read_text(), relpath)
            policy.check_build(r.host_ii, r.lib, relpath, spec.load_problem(PROBLEMS_DIR / name).spec.allow)
        except policy.PolicyError as e:
            failures.append(f"{relpath}: {e}")
    assert not failures, "\n".join(failures)


def test_toolkit_headers_include_cccl():
    """CUDA 13 keeps libcu++ and CUB under include/cccl: `<cuda/atomic>` is a toolkit header."""
    from judge.build import toolkit

    dirs = toolkit.include_dirs()
    if not dirs:
        pytest.skip("no CUDA toolkit")
    src = "#include <cuda/atomic>\n#include <cub/cub.cuh>\n#include <cuda_fp16.h>\n"
    assert policy.check_includes(src, "s.cu", dirs) == []
