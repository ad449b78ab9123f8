"""Ships the problem set inside the package: a normal install (`pip install .`, `pipx install .`,
a wheel) copies `problems/` and `reference_solutions/` to `judge/problemset/`, where
`judge.paths.problems_root` finds them from any folder. An editable install copies nothing: it reads
the checkout's own folders. Everything else about the package is in pyproject.toml.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PROBLEM_SET = ("problems", "reference_solutions")  # judge/paths.py: INSTALLED_SET holds both, side by side


class BuildWithProblemSet(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for name in PROBLEM_SET:
            dst = Path(self.build_lib, "judge", "problemset", name)
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(HERE / name, dst, ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))


setup(cmdclass={"build_py": BuildWithProblemSet})
