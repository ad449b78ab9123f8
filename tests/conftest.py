"""Shared fixtures: a hermetic build cache, the repo's problems, and one parallel build of all their files.

Every nvcc compile of the suite that can be batched goes through `build_many` once (ninja runs them
in parallel); the build cache is a session-scoped temporary folder, so no test sees a build made
outside this run.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from judge.build import sass, toolkit
from judge.problem import abi, spec

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS_DIR = ROOT / "problems"
SOLUTIONS_DIR = ROOT / "reference_solutions"
ARCHS = ("sm_90a", "sm_80")

HAVE_NVCC = toolkit.nvcc_version() is not None
skip_no_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="needs nvcc (the CUDA toolkit)")


needs_cuobjdump = pytest.mark.skipif(sass.tool("cuobjdump") is None or sass.tool("nvdisasm") is None,
                                     reason="needs cuobjdump and nvdisasm (pip install nvidia-cuda-cuobjdump "
                                            "nvidia-cuda-nvdisasm, or the CUDA toolkit)")


def nvcc_test(f):
    """Mark a test `nvcc` and skip it where nvcc is missing."""
    return pytest.mark.nvcc(skip_no_nvcc(f))


def load_script(path: Path):
    """A script of scripts/ as a module (by its file name), registered in sys.modules so that its
    dataclasses can look their module up."""
    mod_spec = importlib.util.spec_from_file_location(path.stem, path)
    assert mod_spec and mod_spec.loader
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[path.stem] = module
    mod_spec.loader.exec_module(module)
    return module


def sm90a_sass(tmp_path: Path, src: Path, *defines: str) -> dict:
    """`src` built as the judge builds it (judge/build/nvcc.py's flags) but into a cubin for sm_90a,
    disassembled and parsed by scripts/probes/sass_stalls.py: {mangled kernel name: its instructions}."""
    out = tmp_path / f"{src.stem}{''.join(defines)}.cubin"
    subprocess.run(["nvcc", "-O3", "-std=c++17", "-lineinfo", "-cubin", "-DNVTX_DISABLE", *defines,
                    "-gencode", "arch=compute_90a,code=sm_90a", str(src), "-o", str(out)],
                   check=True, capture_output=True, timeout=600)
    text = sass.disassemble(out)
    assert text, "cuobjdump gave nothing"
    return load_script(ROOT / "scripts" / "probes" / "sass_stalls.py").parse(text)


def problem_dirs() -> list[Path]:
    """Every folder under problems/ (a folder without problem.yaml is a broken problem, not a skip)."""
    if not PROBLEMS_DIR.is_dir():
        return []
    return sorted(d for d in PROBLEMS_DIR.iterdir() if d.is_dir() and not d.name.startswith((".", "_")))


def problem_names() -> list[str]:
    return [d.name for d in problem_dirs()]


def reference_files(name: str) -> list[Path]:
    return sorted((SOLUTIONS_DIR / name).glob("*.cu"))


def wrong_files(name: str) -> list[Path]:
    return sorted((PROBLEMS_DIR / name / "wrong").glob("*.cu"))


def control_files(name: str) -> list[Path]:
    return reference_files(name) + wrong_files(name)


def declares_compile_error(path: Path) -> bool:
    first = path.read_text(errors="replace").splitlines()[:1]
    return bool(first) and "expected:" in first[0] and "COMPILE_ERROR" in first[0]


def try_load(name: str) -> spec.Problem | None:
    try:
        return spec.load_problem(PROBLEMS_DIR / name)
    except spec.ProblemError:
        return None


def rel(path: Path) -> str:
    return str(path.resolve().relative_to(ROOT))


@pytest.fixture(scope="session", autouse=True)
def judge_cache(tmp_path_factory):
    """Point the content-addressed build cache (and measured peaks) and the results store at fresh
    folders for this run: tests never write into the user's cache or results store. A test that
    unsets JUDGE_DB gets the default store, under this run's XDG_DATA_HOME, never the real one."""
    mp = pytest.MonkeyPatch()
    cache = tmp_path_factory.mktemp("judge-cache")
    mp.setenv("JUDGE_CACHE", str(cache))
    mp.setenv("JUDGE_DB", str(tmp_path_factory.mktemp("judge-store") / "judge.db"))
    mp.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("user-data")))
    yield cache
    mp.undo()


@pytest.fixture
def no_nvml(monkeypatch):
    """The GPU's health gate open and its telemetry empty, as on a fit GPU, whatever this machine
    has (the engine's CPU tests: `pytestmark = pytest.mark.usefixtures("no_nvml")`; a test may
    patch either again)."""
    from judge.contract.report import Telemetry
    from judge.gpu import device, health

    monkeypatch.setattr(health, "wait_until_fit", lambda index, dead, **kw: 0.0)
    monkeypatch.setattr(device, "telemetry", lambda index=0: Telemetry())


