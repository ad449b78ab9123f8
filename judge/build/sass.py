"""What the machine code of a built library does: SASS opcode counts per kernel (`cuobjdump -sass`).

A static count of instructions in each function's code, not how often they run: enough to see at
a glance whether a kernel uses the tensor cores (HGMMA on Hopper, HMMA, IMMA), asynchronous copies
(LDGSTS, TMA's UTMALDG/UBLKCP), ldmatrix (LDSM), or spills to local memory (LDL/STL). cuobjdump
needs no GPU; it calls nvdisasm, so both are looked up (PATH, the CUDA toolkit, NVIDIA's
`nvidia-cuda-cuobjdump` / `nvidia-cuda-nvdisasm` wheels). Without them the summary is empty:
nothing here raises for a missing tool.
"""
from __future__ import annotations

import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from judge.build import nvcc as build
from judge.build import toolkit

# The opcodes worth a line, in the order they are shown (the base opcode: `HMMA.16816.F32` → HMMA).
# QMMA is mma.sync on FP8 (sm_89's native e4m3/e5m2 mma; sm_90 has none: there the same PTX becomes
# F2FP conversions to fp16 and HMMA, which is why F2FP is shown too).
TENSOR = ("HGMMA", "QGMMA", "IGMMA", "BGMMA", "HMMA", "QMMA", "IMMA", "DMMA", "BMMA")
SHOWN = TENSOR + ("FFMA", "FMUL", "FADD", "HFMA2", "F2FP", "UTMALDG", "UTMASTG", "UBLKCP", "LDGSTS", "LDSM",
                  "LDG", "STG", "LDS", "STS", "LDL", "STL", "SHFL", "BAR")
CACHE_FILE = "sass.json"
CACHE_VERSION = 2  # 2: QMMA and F2FP counted
TIMEOUT_S = 60

_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
# `        /*0130*/                   LDG.E R5, desc[UR4][R4.64] ;` (optionally predicated: `@!P0 EXIT`)
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)")


def tool(name: str) -> str | None:
    """A CUDA binary tool (`cuobjdump`, `nvdisasm`): PATH, then the toolkit, then NVIDIA's wheels."""
    found = shutil.which(name)
    if found:
        return found
    home = toolkit.cuda_home()
    if home and os.access(Path(home) / "bin" / name, os.X_OK):
        return str(Path(home) / "bin" / name)
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for path in sorted(glob.glob(os.path.join(root, "cu*", "bin", name)), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def parse(text: str) -> dict[str, dict[str, int]]:
    """`cuobjdump -sass` output → {mangled function name: {opcode: count}} for the SHOWN opcodes.
    A function that appears twice (the same code in two fatbin entries) is counted once."""
    out: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        if m := _FUNCTION.match(line):
            name = m.group(1)
            current = {} if name not in out else None  # a repeat: skip its body
            if current is not None:
                out[name] = current
        elif current is not None and (m := _INSTRUCTION.match(line)):
            op = m.group(1)
            if op in SHOWN:
                current[op] = current.get(op, 0) + 1
    return {name: {op: counts[op] for op in SHOWN if counts.get(op)} for name, counts in out.items()}


def disassemble(lib: Path) -> str | None:
    """`cuobjdump -sass LIB`, or None where cuobjdump (or its nvdisasm) is missing or fails."""
    cuobjdump = tool("cuobjdump")
    if not cuobjdump:
        return None
    env = dict(os.environ)
    nvdisasm = tool("nvdisasm")
    if nvdisasm:  # cuobjdump finds nvdisasm through PATH or NVDISASM_PATH
        env["NVDISASM_PATH"] = str(Path(nvdisasm).parent)
        env["PATH"] = f"{Path(nvdisasm).parent}{os.pathsep}{env.get('PATH', '')}"
    try:
        proc = subprocess.run([cuobjdump, "-sass", str(lib)], capture_output=True, text=True,
                              timeout=TIMEOUT_S, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def summarize(lib: Path) -> dict[str, dict[str, int]]:
    """Opcode counts per function of a built library, cached beside it (`sass.json` in its build
    folder, which is content-addressed: the library never changes under the same folder).
    Empty where no disassembler is available (that is not cached: installing one helps at once)."""
    lib = Path(lib)
    cache = lib.parent / CACHE_FILE
    try:
        data = json.loads(cache.read_text())
        if data.get("version") == CACHE_VERSION and data.get("size") == lib.stat().st_size:
            return data["functions"]
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    text = disassemble(lib)
    if text is None:
        return {}
    functions = parse(text)
    try:
        cache.write_text(json.dumps({"version": CACHE_VERSION, "size": lib.stat().st_size,
                                     "functions": functions}))
    except OSError:
        pass  # a read-only cache costs a re-run next time, nothing else
    return functions


def by_kernel(lib: Path) -> dict[str, dict[str, int]]:
    """Like `summarize`, keyed by the demangled name (as the build's resource report names kernels)."""
    functions = summarize(lib)
    return dict(zip(build._demangle(list(functions)), functions.values()))


def attach(result):
    """Fill `sass` on each kernel of a successful build.BuildResult (in place); return the result.
    Kernels the disassembly does not name keep an empty summary."""
    if result.ok and result.lib is not None and result.resources:
        counts = by_kernel(result.lib)
        for k in result.resources:
            k.sass = counts.get(k.kernel, {})
    return result


def line(counts: dict[str, int]) -> str:
    """`64 HMMA, 42 LDGSTS, 24 LDSM, 42 LDG, ...`, saying so when no tensor-core instruction is there."""
    parts = [f"{n} {op}" for op, n in counts.items()]
    if not any(op in counts for op in TENSOR):
        parts.insert(0, "no tensor-core instructions")
    return ", ".join(parts)
