"""nvcc → shared library, through one generated ninja file, with a content-addressed cache.

Each build lives in `<cache>/build/<key>/` where key = sha256(source, forced prototype header,
flags, arch, nvcc version): a resubmit of the same file is a cache hit, and many builds
(`judge verify`, leaderboard runs) go through one `ninja -k 0` run, in parallel, rebuilding only
what is missing. The prototype header is force-included, so a `solve` whose parameter types differ
from the spec's fails to compile; a library that does not export `solve` is a COMPILE_ERROR too.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from judge import paths
from judge.build import toolkit

# Macros every build defines (the host pass too). NVTX_DISABLE compiles NVTX out: CUB (and Thrust)
# include NVTX, whose injection loader would otherwise put dlopen, dlsym, getenv and sched_yield
# into every library that includes <cub/cub.cuh>, and the static policy refuses dlopen
# (judge/build/policy.py). With it, CUB's ranges and NVTX's own API are empty inline functions
# and those imports are gone at the source (tests/controls/cub_block_reduce.cu). A submission that
# `#undef`s it gets the loader back and is refused for dlopen (tests/exploits/symbol_nvtx_undef.cu).
DEFINES = ("-DNVTX_DISABLE",)
# Part of every build's cache key (`_key`): a change here rebuilds instead of reusing old builds.
FLAGS = ("-O3", "-std=c++17", "-lineinfo", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
         "-Xptxas", "-v", *DEFINES)
COMPILE_TIMEOUT_S = 180
TIMEOUT_STATUS = 124
# The compiler's own limits (RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_CPU on every process of a build): the
# source is hostile, and a few lines can make nvcc need ~15 GB (an initialised 1 GiB `__device__`
# array) or write a library of that size. Honest builds stay far below: flash_attn's Hopper kernel
# peaks at 0.2 GB resident and builds under a 2 GiB address-space limit.
DEFAULT_MEMORY_GB = 4.0  # per compiler process; JUDGE_BUILD_MEMORY_GB overrides
FILE_LIMIT_BYTES = 512 << 20  # the largest file a build may write (library, host pass, log)
OUTPUTS_VERSION = "host.ii-1"  # what a build folder holds besides lib.so: part of the cache key


def gencode(arch: str) -> list[str]:
    """`sm_90a` → `-gencode arch=compute_90a,code=sm_90a` (the form that assembles wgmma)."""
    m = re.fullmatch(r"sm_(\d+[a-z]?)", arch)
    if not m:
        raise ValueError(f"unknown architecture {arch!r} (expected e.g. sm_90a, sm_80)")
    return ["-gencode", f"arch=compute_{m.group(1)},code=sm_{m.group(1)}"]


def arch_problem(arch: str, check_toolkit: bool = True) -> str | None:
    """What is wrong with `arch` as a build target, in words, or None. The form is `sm_` and the
    compute capability without its dot, `a` (or `f`) after it for the architecture-specific
    features of sm_90 and later; with `check_toolkit`, this nvcc must also build for it."""
    m = re.fullmatch(r"sm_(\d+)([af]?)", arch)
    if not m:
        digits = "".join(re.findall(r"\d", arch))
        guess = f"; for compute capability {digits[:-1]}.{digits[-1]}: sm_{digits} or sm_{digits}a" \
            if 2 <= len(digits) <= 3 else ""
        return (f"{arch!r} is not an architecture: expected sm_ and the compute capability without its dot, "
                f"e.g. sm_90a (H100, with wgmma and TMA) or sm_90, sm_80 (A100){guess}")
    if m.group(2) and int(m.group(1)) < 90:
        return f"{arch}: the `{m.group(2)}` variants exist from sm_90 on (use sm_{m.group(1)})"
    codes = toolkit.gpu_codes() if check_toolkit else None
    if codes and f"sm_{m.group(1)}" not in codes:
        return (f"this nvcc ({toolkit.nvcc_version()}) cannot build for {arch}: it builds for "
                f"{', '.join(codes)} (and their `a` variants from sm_90 on)")
    return None


def arch_for(major: int, minor: int) -> str:
    """The architecture to build for a device of compute capability major.minor."""
    return f"sm_{major}{minor}a" if (major, minor) in ((9, 0), (10, 0), (10, 3), (12, 0)) else f"sm_{major}{minor}"


@dataclass(frozen=True)
class BuildRequest:
    source: Path
    header: str  # force-included prototype header
    prototype: str  # shown in errors
    arch: str = "sm_90a"
    extra_flags: tuple[str, ...] = ()


@dataclass
class KernelResources:
    kernel: str
    registers: int = 0
    shared_bytes: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    sass: dict[str, int] = field(default_factory=dict)  # opcode → count (judge.build.sass.attach fills it)


@dataclass
class BuildResult:
    request: BuildRequest
    ok: bool
    key: str
    lib: Path | None
    command: str
    log: str
    seconds: float
    cached: bool
    error: str | None = None  # one-paragraph COMPILE_ERROR message
    timed_out: bool = False
    resources: list[KernelResources] = field(default_factory=list)
    host_ii: Path | None = None  # nvcc's host pass, for the static policy (None if it failed)
    log_path: Path | None = None  # the compiler's whole output (in the build's cache folder)


def _key(req: BuildRequest, source: bytes, nvcc_version: str) -> str:
    h = hashlib.sha256()
    for part in (source, req.header.encode(), " ".join(FLAGS + req.extra_flags).encode(),
                 req.arch.encode(), nvcc_version.encode(), OUTPUTS_VERSION.encode(), _limits_text().encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:24]


def _command(req: BuildRequest, nvcc: str) -> list[str]:
    rpath = toolkit.cudart_dir()
    link = ["-Xlinker", f"-rpath,{rpath}"] if rpath else []
    return [nvcc, *FLAGS, *req.extra_flags, *gencode(req.arch), *link,
            "-include", "proto.h", "-o", "lib.so", "src.cu"]


def _host_pass(req: BuildRequest, nvcc: str) -> list[str]:
    """nvcc's host pass alone (device function bodies removed): what policy.check_host_asm reads."""
    return [nvcc, "-cuda", "-std=c++17", *DEFINES, *req.extra_flags, *gencode(req.arch), "-include", "proto.h",
            "-o", "host.ii", "src.cu"]