@pytest.fixture(scope="session")
def problem_builds(tmp_path_factory, judge_cache):
    """ONE build_many for: every problem's `judge init` starter (sm_90a) and every reference solution
    and wrong control for both sm_90a and sm_80. Maps (problem, relpath-or-"starter", arch) → BuildResult."""
    if not HAVE_NVCC:
        pytest.skip("needs nvcc (the CUDA toolkit)")
    from judge.build import nvcc as build
    from judge.build.cuda import CUDA

    starters = tmp_path_factory.mktemp("starters")
    keys, requests = [], []
    for name in problem_names():
        p = try_load(name)
        if p is None:
            continue  # test_problems reports the spec errors
        starter = starters / f"{name}.cu"
        starter.write_text(abi.starter(p.spec.title, p.params, {t.name: p.shape_text(t.name) for t in p.tensors}))
        keys.append((name, "starter", "sm_90a"))
        requests.append(CUDA.request(p, starter, "sm_90a"))
        for f in control_files(name):
            for arch in ARCHS:
                keys.append((name, rel(f), arch))
                requests.append(CUDA.request(p, f, arch))
    # Identical requests (same bytes, header, arch) are built once: build_many cannot take duplicates
    # (see test_build.py::test_identical_sources_in_one_call), and one is enough anyway.
    unique: dict[tuple, int] = {}
    for req in requests:
        unique.setdefault((Path(req.source).read_bytes(), req.header, req.arch, req.extra_flags), len(unique))
    index = [unique[(Path(r.source).read_bytes(), r.header, r.arch, r.extra_flags)] for r in requests]
    firsts: dict[int, object] = {}
    for r, i in zip(requests, index):
        firsts.setdefault(i, r)
    built = build.build_many([firsts[i] for i in range(len(unique))]) if unique else []
    return {k: built[i] for k, i in zip(keys, index)}


def gcc_build(tmp_path_factory, source: Path, name: str, *flags: str) -> Path:
    """`source` built by this machine's gcc (`-Wall -Werror` and `flags`) into a fresh folder that
    others may read (a container's user nobody runs it); skipped without gcc."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs gcc")
    out = tmp_path_factory.mktemp("attack") / name
    subprocess.run([gcc, *flags, "-Wall", "-Werror", "-o", str(out), str(source)], check=True, timeout=60)
    out.parent.chmod(0o755)
    return out


@pytest.fixture(scope="session")
def host_flood(tmp_path_factory) -> Path:
    """tests/exploits/sandbox/host_flood.c, the host-resource attacks (tests/sandbox/test_cgroup.py,
    tests/runner/test_docker.py)."""
    return gcc_build(tmp_path_factory, ROOT / "tests" / "exploits" / "sandbox" / "host_flood.c", "host_flood",
                     "-O1", "-pthread")


@pytest.fixture(scope="module")
def triton_installed():
    """Triton's interpreter is needed (judge test --cpu): skipped without Triton, except where
    JUDGE_REQUIRE_TRITON=1 (CI), which makes its absence a failure."""
    import importlib.util
    import os

    if importlib.util.find_spec("triton") is None:
        if os.environ.get("JUDGE_REQUIRE_TRITON") == "1":
            pytest.fail("JUDGE_REQUIRE_TRITON=1 but Triton is not installed (pip install -e '.[dev]')")
        pytest.skip("needs triton (pip install triton)")


# The test tiers (README, "Set up"). The default run (`pytest`) leaves out the `slow` tier: tests
# that take seconds each or more on a 2-core machine. `pytest -m slow` runs that tier alone and
# `pytest -m "not gpu"` every tier but the GPU's, as .ci/run does. Every test that compiles (marked
# `nvcc`) or needs a container engine (`docker`) is slow, and so is every test named below.
SLOW_FIXTURES = {  # a test that uses one of these fixtures
    "problem_builds": "nvcc builds every problem's files, for two archs",
    "runtime_builds": "nvcc builds the runtime exploits (tests/test_exploits.py)",
    "worker_bin": "builds the native worker",
}
SLOW_MODULES = {  # paths under tests/
    "board/test_cluster.py": "starts a local Ray cluster",
    "board/test_leaderboard_html.py": "headless Chromium",
    "problem/test_classic_wrong.py": "every problem's reference at its test shapes",
    "test_install.py": "fresh virtual environments",
    "engine/test_cpu_check.py": "Triton's interpreter in a child process (torch and Triton start in each)",
    "test_triton_answers.py": "Triton's interpreter in a child process, every model answer",
    "scripts/test_probes_bad_input.py": "a child process per case, each starting torch",
}
SLOW_TESTS = {  # path under tests/ :: test function (every parameter of it)
    "engine/test_reservoir.py::test_the_stash_is_checked_against_its_own_draw": "100 timed phases",
    "engine/test_reservoir.py::test_wrong_timed_calls_are_caught_after_the_timing_only": "a full timed phase",
    "engine/test_reservoir.py::test_right_timed_calls_are_all_rechecked_after_the_timing": "a full timed phase",
    "engine/test_end_state.py::test_timed_batches_pass_and_record_the_stamps_excess": "a full timed phase",
    "engine/test_engine_failures.py::test_a_baseline_killed_from_outside_is_restarted_once_and_timed_again":
        "a timed phase with a restart, per operation and signal",
    "engine/test_engine_failures.py::test_one_restart_per_baseline_and_run": "two timed shapes with restarts",
    "store/test_store.py::test_concurrent_writers_lose_nothing": "six writer processes",
}


def slow_reason(nodeid: str, markers: set[str], fixtures: set[str]) -> str | None:
    """Why the test `nodeid` (as pytest names it from the repository's root) is in the slow tier, or None."""
    path, _, name = nodeid.removeprefix("tests/").partition("::")
    function = name.split("::")[-1].split("[")[0]
    reasons = ([f"marked {m}" for m in sorted(markers & {"nvcc", "docker"})]
               + [SLOW_FIXTURES[f] for f in sorted(fixtures & SLOW_FIXTURES.keys())]
               + [r for r in (SLOW_MODULES.get(path), SLOW_TESTS.get(f"{path}::{function}")) if r])
    return "; ".join(reasons) or None


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        markers = {m.name for m in item.iter_markers()}
        if slow_reason(item.nodeid, markers, set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.slow)
