"""The command-line checks probes share: on bad input one line on stderr and exit 2, before
anything needs CUDA."""
from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[2]


def fail(probe: str, msg: str) -> NoReturn:
    print(f"{probe}: {msg}", file=sys.stderr)
    sys.exit(2)


def cuda_torch(probe: str):
    """torch, imported only now (so that a usage error needs no CUDA); one line and exit 2 where no
    CUDA device answers."""
    import torch

    if not torch.cuda.is_available():
        fail(probe, "no CUDA device answered (this probe runs on a GPU machine)")
    return torch


def check_problem_and_calls(probe: str, problem: str, calls: int) -> None:
    """A folder of problems/ with a problem.yaml, and a call count from 1 to 1000."""
    if not (ROOT / "problems" / problem / "problem.yaml").is_file():
        fail(probe, f"no such problem: {problem}")
    if not 1 <= calls <= 1000:
        fail(probe, f"--calls {calls}: from 1 to 1000")


def problem_parser(doc: str, calls: int, calls_help: str) -> argparse.ArgumentParser:
    """A parser with the PROBLEM argument and --calls (default `calls`); the probe adds the rest."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("problem", help="a problem's name (a folder of problems/)")
    ap.add_argument("--calls", type=int, default=calls, help=f"{calls_help} (default {calls})")
    return ap


def load_library(path: Path, functions: dict[str, list], built_from: str) -> ctypes.CDLL:
    """A built model answer with `functions` ({name: argtypes}, each returning int) typed; ValueError
    with one line if the file is missing, is not a library, or lacks one of them."""
    if not path.is_file():
        raise ValueError(f"no such file: {path}")
    try:
        lib = ctypes.CDLL(str(path.resolve()))
    except OSError as e:
        raise ValueError(f"{path} is not a built model answer ({str(e).splitlines()[0]})") from None
    for name, args in functions.items():
        if not hasattr(lib, name):
            raise ValueError(f"{path} does not export {name} (not built from {built_from}?)")
        getattr(lib, name).argtypes, getattr(lib, name).restype = args, ctypes.c_int
    return lib


def gpc_labels(probe: str, lib, torch) -> list[int]:
    """Each SM's GPC label from a library built with gpc_groups.cuh (its `gpc_groups` typed), or one
    line and exit 2 where no cluster could launch."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    labels = (ctypes.c_int * sms)()
    if lib.gpc_groups(labels, sms) < 0:
        fail(probe, "no cluster of 8 or more CTAs launched on this GPU (its GPCs cannot be told apart)")
    return list(labels)