def build_many(requests: Iterable[BuildRequest], jobs: int | None = None,
               on_progress: Callable[[int, int, str], None] | None = None) -> list[BuildResult]:
    """Build every request (in parallel through ninja); return results in request order."""
    requests = list(requests)
    nvcc = toolkit.nvcc_path()
    version = toolkit.nvcc_version()
    if not nvcc or not version:
        raise FileNotFoundError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    root = paths.cache_root() / "build"
    root.mkdir(parents=True, exist_ok=True)
    plans = []
    for req in requests:
        src = Path(req.source).read_bytes()
        key = _key(req, src, version)
        d = root / key
        status = d / "status"
        if status.exists() and status.read_text().strip() == str(TIMEOUT_STATUS):
            status.unlink()  # a timeout says more about the machine's load than the source
        cached = status.exists()
        if not cached:
            d.mkdir(exist_ok=True)
            _write_if_changed(d / "src.cu", src)
            _write_if_changed(d / "proto.h", req.header.encode())
        plans.append((req, key, d, cached, shlex.join(_command(req, nvcc)), shlex.join(_host_pass(req, nvcc))))
    todo = list({p[1]: p for p in plans if not p[3]}.values())  # one ninja rule per key
    seconds: dict[str, float] = {}
    with _locked(sorted(root / p[1] for p in todo)):  # another process building the same bytes waits
        meanwhile = {p[1] for p in todo if (p[2] / "status").exists()}  # ... and then finds them built
        todo = [p for p in todo if p[1] not in meanwhile]
        if todo:
            seconds = _run_ninja(root, todo, jobs, on_progress)
        return [_result(req, key, d, cached or key in meanwhile, cmd, seconds.get(key, 0.0))
                for req, key, d, cached, cmd, _ in plans]


@contextmanager
def _locked(dirs: list[Path]):
    """Exclusive locks on build folders, taken in a fixed (sorted) order so two processes cannot
    deadlock: two builds of the same bytes at once wrote one folder's log and library together."""
    held = []
    try:
        for d in dirs:
            f = open(d / ".lock", "w")
            fcntl.flock(f, fcntl.LOCK_EX)
            held.append(f)
        yield
    finally:
        for f in held:
            f.close()


def build(request: BuildRequest) -> BuildResult:
    return build_many([request])[0]


