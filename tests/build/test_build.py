"""nvcc → shared library: the content-addressed cache, COMPILE_ERROR evidence, ptxas resources."""
from __future__ import annotations

import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from conftest import nvcc_test

from judge.build import nvcc as build
from judge.build.nvcc import BuildRequest, build_many, parse_resources
from judge.problem import abi

PARAMS = [("A", abi.parse_ctype("const float*")), ("B", abi.parse_ctype("const float*")),
          ("C", abi.parse_ctype("float*")), ("n", abi.parse_ctype("int"))]
HEADER = abi.prototype_header(PARAMS)
PROTO = abi.prototype(PARAMS)

SOURCES = {
    "ok.cu": """
        #include <cuda_runtime.h>
        __global__ void add(const float* a, const float* b, float* c, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) c[i] = a[i] + b[i];
        }
        extern "C" void solve(const float* A, const float* B, float* C, int n) {
            add<<<(n + 255) / 256, 256>>>(A, B, C, n);
        }
    """,
    "smem.cu": """
        #include <cuda_runtime.h>
        __global__ void reduce_kernel(const float* a, float* c, int n) {
            __shared__ float s[512];
            int i = blockIdx.x * 512 + threadIdx.x;
            s[threadIdx.x] = i < n ? a[i] : 0.f;
            __syncthreads();
            for (int k = 256; k > 0; k >>= 1) {
                if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
                __syncthreads();
            }
            if (threadIdx.x == 0) c[blockIdx.x] = s[0];
        }
        extern "C" void solve(const float* A, const float* B, float* C, int n) {
            reduce_kernel<<<(n + 511) / 512, 512>>>(A, C, n);
        }
    """,
    "syntax.cu": """
        #include <cuda_runtime.h>
        extern "C" void solve(const float* A, const float* B, float* C, int n) {
            int x = ;
        }
    """,
    "wrong_types.cu": """
        #include <cuda_runtime.h>
        extern "C" void solve(const double* A, const double* B, double* C, int n) {}
    """,
    "overload.cu": """
        #include <cuda_runtime.h>
        // C++ linkage and other types: an overload, so the library exports no `solve`
        void solve(const float* A, const float* B, float* C, long n) {}
    """,
    "no_solve.cu": """
        #include <cuda_runtime.h>
        __global__ void add(const float* a, const float* b, float* c, int n) {}
    """,
}
# What each build is: (file, arch)
PLAN = [("ok.cu", "sm_90a"), ("ok.cu", "sm_80"), ("smem.cu", "sm_90a"), ("syntax.cu", "sm_90a"),
        ("wrong_types.cu", "sm_90a"), ("overload.cu", "sm_90a"), ("no_solve.cu", "sm_90a")]

# Real `-Xptxas -v` output (CUDA 13.0): a kernel that spills under -maxrregcount, then a small one.
PTXAS_LOG = """\
ptxas warning : For profile sm_90a adjusting per thread register count of 16 to lower bound of 24
ptxas info    : Overriding maximum register limit 256 for '_Z13reduce_kernelPKfPfi' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z13reduce_kernelPKfPfi' for 'sm_90a'
ptxas info    : Function properties for _Z13reduce_kernelPKfPfi
    1040 bytes stack frame, 1292 bytes spill stores, 1288 bytes spill loads
ptxas info    : Used 24 registers, used 1 barriers, 1040 bytes cumulative stack size, 2048 bytes smem
ptxas info    : Compile time = 70.412 ms
ptxas info    : Compiling entry function '_Z3addPKfS0_Pfi' for 'sm_90a'
ptxas info    : Function properties for _Z3addPKfS0_Pfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 380 bytes cmem[0]
ptxas info    : Compile time = 3.109 ms
"""

# Real output for a kernel k1 calling a __noinline__ device function: ptxas prints the helper's
# "Function properties" block AFTER k1's, with no "Compiling entry function" line of its own.
PTXAS_LOG_HELPER = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z2k2PKfPfi' for 'sm_90a'
ptxas info    : Function properties for _Z2k2PKfPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 2.306 ms
ptxas info    : Compiling entry function '_Z2k1PKfPfi' for 'sm_90a'
ptxas info    : Function properties for _Z2k1PKfPfi
    128 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 128 bytes cumulative stack size
ptxas info    : Compile time = 9.000 ms
ptxas info    : Function properties for _Z6helperPKfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""


