"""Static policy (docs/security.md): what a submission may include, and what its library may call.
It needs no GPU and runs before any does. It is a first filter that names the rule a submission
breaks, not the security wall (that is the OS confinement of the worker process).

1. Includes (`check_includes`, on the source, before building): only C++ standard headers and
   headers of the CUDA toolkit; never an absolute path, a parent path or a computed include. A
   vendor library's header (`<cublas_v2.h>`, `<cudnn.h>`, ...) only where the problem's
   problem.yaml names the library in `allow:`.
2. Host-side inline assembly (`check_host_asm`, on nvcc's host pass `host.ii`, made beside every
   build): device code may use `asm` (PTX), host code may not. nvcc's front end removes device
   function bodies from the host pass, so any `asm` left in lines that came from the submission
   runs on the CPU.
3. Undefined symbols of the built library (`check_symbols`, `nm -D --undefined-only`) against an
   allow-list: the CUDA runtime API, the C++ runtime (iostream's initializer, output to std::cout
   and std::cerr, exceptions), libc memory, string, math and console output (stdio on the
   already-open stdout and stderr). Everything else is refused, naming the symbol; well-known
   dangers (dlopen, syscall, sockets, opening files, processes, threads, the Python C API) name
   their rule, and a vendor library's symbols say which `allow:` entry would open them.
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


def check_includes(source: str, name: str, toolkit_includes: list[Path],
                   allow: Sequence[str] = ()) -> list[Violation]:
    """`allow`: the problem's `allow:` list (the vendor libraries whose headers it opens)."""
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
        elif lib := next((x for x in VENDOR_LIBRARIES if x.headers.fullmatch(header)), None):
            if lib.allow not in allow:
                out.append(Violation("include", where, f"`{header}` is the header of {lib.title}, {lib.needs()}"))
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
# Console output is stdio on the FILEs the process already has, stdout and stderr (no other FILE
# can be named: opening one, fopen/fdopen/freopen/tmpfile, is refused below). gcc turns calls with
# a constant format into cheaper ones: fprintf(stderr, "text\n") and fputs("text", f) into fwrite,
# a one-character fputs into fputc, printf("text\n") into puts, so these are honest error paths
# too (tests/controls/stderr_error_path.cu). fwrite on stderr is no more than fprintf(stderr,
# "%s") could already do; neither is a wall against writing to some other descriptor (a FILE's
# fields are writable memory): that is the OS confinement's job.
ALLOWED = frozenset("""
__gmon_start__ __stack_chk_fail __assert_fail abort exit atexit __cxa_finalize
memcpy memmove memset memcmp memchr strlen strcmp strncmp strcpy strncpy strchr strstr
malloc calloc realloc free posix_memalign aligned_alloc
printf puts putchar fprintf fputs fputc putc fwrite fflush perror
__printf_chk __fprintf_chk __sprintf_chk __snprintf_chk __vprintf_chk __vfprintf_chk __vsnprintf_chk
sprintf snprintf vsnprintf vprintf vfprintf stdout stderr
""".split())
_MATH = re.compile(r"(?:sqrt|cbrt|exp|exp2|expm1|log|log2|log10|log1p|pow|sin|cos|tan|asin|acos|atan|atan2|"
                   r"sinh|cosh|tanh|erf|erfc|fabs|floor|ceil|round|lround|llround|trunc|fmod|fmin|fmax|fma|"
                   r"ldexp|frexp|modf|hypot|rint|lrint|nearbyint|remainder|copysign|ilogb|logb|scalbn|"
                   r"__isnan|__isinf|__finite)[fl]?(?:_finite)?")
# The standard exception classes (<exception>, <new>, <typeinfo>, <stdexcept> and the
# vocabulary types' bad_* classes): what `throw std::runtime_error(...)` and `catch` import.
_EXCEPTIONS = ("exception bad_exception bad_alloc bad_array_new_length bad_cast bad_typeid logic_error "
               "domain_error invalid_argument length_error out_of_range runtime_error range_error "
               "overflow_error underflow_error bad_function_call bad_optional_access bad_variant_access "
               "bad_any_cast").split()
# The C++ runtime (libstdc++) beyond the prefixes above, by mangled name:
_CXX_RUNTIME = re.compile("|".join([
    # <iostream> with gcc <= 12 defines a static std::ios_base::Init in every file that includes
    # it, used or not: its constructor and destructor (the destructor registered by __cxa_atexit).
    r"_ZNSt8ios_base4Init[CD][12]Ev",
    # Output to std::cout / std::cerr: std::ostream's members (operator<<, put, write, flush),
    # basic_ios<char>'s (clear, on a failed write) and ctype<char>'s widen (std::endl). The
    # stream objects themselves are _ZSt4cout, _ZSt4cerr (the _ZSt prefix). No file stream can
    # be made: std::basic_filebuf's members stay refused (tests/exploits/symbol_filebuf_open.cu).
    r"_ZNSo\w+", r"_ZNSt9basic_iosIcSt11char_traitsIcEE\w+", r"_ZNKSt5ctypeIcE\w+",
    # Exceptions (tests/controls/throw_runtime_error.cu): the standard exception classes'
    # constructors, destructors and what() (_ZN/_ZNK), typeinfo (_ZTI), typeinfo names (_ZTS)
    # and vtables (_ZTV); the ABI's typeinfo classes' vtables (any class with a vtable, e.g. an
    # exception class of the submission's own); the typeinfo of fundamental types and pointers
    # to them (`throw 1`, `throw "text"`).
    r"_Z(?:NK?|T[ISV])St(?:" + "|".join(f"{len(e)}{e}" for e in _EXCEPTIONS) + r")\w*",
    r"_ZT[ISV]N10__cxxabiv1\d+__\w+_type_infoE",
    r"_ZTI[PK]*[a-z]",
]))


