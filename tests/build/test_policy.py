"""Static policy (docs/security.md): includes, host-side assembly and imported symbols, on a machine
without a GPU. Every file in tests/exploits/ declares on its first line the rule it breaks; the
pipeline must reject it naming that rule and the offending line or symbol. Every file in
tests/controls/ is an honest idiom (error messages, iostream, CUB, exceptions, cooperative launch,
large shared memory, a forked stream) that must pass: no false rejections."""
from __future__ import annotations

import re
import typing
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
CONTROLS = sorted((ROOT / "tests" / "controls").glob("*.cu"))
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


def test_honest_idioms_symbols_pass():
    """What the controls' libraries import (gcc 12, CUDA 13), beyond the runtime API."""
    console = ["fwrite@GLIBC_2.2.5", "fputc", "putc@GLIBC_2.2.5", "puts", "fflush", "perror", "stdout", "stderr"]
    iostream = ["_ZNSt8ios_base4InitC1Ev@GLIBCXX_3.4", "_ZNSt8ios_base4InitD1Ev@GLIBCXX_3.4", "__cxa_atexit",
                "_ZSt4cerr@GLIBCXX_3.4", "_ZSt4cout", "_ZNSolsEi@GLIBCXX_3.4", "_ZNSo3putEc", "_ZNSo5flushEv",
                "_ZNKSt5ctypeIcE13_M_widen_initEv@GLIBCXX_3.4.11",
                "_ZNSt9basic_iosIcSt11char_traitsIcEE5clearESt12_Ios_Iostate@GLIBCXX_3.4",
                "_ZSt16__ostream_insertIcSt11char_traitsIcEERSt13basic_ostreamIT_T0_ES6_PKS3_l@GLIBCXX_3.4.9"]
    throw = ["_ZNSt13runtime_errorC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE@GLIBCXX_3.4.21",
             "_ZNSt13runtime_errorC2EPKc", "_ZNSt13runtime_errorD1Ev", "_ZNKSt13runtime_error4whatEv",
             "_ZTISt13runtime_error@GLIBCXX_3.4", "_ZTVSt13runtime_error", "_ZTSSt13runtime_error",
             "_ZNSt16invalid_argumentC1EPKc", "_ZTISt16invalid_argument", "_ZTISt9exception", "_ZNSt9exceptionD2Ev",
             "_ZTVN10__cxxabiv120__si_class_type_infoE@CXXABI_1.3", "_ZTVN10__cxxabiv117__class_type_infoE",
             "_ZTIi", "_ZTIPKc", "__cxa_allocate_exception", "__cxa_throw", "__cxa_free_exception",
             "__cxa_begin_catch", "__cxa_end_catch", "__gxx_personality_v0", "_Unwind_Resume"]
    assert policy.check_symbols(console + iostream + throw) == []


def test_near_the_allowances_stays_refused():
    """Each allowance is narrow: what sits next to it is still refused, naming its rule."""
    files = ["fopen", "fopen64", "fdopen", "freopen", "freopen64", "tmpfile", "open", "write", "fread", "read"]
    for v in policy.check_symbols(files):
        assert "files" in v.detail, v
    assert len(policy.check_symbols(files)) == len(files)
    nvtx = ["dlopen", "dlsym", "dlclose", "getenv"]  # NVTX's loader, if NVTX is not compiled out
    assert [x.where for x in policy.check_symbols(nvtx)] == nvtx
    unlisted = ["sched_yield", "_ZNSt13basic_filebufIcSt11char_traitsIcEE4openEPKcSt13_Ios_Openmode",
                "_ZTVSt13basic_filebufIcSt11char_traitsIcEE",
                "_ZNSt14basic_ofstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode",
                "_ZNSt10filesystem6removeERKNS_7__cxx114pathE", "_ZTISt13basic_filebufIcSt11char_traitsIcEE",
                "_ZNSt6threadC1Ev", "_ZTVN10__cxxabiv1_evilE"]
    v = policy.check_symbols(unlisted)
    assert [x.where for x in v] == unlisted
    assert "host threads" in v[unlisted.index("_ZNSt6threadC1Ev")].detail


