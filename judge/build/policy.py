"""Static policy (DESIGN.md §5): what a submission may include, and what its library may call.
It needs no GPU and runs before any does.

1. Includes (`check_includes`, on the source, before building): only C++ standard headers and
   headers of the CUDA toolkit; never an absolute path, a parent path or a computed include.
2. Host-side inline assembly (`check_host_asm`, on nvcc's host pass `host.ii`, made beside every
   build): device code may use `asm` (PTX), host code may not. nvcc's front end removes device
   function bodies from the host pass, so any `asm` left in lines that came from the submission
   runs on the CPU.
3. Undefined symbols of the built library (`check_symbols`, `nm -D --undefined-only`) against an
   allow-list: the CUDA runtime API, the C++ runtime, libc memory, string, math and console
   output. Everything else is refused, naming the symbol; well-known dangers (dlopen, syscall,
   sockets, files, processes, threads, vendor libraries, the Python C API) name their rule.
   A problem's `allow: [cublas]` lets its library's symbols through.
"""
from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CXX_HEADERS = frozenset("""
algorithm any array atomic bit bitset cassert cctype cerrno cfenv cfloat charconv chrono cinttypes
climits clocale cmath compare complex concepts cstdarg cstddef cstdint cstdio cstdlib cstring ctime
cuchar cwchar cwctype deque exception execution functional initializer_list iomanip ios iosfwd
iostream istream iterator limits list map memory memory_resource new numbers numeric optional
ostream queue random ranges ratio scoped_allocator set span sstream stack stdexcept string
string_view system_error tuple type_traits typeindex typeinfo unordered_map unordered_set utility
valarray variant vector version
assert.h ctype.h errno.h fenv.h float.h inttypes.h limits.h locale.h math.h stdarg.h stdbool.h
stddef.h stdint.h stdio.h stdlib.h string.h time.h uchar.h wchar.h wctype.h
""".split())
# Standard headers that exist only to reach the file system, threads or other processes.
CXX_REFUSED = frozenset("filesystem fstream thread mutex shared_mutex condition_variable future "
                        "semaphore latch barrier stop_token".split())


@dataclass(frozen=True)
class Violation:
    rule: str  # "include", "host-asm", "symbol"
    where: str  # "solution.cu:12" or the symbol
    detail: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.where}: {self.detail}"


class PolicyError(Exception):
    """The submission breaks a rule: REJECTED, naming each violation."""

    def __init__(self, violations: list[Violation]):
        self.violations = violations
        super().__init__("static policy: " + "; ".join(map(str, violations)))


_INCLUDE = re.compile(r'^\s*#\s*include\s*(.*?)\s*$')
_COMMENTS = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)


def _strip_comments(text: str) -> str:
    """Comments out, line numbers kept (block comments keep their newlines)."""
    return _COMMENTS.sub(lambda m: "\n" * m.group(0).count("\n") if m.group(0).startswith("/*") else "", text)


def check_includes(source: str, name: str, toolkit_includes: list[Path]) -> list[Violation]:
    out = []
    for no, line in enumerate(_strip_comments(source).splitlines(), start=1):
        m = _INCLUDE.match(line)
        if not m:
            continue
        where, arg = f"{name}:{no}", m.group(1)
        hm = re.fullmatch(r'<([^<>]+)>|"([^"]+)"', arg)
        if not hm:
            out.append(Violation("include", where, f"`#include {arg}`: a computed include cannot be checked"))
            continue
        header = hm.group(1) or hm.group(2)
        if header.startswith("/") or ".." in Path(header).parts:
            out.append(Violation("include", where, f"`{header}`: absolute and parent paths are not allowed"))
        elif header in CXX_REFUSED:
            out.append(Violation("include", where, f"`<{header}>`: files, threads and processes are not allowed"))
        elif header not in CXX_HEADERS and not any((d / header).is_file() for d in toolkit_includes):
            out.append(Violation("include", where, f"`{header}` is neither a C++ standard header nor a CUDA "
                                 "toolkit header"))
    return out


_MARKER = re.compile(r'#\s*(?:line\s+)?(\d+)\s+"([^"]*)"')
_ASM = re.compile(r'\b(?:asm|__asm__|__asm)\b')


def check_host_asm(host_ii: str, source_file: str, name: str) -> list[Violation]:
    """`asm` in the host pass, on lines that came from the submission (`source_file` is the name
    the build compiled, as its line markers spell it)."""
    out, current, line = [], None, 0
    for text in host_ii.splitlines():
        m = _MARKER.match(text)
        if m:
            line, current = int(m.group(1)), m.group(2)
            continue
        if current is not None and Path(current).name == source_file and _ASM.search(text):
            out.append(Violation("host-asm", f"{name}:{line}", f"inline assembly in host code: `{text.strip()[:120]}`"))
        line += 1
    return out


# Prefixes and names a kernel's host code legitimately imports.
ALLOWED_PREFIXES = ("cuda", "__cuda", "__cxa_", "_Unwind_", "_ITM_", "__gxx_personality", "_ZSt", "_Znw",
                    "_Zna", "_Zdl", "_Zda", "_ZNSt7__cxx1112basic_string", "_ZNKSt7__cxx1112basic_string")
