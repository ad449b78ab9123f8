"""The judge commands a statement gives work from any folder: a problem is named (`judge submit
softmax softmax.cu`, as the drill prints it), never given as a `problems/` path, which exists only
in a clone of this repository."""
from __future__ import annotations

import re

import pytest
from conftest import PROBLEMS_DIR, problem_names

JUDGE_LINE = re.compile(r"\bjudge\s+[a-z]+\b.*")


@pytest.mark.parametrize("name", problem_names())
def test_statement_commands_name_the_problem(name):
    readme = PROBLEMS_DIR / name / "README.md"
    if not readme.exists():
        pytest.skip("no statement")
    commands = [m.group(0) for m in JUDGE_LINE.finditer(readme.read_text())]
    assert not [c for c in commands if "problems/" in c], f"{readme}: a judge command with a problems/ path"
    for c in commands:
        words = c.split()
        if words[1] in ("submit", "test", "init", "show") and len(words) > 2:
            assert words[2] == name, f"{readme}: {c!r} does not name {name}"
