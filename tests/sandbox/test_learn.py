"""The sandbox's learning mode (judge/worker/native/learn.h, JUDGE_SECCOMP_LEARN): a call the filter
would refuse is logged with its number and arguments, and runs. It measures the allow-list on the
GPU (scripts/probes/seccomp_learn.sh); here a g++-built probe makes one refused call (socket)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from judge.sandbox import seccomp

HERE = Path(__file__).parent
pytestmark = pytest.mark.skipif(shutil.which("g++") is None or seccomp.supported() is not None,
                                reason="needs g++ and an x86_64 Linux kernel with seccomp")


def test_a_refused_call_is_logged_and_runs(tmp_path):
    exe, log = tmp_path / "learn_probe", tmp_path / "calls"
    subprocess.run(["g++", "-O1", "-o", str(exe), str(HERE / "native" / "learn_probe.cc"), "-lpthread"], check=True)
    # the probe's own pid is not known before it runs: the kill/tgkill rules do not matter here
    out = subprocess.run([str(exe), seccomp.program(1, learn=True).hex(), str(log)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) >= 0  # the socket was made: learning lets the call run
    nr, *args = log.read_text().split()
    assert seccomp.syscall_name(int(nr)) == "socket" and args[0] == "2"  # AF_INET
