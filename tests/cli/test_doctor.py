"""`judge doctor`: no library warning in its output (torch without NumPy warns on import), a line
for NumPy and one for Nsight Compute (`ncu`, needed by `judge profile` only)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import ROOT
from typer.testing import CliRunner

from cli.app import app

runner = CliRunner()

WITHOUT_NUMPY = textwrap.dedent("""
    import importlib.abc, sys

    class NoNumpy(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "numpy" or name.startswith("numpy."):
                raise ModuleNotFoundError("No module named 'numpy'")
            return None

    sys.meta_path.insert(0, NoNumpy())
    sys.argv = ["judge", "doctor"]
    from cli.app import main
    main()
""")


def test_doctor_without_numpy_shows_no_warning_and_says_what_is_missing():
    r = subprocess.run([sys.executable, "-c", WITHOUT_NUMPY], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "Warning" not in r.stderr and "Failed to initialize NumPy" not in r.stdout + r.stderr, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if " numpy " in ln)
    assert "not installed" in line and "pip install numpy" in r.stdout


def test_doctor_checks_ncu(monkeypatch):
    from judge.runner import profile

    monkeypatch.setattr(profile, "ncu_path", lambda: None)
    findings = {f["name"]: f for f in json.loads(runner.invoke(app, ["doctor", "--json"]).stdout)}
    assert not findings["ncu"]["ok"] and not findings["ncu"]["required"] and "Nsight Compute" in findings["ncu"]["fix"]
    monkeypatch.setattr(profile, "ncu_path", lambda: "/opt/nvidia/nsight-compute/2025.3/ncu")
    findings = {f["name"]: f for f in json.loads(runner.invoke(app, ["doctor", "--json"]).stdout)}
    assert findings["ncu"]["ok"] and findings["ncu"]["detail"].endswith("/ncu")