def test_vendor_library_messages_name_the_allow_entry():
    """A vendor library's header or symbol says which `allow:` in problem.yaml would open it."""
    src = "#include <cublas_v2.h>\n#include <cublasLt.h>\n#include <cudnn.h>\n#include <cufft.h>\n"
    v = policy.check_includes(src, "s.cu", [])
    assert [x.where for x in v] == ["s.cu:1", "s.cu:2", "s.cu:3", "s.cu:4"]
    assert "allow: [cublas]" in v[0].detail and "problem.yaml" in v[0].detail
    assert "toolkit" not in v[0].detail
    assert "allow: [cublasLt]" in v[1].detail and "allow: [cudnn]" in v[2].detail
    assert "no problem can allow" in v[3].detail
    assert policy.check_includes(src, "s.cu", [], allow=["cublas", "cublasLt", "cudnn"])[0].where == "s.cu:4"
    s = {x.where: x.detail for x in policy.check_symbols(["cublasCreate_v2", "cublasLtMatmul", "ncclCommDestroy",
                                                             "cusparseCreate"])}
    assert "cuBLAS" in s["cublasCreate_v2"] and "allow: [cublas]" in s["cublasCreate_v2"]
    assert "allow: [cublasLt]" in s["cublasLtMatmul"] and "allow: [nccl]" in s["ncclCommDestroy"]
    assert "no problem can allow" in s["cusparseCreate"]


def test_a_problem_can_allow_a_library():
    assert policy.check_symbols(["cublasSgemm_v2", "cublasCreate_v2"], allow=["cublas"]) == []
    assert [x.where for x in policy.check_symbols(["cudnnCreate"], allow=["cublas"])] == ["cudnnCreate"]
    # cuBLASLt is an entry of its own: allowing cuBLAS does not let it through
    assert [x.where for x in policy.check_symbols(["cublasLtMatmul"], allow=["cublas"])] == ["cublasLtMatmul"]
    assert policy.check_symbols(["cublasLtMatmul"], allow=["cublasLt"]) == []


def test_allow_entries_are_the_policys_libraries():
    """problem.yaml's `allow:` accepts exactly the libraries the policy can open."""
    (allowed,) = typing.get_args(spec.Spec.model_fields["allow"].annotation)
    assert set(typing.get_args(allowed)) == set(policy.LIBRARIES)


def test_spec_allow_names_known_libraries(tmp_path):
    from toy_problem import VALID, write_problem

    d = write_problem(tmp_path, {**VALID, "allow": ["openblas"]})
    with pytest.raises(spec.ProblemError) as e:
        spec.load_problem(d)
    assert any("allow" in loc for loc, _ in e.value.errors)


@pytest.fixture(scope="module")
def exploit_builds(judge_cache):
    """The exploits and the controls, in one build_many (one ninja run)."""
    p = spec.load_problem(PROBLEMS_DIR / "vector_add")
    files = EXPLOITS + CONTROLS
    results = build.build_many([CUDA.request(p, f, "sm_90a") for f in files])
    return p, dict(zip(files, results))


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


def test_controls_declare_what_they_show():
    assert len(CONTROLS) >= 7
    for path in CONTROLS:
        assert path.read_text().startswith("// expected: passes the static policy — "), path.name


@nvcc_test
@pytest.mark.parametrize("path", CONTROLS, ids=[f.name for f in CONTROLS])
def test_honest_control_passes_the_policy(exploit_builds, path):
    """No false rejections: each honest idiom builds, passes the source and build policy, and is
    ready for the worker."""
    problem, results = exploit_builds
    r = results[path]
    assert r.ok, f"{r.error}\n{r.log[-2000:]}"
    assert CUDA.check_source(problem, path) is None
    prepared = CUDA.from_build(problem, path, "sm_90a", r)
    assert prepared.ok, prepared.message
    imported = {s.split("@")[0] for s in policy.undefined_symbols(r.lib)}
    assert not imported & {"dlopen", "dlsym", "getenv", "sched_yield"}  # NVTX compiled out (cub_*.cu)


@nvcc_test
def test_every_model_answer_and_control_passes_the_policy(problem_builds):
    """No false alarms: the repository's own files break no rule (checked on their sm_90a builds)."""
    failures = []
    for (name, relpath, arch), r in problem_builds.items():
        if arch != "sm_90a" or not r.ok:
            continue
        allow = spec.load_problem(PROBLEMS_DIR / name).spec.allow
        try:
            if relpath != "starter":
                policy.check_source((ROOT / relpath).read_text(), relpath, allow)
            policy.check_build(r.host_ii, r.lib, relpath, allow)
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