def _write_if_changed(path: Path, data: bytes) -> None:
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def _ninja_value(text: str) -> str:
    """`text` as a ninja variable value: `$` escaped; a line break (which would end the binding and
    let the rest be read as ninja) is refused."""
    if "\n" in text or "\r" in text:
        raise ValueError(f"a line break in a build path or flag: {text!r}")
    return text.replace("$", "$$")


def memory_limit_bytes() -> int:
    value = os.environ.get(paths.ENV_BUILD_MEMORY_GB)
    try:
        gib = float(value) if value else DEFAULT_MEMORY_GB
    except ValueError:
        gib = 0.0
    if not gib > 0:
        raise ValueError(f"{paths.ENV_BUILD_MEMORY_GB}={value!r}: expected a positive number of GiB "
                         "(the compiler's memory limit)")
    return int(gib * (1 << 30))


def _limits_text() -> str:
    """`ulimit`s for every process of a build, in POSIX sh's units (ninja runs `/bin/sh -c`: dash,
    or bash in POSIX mode): -v in KiB, -f in 512-byte blocks, -t in seconds; one limit a call."""
    return (f"ulimit -v {memory_limit_bytes() >> 10} && ulimit -f {FILE_LIMIT_BYTES >> 9} && "
            f"ulimit -t {COMPILE_TIMEOUT_S + 10}")


