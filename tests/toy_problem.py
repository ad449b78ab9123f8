"""A toy problem the tests write into a temporary folder: a valid problem.yaml as a dict, and its
reference.py. Shared by the tests of the problem contract, the build, the engine and the CLI."""
from __future__ import annotations

from pathlib import Path

import yaml

REFERENCE_PY = '''\
import torch


def reference(A, M, K, alpha):
    return alpha * A.float().sum(dim=1)


def baseline(A, C, M, K, alpha):
    C.copy_(alpha * A.float().sum(dim=1))
'''

VALID = {
    "name": "toy",
    "title": "Row sums",
    "level": "medium",
    "tags": ["reduction"],
    "signature": [
        {"name": "A", "type": "const half*", "shape": ["M", "K"]},
        {"name": "C", "type": "float*", "shape": ["M"]},
        {"name": "M", "type": "int"},
        {"name": "K", "type": "int"},
        {"name": "alpha", "type": "float"},
    ],
    "inputs": {"A": {"init": "rand", "scale": "K**-0.5", "low": -1, "high": 1}},
    "reference": "reference.py:reference",
    "baseline": {"name": "torch.sum", "impl": "reference.py:baseline"},
    "check": {"name": "allclose", "rtol": 1e-3, "atol": 1e-3},
    "flops": "M*K",
    "bytes": "2*M*K + 4*M",
    "tests": [{"M": 3, "K": 5, "alpha": 1.0}, {"M": 1, "K": 1, "alpha": 0.5}],
    "benchmarks": [{"M": 4096, "K": 4096, "alpha": 1.0}],
    "hints": ["one warp per row", "vectorize the loads"],
}


def write_problem(root: Path, data: dict | str, folder: str = "toy", reference: str | None = REFERENCE_PY) -> Path:
    d = root / folder
    d.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    (d / "problem.yaml").write_text(text)
    if reference is not None:
        (d / "reference.py").write_text(reference)
    return d
