"""The command-line checks probes share: on bad input one line on stderr and exit 2, before
anything needs CUDA."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parents[2]


def fail(probe: str, msg: str) -> NoReturn:
    print(f"{probe}: {msg}", file=sys.stderr)
    sys.exit(2)


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
