"""`judge show` and `judge drill` print the whole statement: every word of the README reaches the
output, at any width (multi-line list items used to be cropped at the console's width)."""
from __future__ import annotations

import re
from collections import Counter

import pytest
from conftest import PROBLEMS_DIR
from typer.testing import CliRunner

from cli import common
from cli.app import app

runner = CliRunner()
STATEMENTS = ["sgemm", "flash_attn", "prefix_sum"]


def words(text: str) -> Counter[str]:
    return Counter(re.findall(r"[A-Za-z0-9]+", text))


def missing_words(readme: str, output: str) -> dict[str, int]:
    readme = re.sub(r"^```\S*", "", readme, flags=re.M)  # a code fence's language is not a word of it
    want, got = words(readme), words(output)
    return {w: n - got[w] for w, n in want.items() if got[w] < n}


@pytest.mark.parametrize("width", [60, 120, 200])
@pytest.mark.parametrize("name", STATEMENTS)
def test_show_prints_every_word_of_the_statement(name, width, monkeypatch):
    monkeypatch.setattr(common.out, "width", width)
    r = runner.invoke(app, ["show", name])
    assert r.exit_code == 0, r.output
    assert not missing_words((PROBLEMS_DIR / name / "README.md").read_text(), r.stdout)


@pytest.mark.parametrize("width", [60, 120])
def test_drill_prints_every_word_of_each_statement(tmp_path, width, monkeypatch):
    monkeypatch.setattr(common.out, "width", width)
    r = runner.invoke(app, ["drill", "--set", ",".join(STATEMENTS), "--dir", str(tmp_path),
                            "--db", str(tmp_path / "j.db")])
    assert r.exit_code == 0, r.output
    readmes = "\n".join((PROBLEMS_DIR / n / "README.md").read_text() for n in STATEMENTS)
    assert not missing_words(readmes, r.stdout)