@dataclass(frozen=True)
class Library:
    """A vendor library: its symbols and headers, and the `allow:` entry of problem.yaml that opens
    them (None: none can; `judge.problem.spec` lists the entries it accepts)."""
    title: str
    allow: str | None
    symbols: re.Pattern
    headers: re.Pattern

    def needs(self) -> str:
        if self.allow is None:
            return f"a vendor library that no problem can allow (`allow:` takes {', '.join(LIBRARIES)})"
        return f"a vendor library, which needs `allow: [{self.allow}]` in the problem's problem.yaml"


def _library(title: str, allow: str | None, symbols: str, headers: str) -> Library:
    return Library(title, allow, re.compile(symbols), re.compile(headers))


# Checked in this order, first match wins (cublasLt before cublas). Only the host APIs' headers:
# device-side headers such as <curand_kernel.h> need no library and are toolkit headers.
VENDOR_LIBRARIES = [
    _library("cuBLASLt", "cublasLt", r"cublasLt\w*", r"cublasLt\.h"),
    _library("cuBLAS", "cublas", r"cublas\w*", r"cublas(?:_v2|_api|Xt)?\.h"),
    _library("cuDNN", "cudnn", r"cudnn\w*", r"cudnn\w*\.h"),
    _library("NCCL", "nccl", r"nccl\w*", r"nccl\w*\.h"),
    _library("cuFFT", None, r"cufft\w*", r"cufft\w*\.h"),
    _library("cuRAND", None, r"curand\w*", r"curand\.h"),
    _library("cuSPARSE", None, r"cusparse\w*", r"cusparse\w*\.h"),
    _library("cuSOLVER", None, r"cusolver\w*", r"cusolver\w*\.h"),
]
# What `allow:` in a problem spec can open (judge.problem.spec's `allow` accepts exactly these).
LIBRARIES = {x.allow: x for x in VENDOR_LIBRARIES if x.allow}
# Refused by name, with the rule that says why (checked before the allow-list).
REFUSED: list[tuple[re.Pattern, str]] = [(re.compile(p), why) for p, why in [
    (r"dl(open|sym|vsym|mopen|close|error|info|addr)", "loading code at run time"),
    (r"syscall|ptrace|prctl|seccomp", "raw system calls"),
    (r"mprotect|mmap(64)?|munmap|mremap|pkey_mprotect", "changing memory protection or mappings"),
    (r"fork|vfork|clone3?|exec[lv]?[pe]?|execvpe|fexecve|system|popen|posix_spawnp?|kill|raise", "processes"),
    (r"socket|connect|bind|listen|accept4?|send(to|msg)?|recv(from|msg)?|getaddrinfo|gethostbyname", "network"),
    # fwrite is console output (ALLOWED above); the raw write(2) is not.
    (r"f?open(64|at|at64)?|creat|f?read|write|pread|pwrite|unlink|rename|remove|fdopen|freopen(64)?|"
     r"tmpfile(64)?|opendir|readdir|stat|fstat|lstat|chmod|chdir|getenv|setenv|putenv", "files and the environment"),
    (r"pthread_\w+|_ZNSt6thread\w*|thrd_\w+", "host threads"),
    (r"cudaDeviceReset|cudaSetDevice|cudaIpc\w+|cudaDeviceSetSharedMemConfig", "CUDA calls that reach beyond this run"),
    (r"cu[A-Z]\w+", "the CUDA driver API (use the runtime API)"),
    (r"_?Py\w+", "the Python C API"),
]]


def check_symbols(undefined: list[str], allow: Sequence[str] = ()) -> list[Violation]:
    """`allow`: the problem's `allow:` list (the vendor libraries whose symbols it opens)."""
    out = []
    for sym in undefined:
        name = sym.split("@")[0]
        lib = next((x for x in VENDOR_LIBRARIES if x.symbols.fullmatch(name)), None)
        if lib:
            if lib.allow not in allow:
                out.append(Violation("symbol", name, f"refused: {lib.title}, {lib.needs()}"))
            continue
        refused = next((why for p, why in REFUSED if p.fullmatch(name)), None)
        if refused:
            out.append(Violation("symbol", name, f"refused: {refused}"))
        elif not (name in ALLOWED or name.startswith(ALLOWED_PREFIXES) or _MATH.fullmatch(name)
                  or _CXX_RUNTIME.fullmatch(name)):
            out.append(Violation("symbol", name, "not on the allow-list (CUDA runtime, C++ runtime, libc "
                                 "memory/string/math, console output)"))
    return out


def undefined_symbols(lib: Path) -> list[str]:
    out = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise OSError(f"nm failed on {lib}: {out.stderr.strip()}")
    return [ln.split()[-1] for ln in out.stdout.splitlines() if ln.strip()]


def check_source(source: str, name: str, allow: Sequence[str] = ()) -> None:
    """Before building: raise PolicyError for includes the policy refuses (`allow`: the problem's)."""
    from judge.build.toolkit import include_dirs

    violations = check_includes(source, name, include_dirs(), allow)
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