def request(path: Path, arch: str = "sm_90a", flags: tuple[str, ...] = ()) -> BuildRequest:
    return BuildRequest(path, HEADER, PROTO, arch, flags)


# -- no nvcc needed ------------------------------------------------------------------------------------

def test_parse_resources_canned_log():
    ks = parse_resources(PTXAS_LOG)
    assert len(ks) == 2
    big, small = ks
    assert big.kernel.startswith("reduce_kernel(") or big.kernel == "_Z13reduce_kernelPKfPfi"
    assert (big.registers, big.shared_bytes, big.stack_bytes, big.spill_store_bytes, big.spill_load_bytes) == \
        (24, 2048, 1040, 1292, 1288)
    assert (small.registers, small.shared_bytes, small.stack_bytes, small.spill_store_bytes) == (12, 0, 0, 0)


def test_parse_resources_demangles():
    import shutil

    if not shutil.which("c++filt"):
        pytest.skip("no c++filt")
    assert [k.kernel for k in parse_resources(PTXAS_LOG)] == \
        ["reduce_kernel(float const*, float*, int)", "add(float const*, float const*, float*, int)"]


def test_parse_resources_empty_log():
    assert parse_resources("") == []
    assert parse_resources("nvcc fatal : something\n") == []


def test_parse_resources_device_function_does_not_overwrite_kernel():
    k2, k1 = parse_resources(PTXAS_LOG_HELPER)
    assert k1.registers == 32 and k1.stack_bytes == 128


def test_key_changes_with_every_input():
    src = b"extern \"C\" void solve() {}"
    base = request(Path("x.cu"))
    k = build._key(base, src, "13.0.88")
    assert k == build._key(request(Path("elsewhere/y.cu")), src, "13.0.88")  # content, not path
    assert k != build._key(request(Path("x.cu"), arch="sm_80"), src, "13.0.88")
    assert k != build._key(request(Path("x.cu"), flags=("-DFOO",)), src, "13.0.88")
    assert k != build._key(base, src + b" ", "13.0.88")
    assert k != build._key(base, src, "13.0.89")
    other_header = BuildRequest(Path("x.cu"), HEADER + "// other\n", PROTO, "sm_90a")
    assert k != build._key(other_header, src, "13.0.88")



def test_nvtx_is_compiled_out_in_both_passes_and_in_the_key(monkeypatch):
    """CUB's NVTX loader would import dlopen (refused): every build and its host pass define
    NVTX_DISABLE, and the define is part of the cache key, so builds made before it are not reused."""
    assert "-DNVTX_DISABLE" in build.FLAGS
    req = request(Path("x.cu"))
    assert "-DNVTX_DISABLE" in build._command(req, "nvcc")
    assert "-DNVTX_DISABLE" in build._host_pass(req, "nvcc")
    src = b"extern \"C\" void solve() {}"
    k = build._key(req, src, "13.0.88")
    monkeypatch.setattr(build, "FLAGS", tuple(f for f in build.FLAGS if f != "-DNVTX_DISABLE"))
    assert build._key(req, src, "13.0.88") != k

def test_gencode_and_arch_for():
    assert build.gencode("sm_90a") == ["-gencode", "arch=compute_90a,code=sm_90a"]
    assert build.gencode("sm_80") == ["-gencode", "arch=compute_80,code=sm_80"]
    for bad in ("90", "sm90", "compute_90", "sm_", "sm_90a; rm -rf /"):
        with pytest.raises(ValueError):
            build.gencode(bad)
    assert build.arch_for(9, 0) == "sm_90a" and build.arch_for(8, 0) == "sm_80"
    assert build.arch_for(8, 9) == "sm_89" and build.arch_for(10, 0) == "sm_100a"


def test_missing_nvcc_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(build.toolkit, "nvcc_path", lambda: None)
    monkeypatch.setattr(build.toolkit, "nvcc_version", lambda: None)
    f = tmp_path / "x.cu"
    f.write_text("// nothing")
    with pytest.raises(FileNotFoundError, match="nvcc not found"):
        build_many([request(f)])


# -- a file name is inert: it never reaches the generated ninja file ---------------------------------