ALLOWED = frozenset("""
__gmon_start__ __stack_chk_fail __assert_fail abort exit atexit __cxa_finalize
memcpy memmove memset memcmp memchr strlen strcmp strncmp strcpy strncpy strchr strstr
malloc calloc realloc free posix_memalign aligned_alloc
printf puts putchar fprintf fputs fputc fflush __printf_chk __fprintf_chk __sprintf_chk __snprintf_chk
sprintf snprintf vprintf vfprintf stdout stderr
""".split())
_MATH = re.compile(r"(?:sqrt|cbrt|exp|exp2|expm1|log|log2|log10|log1p|pow|sin|cos|tan|asin|acos|atan|atan2|"
                   r"sinh|cosh|tanh|erf|erfc|fabs|floor|ceil|round|lround|llround|trunc|fmod|fmin|fmax|fma|"
                   r"ldexp|frexp|modf|hypot|rint|lrint|nearbyint|remainder|copysign|ilogb|logb|scalbn|"
                   r"__isnan|__isinf|__finite)[fl]?(?:_finite)?")
# Refused by name, with the rule that says why (checked before the allow-list).
REFUSED: list[tuple[re.Pattern, str]] = [(re.compile(p), why) for p, why in [
    (r"dl(open|sym|vsym|mopen|close|error|info|addr)", "loading code at run time"),
    (r"syscall|ptrace|prctl|seccomp", "raw system calls"),
    (r"mprotect|mmap(64)?|munmap|mremap|pkey_mprotect", "changing memory protection or mappings"),
    (r"fork|vfork|clone3?|exec[lv]?[pe]?|execvpe|fexecve|system|popen|posix_spawnp?|kill|raise", "processes"),
    (r"socket|connect|bind|listen|accept4?|send(to|msg)?|recv(from|msg)?|getaddrinfo|gethostbyname", "network"),
    (r"f?open(64|at|at64)?|creat|f?read|f?write|pread|pwrite|unlink|rename|remove|fdopen|freopen|"
     r"opendir|readdir|stat|fstat|lstat|chmod|chdir|getenv|setenv|putenv", "files and the environment"),
    (r"pthread_\w+|_ZNSt6thread\w*|thrd_\w+", "host threads"),
    (r"cudaDeviceReset|cudaSetDevice|cudaIpc\w+|cudaDeviceSetSharedMemConfig", "CUDA calls that reach beyond this run"),
    (r"cu[A-Z]\w+", "the CUDA driver API (use the runtime API)"),
    (r"cublas\w*", "cuBLAS (not allowed by this problem)"),
    (r"cublasLt\w*", "cuBLASLt (not allowed by this problem)"),
    (r"cudnn\w*", "cuDNN (not allowed by this problem)"),
    (r"nccl\w*", "NCCL (not allowed by this problem)"),
    (r"cufft\w*|curand\w*|cusparse\w*|cusolver\w*", "CUDA libraries (not allowed by this problem)"),
    (r"_?Py\w+", "the Python C API"),
]]
# What `allow:` in a problem spec can open: library name → symbol pattern.
LIBRARIES = {"cublas": re.compile(r"cublas\w*"), "cublasLt": re.compile(r"cublasLt\w*"),
             "cudnn": re.compile(r"cudnn\w*"), "nccl": re.compile(r"nccl\w*")}


def check_symbols(undefined: list[str], allow: Sequence[str] = ()) -> list[Violation]:
    opened = [LIBRARIES[a] for a in allow if a in LIBRARIES]
    out = []
    for sym in undefined:
        name = sym.split("@")[0]
        if any(p.fullmatch(name) for p in opened):
            continue
        refused = next((why for p, why in REFUSED if p.fullmatch(name)), None)
        if refused:
            out.append(Violation("symbol", name, f"refused: {refused}"))
        elif not (name in ALLOWED or name.startswith(ALLOWED_PREFIXES) or _MATH.fullmatch(name)):
            out.append(Violation("symbol", name, "not on the allow-list (CUDA runtime, C++ runtime, libc "
                                 "memory/string/math, console output)"))
    return out


def undefined_symbols(lib: Path) -> list[str]:
    out = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise OSError(f"nm failed on {lib}: {out.stderr.strip()}")
    return [ln.split()[-1] for ln in out.stdout.splitlines() if ln.strip()]


def check_source(source: str, name: str) -> None:
    """Before building: raise PolicyError for includes the policy refuses."""
    from judge.build.toolkit import include_dirs

    violations = check_includes(source, name, include_dirs())
    if violations:
        raise PolicyError(violations)


def check_build(host_ii: Path | None, lib: Path, name: str, allow: Sequence[str] = ()) -> None:
    """After building: raise PolicyError for host-side assembly or a refused symbol."""
    if host_ii is None:
        raise OSError("nvcc's host pass failed, so host code cannot be checked")
    violations = check_host_asm(host_ii.read_text(errors="replace"), "src.cu", name)
    violations += check_symbols(undefined_symbols(lib), allow)
    if violations:
        raise PolicyError(violations)
