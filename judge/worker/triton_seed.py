"""What a Triton worker's start-up writes into its cache, kept once per machine and copied into
each later worker's fresh cache.

    keep(cache)  the first ready worker's cache becomes the machine's seed, whole or not at all
    seed(cache)  a new worker's fresh cache begins as a copy of the seed (False: there is none yet)

Both are only a saving: where the cache cannot be written or read they do nothing, and the worker
compiles its start-up itself.

Every Triton worker has a cache of its own, empty (judge/worker/client.py's `triton_cache`: compile
times are the run's, and nothing one submission compiled is found by the next). Its start-up
compiles and launches a kernel of the judge's (judge/worker/triton_gpu.py's `_judge_kernel`), and
from an empty cache that builds Triton's CUDA driver module and the kernel's launcher with the
host's C compiler (the kernel's first launch took 1.0-1.8 s on an H200; with the seed a worker was
ready in 3.13-3.36 s, without it in 3.60-3.97 s: docs/benchmarks.md, 2026-11-28). What the
start-up writes depends only on the machine (its Triton, Python, compiler and GPU) and the judge's
code, and it is written before any of the submission's code runs: the worker says it is ready
only then, and the parent keeps the cache at that moment, before it sends `init`. A worker gets a
copy, its own files, so what a submission later does to its cache reaches no other worker.

The key holds Triton's and Python's versions, the machine and the worker's source: a change makes
a new seed; an old one is never changed in place. Triton checks what it finds by its own hashes,
so a seed that no longer matches costs a rebuild, never a wrong kernel. Where the judge runs as
root, the seed is root's, out of reach of the workers, which run the submission as nobody, and so
is the worker's cache until `init` (judge/worker/client.py's `triton_cache`): no process of
nobody's can have written what is kept (docs/security.md, "Python (Triton) submissions").
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from judge import paths

WORKER = Path(__file__).resolve().with_name("triton_gpu.py")  # holds the judge's kernel


def key() -> str:
    try:
        triton = metadata.version("triton")
    except metadata.PackageNotFoundError:
        triton = "none"
    h = hashlib.sha256(f"{triton}\0{sys.version}\0{platform.machine()}\0".encode())
    h.update(hashlib.sha256(WORKER.read_bytes()).digest())
    return h.hexdigest()[:24]


def seed_dir() -> Path:
    return paths.cache_root() / "triton-seed" / key()


def seed(cache: Path) -> bool:
    """The machine's seed copied into `cache` (a worker's fresh cache, before it starts); False
    where there is none yet."""
    src = seed_dir()
    if not src.is_dir():
        return False
    try:
        shutil.copytree(src, cache, dirs_exist_ok=True, symlinks=True)
        return True
    except OSError:  # a seed it cannot read: the worker compiles its start-up itself, as without one
        return False


def keep(cache: Path) -> bool:
    """`cache` (a ready worker's, before `init`) as the machine's seed, if there is none yet: copied
    beside it, then renamed into place, so a reader finds a whole seed or none. True if kept here."""
    dst = seed_dir()
    if dst.is_dir() or not cache.is_dir():
        return False
    tmp = None
    try:
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=dst.parent))
        shutil.copytree(cache, tmp, dirs_exist_ok=True, symlinks=True)
        os.replace(tmp, dst)
        return True
    except OSError:  # another judge kept one first (the rename found it), or the disk refused: no seed
        return False
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