INJECTED_NAMES = [
    "evil\n  command = touch PWNED\n.cu",  # a newline, then a binding that replaces the edge's command
    "x$(touch PWNED).cu",  # a ninja `$(` escape: ninja refused the whole file, failing every build
    "sp ace $x `touch PWNED` ;.cu",
]


def _pwned(root: Path) -> list[Path]:
    return list(root.rglob("PWNED*"))


def _fake_nvcc(tmp_path: Path, monkeypatch) -> None:
    """An `nvcc` that writes a log and fails: enough for ninja to run each edge, no toolkit needed."""
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("#!/bin/sh\necho 'src.cu(1): error: fake nvcc' >&2\nexit 1\n")
    nvcc.chmod(0o755)
    monkeypatch.setattr(build.toolkit, "nvcc_path", lambda: str(nvcc))
    monkeypatch.setattr(build.toolkit, "nvcc_version", lambda: "fake 1.0")
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("template", INJECTED_NAMES)
def test_file_name_cannot_inject_into_the_build_file(tmp_path, monkeypatch, template):
    _fake_nvcc(tmp_path, monkeypatch)
    d = tmp_path / "src"
    d.mkdir()
    evil = d / template
    evil.write_text("// evil name\n")
    honest = d / "honest.cu"
    honest.write_text("// a neighbour in the same ninja run\n")
    progress: list[str] = []
    results = build_many([request(evil), request(honest)], on_progress=lambda i, n, what: progress.append(what))
    assert not _pwned(tmp_path), "the file name ran a command in the build step"
    for r in results:  # both edges ran nvcc (status 1 and its log), none lost to a broken ninja file
        assert not r.ok and "fake nvcc" in r.log, (r.error, r.log)
    assert any(evil.name in what for what in progress)  # the name still shows in progress, from Python


def test_ninja_values_escape_dollars_and_refuse_line_breaks():
    assert build._ninja_value("a$b $(c)") == "a$$b $$(c)"
    for bad in ("a\nb", "a\rb"):
        with pytest.raises(ValueError, match="line break"):
            build._ninja_value(bad)


