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


# A toy that passes every rule of `judge validate` (judge/problem/validate.py): a statement, hints, the
# largest benchmark among the tests, a model answer, two declared controls (all zeros among them)
# and a reference that computes in promote_types(dtype, float32).
COMPLETE_REFERENCE_PY = '''\
import torch


def reference(A, M, K, alpha):
    return alpha * A.to(torch.promote_types(A.dtype, torch.float32)).sum(dim=1)


def baseline(A, C, M, K, alpha):
    C.copy_(alpha * A.float().sum(dim=1))
'''
COMPLETE = {**VALID, "tests": [{"M": 3, "K": 5, "alpha": 1.0}, {"M": 2, "K": 3, "alpha": 0.5},
                               {"M": 64, "K": 256, "alpha": 1.0}],
            "benchmarks": [{"M": 64, "K": 256, "alpha": 1.0}, {"M": 16, "K": 16, "alpha": 1.0}]}
MODEL_ANSWER_CU = '''\
extern "C" void solve(const __half* A, float* C, int M, int K, float alpha) {}
'''
CONTROLS = {
    "all_zeros.cu": "// expected: WRONG_ANSWER — writes zeros\n" + MODEL_ANSWER_CU,
    "no_alpha.cu": "// expected: WRONG_ANSWER — forgets alpha\n" + MODEL_ANSWER_CU,
}


def write_complete(root: Path, data: dict | None = None, reference: str = COMPLETE_REFERENCE_PY) -> Path:
    """`root/problems/toy` (the problem) and `root/reference_solutions/toy` (its model answer)."""
    d = write_problem(root / "problems", data or COMPLETE, reference=reference)
    (d / "README.md").write_text("# Row sums\n\nC[i] = alpha · Σ_k A[i, k].\n")
    (d / "wrong").mkdir()
    for name, text in CONTROLS.items():
        (d / "wrong" / name).write_text(text)
    answers = root / "reference_solutions" / "toy"
    answers.mkdir(parents=True)
    (answers / "01_naive.cu").write_text(MODEL_ANSWER_CU)
    return d
