"""Where the CUDA toolkit is: nvcc, its version, CUDA_HOME. No GPU needed."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path


def nvcc_path() -> str | None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / "nvcc").exists():
        return str(Path(home) / "bin" / "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    default = Path("/usr/local/cuda/bin/nvcc")
    return str(default) if default.exists() else None


def cuda_home() -> str | None:
    nvcc = nvcc_path()
    if not nvcc:
        return None
    real = Path(nvcc).resolve()
    if (real.parent.parent / "include" / "cuda_runtime.h").exists():
        return str(real.parent.parent)
    guess = Path("/usr/local/cuda")  # nvcc on PATH may be a wrapper script
    return str(guess) if (guess / "include" / "cuda_runtime.h").exists() else None


def _nvcc_says(flag: str) -> str | None:
    """What `nvcc FLAG` prints, or None when nvcc is missing or does not answer."""
    nvcc = nvcc_path()
    if not nvcc:
        return None
    try:
        return subprocess.run([nvcc, flag], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None


@cache
def nvcc_version() -> str | None:
    """`13.0.88` or None when nvcc is missing or broken."""
    m = re.search(r"V(\d+\.\d+\.\d+)", _nvcc_says("--version") or "")
    return m.group(1) if m else None


@cache
def gpu_codes() -> tuple[str, ...] | None:
    """The real architectures this nvcc builds for (`sm_75`, `sm_80`, ...; the `a`/`f` variants are
    not listed), or None when nvcc is missing or does not say."""
    return tuple(re.findall(r"\bsm_\d+\b", _nvcc_says("--list-gpu-code") or "")) or None


def cudart_dir() -> str | None:
    home = cuda_home()
    if not home:
        return None
    for sub in ("lib64", "targets/x86_64-linux/lib", "lib"):
        d = Path(home) / sub
        if list(d.glob("libcudart.so*")):
            return str(d)
    return None


def include_dirs() -> list[Path]:
    """The toolkit's header folders (what a submission may include besides the C++ standard)."""
    home = cuda_home()
    if not home:
        return []
    roots = (Path(home) / "include", Path(home) / "targets" / "x86_64-linux" / "include")
    return [d for r in roots for d in (r, r / "cccl") if d.is_dir()]  # CUDA 13 keeps CUB/libcu++ in cccl/