@nvcc_test
def test_a_file_with_a_hostile_name_builds_like_any_other(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache $dollar"))  # the judge's own paths are escaped too
    f = tmp_path / INJECTED_NAMES[0]
    f.write_text(textwrap.dedent(SOURCES["ok.cu"]) + "\n// hostile name\n")
    r = build.build(request(f))
    assert r.ok, r.error
    assert not _pwned(tmp_path)


# -- real builds: one build_many for the module ------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("build-src")
    for name, text in SOURCES.items():
        (d / name).write_text(textwrap.dedent(text))
    reqs = [request(d / f, arch) for f, arch in PLAN]
    progress: list[tuple[int, int, str]] = []
    t0 = time.perf_counter()
    results = build_many(reqs, on_progress=lambda i, n, what: progress.append((i, n, what)))
    return {"dir": d, "reqs": reqs, "results": dict(zip(PLAN, results)), "list": results,
            "progress": progress, "wall_s": time.perf_counter() - t0}


@nvcc_test
def test_results_in_request_order_with_progress(built):
    assert [r.request for r in built["list"]] == built["reqs"]
    assert all(not r.cached for r in built["list"])
    assert built["progress"], "on_progress was never called"
    assert {n for _, n, _ in built["progress"]} == {len(PLAN)}
    assert max(i for i, _, _ in built["progress"]) == len(PLAN)


@nvcc_test
def test_ok_build(built):
    for arch in ("sm_90a", "sm_80"):
        r = built["results"][("ok.cu", arch)]
        assert r.ok and r.error is None and not r.timed_out, r.log
        assert r.lib is not None and r.lib.is_file() and r.lib.name == "lib.so"
        assert r.seconds > 0
        assert f"arch=compute_{arch[3:]}" in r.command and "-cudart shared" in r.command
    assert built["results"][("ok.cu", "sm_90a")].key != built["results"][("ok.cu", "sm_80")].key


@nvcc_test
def test_resubmit_is_a_cache_hit_without_recompiling(built, monkeypatch):
    first = built["results"][("ok.cu", "sm_90a")]
    mtime = first.lib.stat().st_mtime_ns

    def no_ninja(*a, **k):
        raise AssertionError("ninja ran for a cached build")

    monkeypatch.setattr(build, "_run_ninja", no_ninja)
    again = build.build(request(built["dir"] / "ok.cu"))
    assert again.ok and again.cached and again.key == first.key and again.lib == first.lib
    assert again.seconds == 0.0 and again.lib.stat().st_mtime_ns == mtime
    assert [k.registers for k in again.resources] == [k.registers for k in first.resources]
    # the same bytes under another name are the same build
    copy = built["dir"] / "renamed.cu"
    copy.write_bytes((built["dir"] / "ok.cu").read_bytes())
    assert build.build(request(copy)).cached


@nvcc_test
def test_changed_source_or_flags_rebuild(built):
    src = built["dir"] / "ok.cu"
    edited = built["dir"] / "ok_edited.cu"
    edited.write_text(src.read_text() + "\n// edited\n")
    first = built["results"][("ok.cu", "sm_90a")]
    r1, r2 = build_many([request(edited), request(src, flags=("-DJUDGE_TEST_FLAG=1",))])
    for r in (r1, r2):
        assert r.ok and not r.cached and r.key != first.key, r.log
    assert "-DJUDGE_TEST_FLAG=1" in r2.command


@nvcc_test
def test_syntax_error_is_compile_error_with_command(built):
    r = built["results"][("syntax.cu", "sm_90a")]
    assert not r.ok and r.lib is None and not r.timed_out
    assert "error" in r.error and "syntax.cu" in r.error, r.error
    assert "expected an expression" in r.error
    assert "nvcc" in r.command and "arch=compute_90a" in r.command
    assert "error" in r.log


@nvcc_test
def test_failed_build_is_cached_with_the_same_error(built):
    first = built["results"][("syntax.cu", "sm_90a")]
    again = build.build(request(built["dir"] / "syntax.cu"))
    assert again.cached and not again.ok and again.error == first.error


@nvcc_test
def test_wrong_parameter_types_name_the_expected_prototype(built):
    r = built["results"][("wrong_types.cu", "sm_90a")]
    assert not r.ok
    assert "solve" in r.error and PROTO in r.error, r.error


@nvcc_test
def test_cxx_overload_with_other_types_is_not_exported(built):
    r = built["results"][("overload.cu", "sm_90a")]
    assert not r.ok and "does not export `solve`" in r.error and PROTO in r.error, r.error


@nvcc_test
def test_file_without_solve(built):
    r = built["results"][("no_solve.cu", "sm_90a")]
    assert not r.ok and r.lib is None
    assert "does not export `solve`" in r.error, r.error


@nvcc_test
def test_resources_from_ptxas(built):
    r = built["results"][("smem.cu", "sm_90a")]
    assert r.ok, r.error
    (k,) = r.resources
    assert "reduce_kernel" in k.kernel
    assert k.registers > 0 and k.shared_bytes == 512 * 4
    ok = built["results"][("ok.cu", "sm_90a")]
    assert [k.kernel for k in ok.resources] == ["add(float const*, float const*, float*, int)"]
    assert ok.resources[0].registers > 0 and ok.resources[0].shared_bytes == 0


SLOW = """
#include <cuda_runtime.h>
#define S1 x = x * a[(int)x & 7] + __sinf(x);
#define S10 S1 S1 S1 S1 S1 S1 S1 S1 S1 S1
#define S100 S10 S10 S10 S10 S10 S10 S10 S10 S10 S10
#define S1K S100 S100 S100 S100 S100 S100 S100 S100 S100 S100
#define S10K S1K S1K S1K S1K S1K S1K S1K S1K S1K S1K
// 30,000 dependent statements: minutes of cicc time (measured: > 120 s)
__global__ void slow(const float* a, float* c) {
    float x = a[threadIdx.x];
    S10K S10K S10K
    c[threadIdx.x] = x;
}
extern "C" void solve(const float* A, const float* B, float* C, int n) { slow<<<1, 32>>>(A, C); }
"""


@nvcc_test
def test_compile_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "COMPILE_TIMEOUT_S", 1)
    f = tmp_path / "slow.cu"
    f.write_text(SLOW)
    t0 = time.perf_counter()
    r = build.build(request(f))
    assert time.perf_counter() - t0 < 30  # 1 s + at most --kill-after=5
    assert r.timed_out and not r.ok and r.lib is None
    assert "did not finish within 1 s" in r.error
    # a timeout is not cached as the file's verdict: the next submit compiles again
    again = build.build(request(f))
    assert again.timed_out and not again.cached


