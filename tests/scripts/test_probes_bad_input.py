"""The GPU probes (scripts/probes/) on bad input, without a GPU: one line on stderr and exit 2,
never a traceback, before anything needs CUDA."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

PROBES = ROOT / "scripts" / "probes"


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args,says", [
    (["attention_ncu.py"], "usage: attention_ncu.py ANSWER.so"),
    (["attention_ncu.py", "{bad}"], "is not a built model answer"),
    (["gemm_ncu.py", "{bad}"], "usage: gemm_ncu.py HGEMM.so FP8.so"),
    (["gemm_ncu.py", "{bad}", "{bad}"], "is not a built model answer"),
    (["verdict_phases.py", "no_such_problem", "x.cu"], "no problem.yaml here"),
    (["verdict_phases.py", "vector_add", "{missing}"], "no such file"),
])
def test_one_line_and_exit_2(tmp_path, args, says):
    bad = tmp_path / "bad.so"
    bad.write_bytes(b"not a shared library")
    argv = [a.format(bad=bad, missing=tmp_path / "missing.cu") for a in args]
    r = _run(str(PROBES / argv[0]), *argv[1:])
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