def _run_ninja(root: Path, todo: list, jobs: int | None,
               on_progress: Callable[[int, int, str], None] | None) -> dict[str, float]:
    lines = ["# generated by kernel-judge: one nvcc build per content-addressed folder",
             "rule nvcc",
             f"  command = cd $dir && {_limits_text()} && START=$$(date +%s.%N); "
             f"(timeout --kill-after=5 {COMPILE_TIMEOUT_S} $host > host.log 2>&1; echo $$? > host.status) & "
             f"timeout --kill-after=5 {COMPILE_TIMEOUT_S} $cmd > build.log 2>&1; echo $$? > status.tmp; wait; "
             "echo \"$$START $$(date +%s.%N)\" > seconds; mv status.tmp status",
             "  description = $label", ""]
    names = {}
    for req, key, d, _, cmd, host in todo:
        # Only the hex key and the judge's own paths and flags go into the file, each escaped for
        # ninja: the source's name is the participant's choice and never leaves Python.
        names[key] = Path(req.source).name
        lines += [f"build {key}/status: nvcc {key}/src.cu {key}/proto.h",
                  f"  dir = {_ninja_value(shlex.quote(str(d)))}", f"  cmd = {_ninja_value(cmd)}",
                  f"  host = {_ninja_value(host)}", f"  label = {key}", ""]
    ninja_file = root / f"build-{os.getpid()}.ninja"
    ninja_file.write_text("\n".join(lines))
    ninja = shutil.which("ninja") or str(Path(sys.executable).parent / "ninja")
    args = [ninja, "-f", ninja_file.name, "-k", "0"] + (["-j", str(jobs)] if jobs else [])
    try:
        proc = subprocess.Popen(args, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            m = re.match(r"\[(\d+)/(\d+)\] (\S+)", line.strip())
            if m and on_progress:
                on_progress(int(m.group(1)), int(m.group(2)), names.get(m.group(3), m.group(3)))
        proc.wait()
    finally:
        ninja_file.unlink(missing_ok=True)
    out = {}
    for _, key, d, _, _, _ in todo:
        try:
            start, end = (float(x) for x in (d / "seconds").read_text().split())
            out[key] = end - start
        except (OSError, ValueError):
            pass
    return out


def _result(req: BuildRequest, key: str, d: Path, cached: bool, cmd: str, seconds: float) -> BuildResult:
    status_file, log_file = d / "status", d / "build.log"
    log = log_file.read_text(errors="replace") if log_file.exists() else ""
    status = status_file.read_text().strip() if status_file.exists() else "missing"
    display_cmd = f"cd {d} && {cmd}"
    res = BuildResult(req, False, key, None, display_cmd, log, seconds, cached,
                      resources=parse_resources(log), log_path=log_file if log_file.exists() else None)
    if status == str(TIMEOUT_STATUS):
        res.timed_out = True
        res.error = f"nvcc did not finish within {COMPILE_TIMEOUT_S} s"
        return res
    if status != "0":
        res.error = _limit_hit(log, status) or _compile_error(log.replace("src.cu", Path(req.source).name),
                                                              req.prototype, status, res.log_path)
        return res
    lib = d / "lib.so"
    if not _exports_solve(lib):
        res.error = ("the library does not export `solve`: the file must define\n    "
                     f"{req.prototype}\nwith exactly these parameter types, outside any namespace.")
        return res
    res.ok, res.lib = True, lib
    host_status = d / "host.status"
    if host_status.exists() and host_status.read_text().strip() == "0":
        res.host_ii = d / "host.ii"
    return res


def _limit_hit(log: str, status: str) -> str | None:
    """The build's own limits, named (a COMPILE_ERROR: the source made the compiler exceed them)."""
    if "out of memory" in log.lower() or "std::bad_alloc" in log or "cannot allocate memory" in log.lower():
        return (f"nvcc ran out of its memory limit ({memory_limit_bytes() / (1 << 30):g} GiB per compiler "
                f"process, {paths.ENV_BUILD_MEMORY_GB} to change it): does the file make the compiler build "
                "a huge initialised array?\n" + "\n".join(log.splitlines()[-4:]))
    if status == str(128 + 25) or "file size limit exceeded" in log.lower():  # SIGXFSZ
        size = f"{FILE_LIMIT_BYTES >> 20} MiB" if FILE_LIMIT_BYTES >= 1 << 20 else f"{FILE_LIMIT_BYTES >> 10} KiB"
        return (f"the build wrote a file over {size} (a huge initialised array?)\n"
                + "\n".join(log.splitlines()[-4:]))
    return None


SHOWN_ERROR_LINES = 12  # of a COMPILE_ERROR's log in its message; the rest is counted, with the log's path


def _compile_error(log: str, proto: str, status: str, log_path: Path | None = None) -> str:
    errors = [ln for ln in log.splitlines() if "error" in ln.lower()]
    lines = errors or log.splitlines() or [f"nvcc exited with status {status}"]
    head = "\n".join(lines[:SHOWN_ERROR_LINES])
    more = len(lines) - SHOWN_ERROR_LINES
    if more > 0:
        head += f"\n... {more} more {'error ' if errors else ''}line{'s' if more != 1 else ''}"
    if log_path is not None and (more > 0 or errors):
        head += f"\nthe compiler's whole output: {log_path} (your file is src.cu there)"
    if re.search(r"\bsolve\b", log):
        head += f"\nexpected prototype:\n    {proto}"
    return head


def warnings(log: str) -> list[str]:
    """The compiler's warning lines (nvcc's front end, the host compiler's, ptxas'), in order."""
    return [ln.strip() for ln in log.splitlines()
            if re.search(r"\bwarning\b", ln, re.IGNORECASE) and not ln.lstrip().startswith("Remark")]


def _exports_solve(lib: Path) -> bool:
    try:
        out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(ln.split()[-1:] == ["solve"] and " T " in ln for ln in out.splitlines())


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_FUNC_PROPS = re.compile(r"Function properties for (\S+)")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_resources(log: str) -> list[KernelResources]:
    """Registers, shared memory, stack and spills per kernel from `-Xptxas -v` output."""
    kernels: list[KernelResources] = []
    current: KernelResources | None = None  # the entry whose "Used ..." line comes next
    props: KernelResources | None = None  # whose "Function properties" block we are in
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current = KernelResources(m.group(1))
            kernels.append(current)
        elif m := _FUNC_PROPS.search(line):  # a non-inlined device function's block is skipped
            props = next((k for k in kernels if k.kernel == m.group(1)), None)
        elif props and (m := _PROPS.search(line)):
            props.stack_bytes, props.spill_store_bytes, props.spill_load_bytes = map(int, m.groups())
        elif current and "Used" in line and "registers" in line:
            current.registers = int(re.search(r"Used (\d+) registers", line).group(1))  # type: ignore[union-attr]
            smem = re.search(r"(\d+) bytes smem", line)
            current.shared_bytes = int(smem.group(1)) if smem else 0
    names = _demangle([k.kernel for k in kernels])
    for k, n in zip(kernels, names):
        k.kernel = n
    return kernels


def _demangle(names: list[str]) -> list[str]:
    if not names or not shutil.which("c++filt"):
        return names
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                             timeout=10).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return names
    return out if len(out) == len(names) else names