@nvcc_test
def test_identical_sources_in_one_call(tmp_path):
    text = textwrap.dedent(SOURCES["ok.cu"]) + "\n// duplicate test\n"
    a, b, c = tmp_path / "a.cu", tmp_path / "b.cu", tmp_path / "c.cu"
    a.write_text(text)
    b.write_text(text)
    c.write_text(text + "// another\n")
    results = build_many([request(a), request(b), request(c)])
    assert results[0].key == results[1].key
    assert all(r.ok for r in results), [r.error for r in results]


@nvcc_test
def test_two_processes_building_the_same_bytes_at_once(tmp_path):
    """One waits on the folder's lock and finds the other's build: both get the whole result (the
    race wrote one folder's log and library from two nvcc runs, and one saw 0 kernels)."""
    import json
    import subprocess
    import sys

    src = tmp_path / "same.cu"
    src.write_text(textwrap.dedent(SOURCES["ok.cu"]) + f"\n// {time.time_ns()}\n")  # never built before
    code = textwrap.dedent(f"""
        import json, sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r},
                        {str(Path(__file__).parents[2])!r}]
        from test_build import request
        from judge.build.nvcc import build
        r = build(request(__import__("pathlib").Path({str(src)!r})))
        print(json.dumps({{"ok": r.ok, "cached": r.cached, "kernels": [k.kernel for k in r.resources]}}))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1]) for p in procs]
    assert all(o["ok"] and len(o["kernels"]) == 1 and o["kernels"][0].startswith("add(") for o in outs), outs
    assert sorted(o["cached"] for o in outs) == [False, True]  # one built, the other waited for it


# -- the compiler's own limits: a hostile source cannot exhaust the judge's machine -----------------

HUGE_ARRAY = """
#include <cuda_runtime.h>
__device__ char big[1u << 30] = {1};  // initialised: the compiler materialises 1 GiB (and needs ~15 GB)
__global__ void k(const float* a, float* c) { c[threadIdx.x] = a[threadIdx.x] + big[threadIdx.x * 4096]; }
extern "C" void solve(const float* A, const float* B, float* C, int n) { k<<<1, 32>>>(A, C); }
"""


@nvcc_test
def test_a_source_that_needs_huge_compiler_memory_fails_within_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "huge.cu"
    f.write_text(HUGE_ARRAY)
    t0 = time.perf_counter()
    r = build.build(request(f))
    assert not r.ok and not r.timed_out
    assert "memory limit (4 GiB per compiler process" in r.error, r.error
    assert time.perf_counter() - t0 < 120  # not the 180 s timeout: the limit stops it


@nvcc_test
def test_a_build_that_writes_a_huge_file_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(build, "FILE_LIMIT_BYTES", 64 << 10)  # any real library is larger than 64 KiB
    f = tmp_path / "ok.cu"
    f.write_text(textwrap.dedent(SOURCES["ok.cu"]) + "\n// file limit\n")
    r = build.build(request(f))
    assert not r.ok and "wrote a file over 64 KiB" in r.error, r.error


def test_limits_are_in_the_build_command_and_the_cache_key(tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGE_BUILD_MEMORY_GB", raising=False)
    assert build._limits_text() == (f"ulimit -v {4 << 20} && ulimit -f {1 << 20} && "
                                    f"ulimit -t {build.COMPILE_TIMEOUT_S + 10}")
    out = subprocess.run(["sh", "-c", build._limits_text() + " && ulimit -v && ulimit -f && ulimit -t"],
                         capture_output=True, text=True)  # the shell ninja uses takes them as meant
    assert out.returncode == 0 and out.stdout.split() == [str(4 << 20), str(1 << 20), str(build.COMPILE_TIMEOUT_S + 10)]
    f = tmp_path / "x.cu"
    f.write_text("// x\n")
    before = build._key(request(f), b"x", "13.0")
    monkeypatch.setenv("JUDGE_BUILD_MEMORY_GB", "8")
    assert build.memory_limit_bytes() == 8 << 30 and build._key(request(f), b"x", "13.0") != before
    for bad in ("0", "-1", "lots"):
        monkeypatch.setenv("JUDGE_BUILD_MEMORY_GB", bad)
        with pytest.raises(ValueError, match="JUDGE_BUILD_MEMORY_GB"):
            build.memory_limit_bytes()
