"""Names in leaderboards: the markdown shows a participant's name, never renders it (HTML escaped);
`--gpu-kind` takes a part of a GPU kind's name, any case, and an ambiguous one is a usage error
that lists the kinds."""
from __future__ import annotations

import json

import pytest
from test_leaderboard import report
from typer.testing import CliRunner

from cli.app import app
from judge.board import rank as board_rank
from judge.board import render as board_render
from judge.board import submissions as leaderboard
from judge.contract.verdict import Status
from judge.store import Store

runner = CliRunner()
H100, H100_PCIE, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA A100-SXM4-80GB"
EVIL = '<img src=x onerror="alert(1)">'


def test_markdown_escapes_html_in_names():
    rows = [leaderboard.StoredResult(1, EVIL, "<b>GPU</b>", report("relu", [(1.0, 0.01, 2.0)])),
            leaderboard.StoredResult(2, "<i>x</i>", "<b>GPU</b>",
                                     report("relu", status=Status.WRONG_ANSWER, message="<script>"))]
    text = board_render.markdown(board_rank.boards(rows))
    assert "<img" not in text and "<b>" not in text and "<i>" not in text and "<script>" not in text
    assert "&lt;img src=x onerror=\"alert(1)\"&gt;" in text and "&lt;b&gt;GPU&lt;/b&gt;" in text


@pytest.mark.parametrize("text, kind", [("h100 80gb", H100), ("a100", A100), ("PCIe", H100_PCIE),
                                        ("nvidia h100 pcie", H100_PCIE)])
def test_a_kind_is_named_by_any_part_of_it(text, kind):
    assert leaderboard.match_kind([H100, H100_PCIE, A100], text) == kind


def test_an_exact_name_wins_over_a_longer_one():
    assert leaderboard.match_kind(["H100", "H100 PCIe"], "h100") == "H100"


@pytest.mark.parametrize("text, listed", [("H100", [H100, H100_PCIE]), ("B200", [H100, H100_PCIE, A100])])
def test_no_match_or_several_name_the_kinds(text, listed):
    with pytest.raises(leaderboard.KindError) as e:
        leaderboard.match_kind([H100, H100_PCIE, A100], text)
    assert all(k in str(e.value) for k in listed)


def test_show_takes_a_short_kind(tmp_path):
    db = tmp_path / "j.db"
    with Store(db) as st:
        for kind in (H100, H100_PCIE, A100):
            st.record(report("relu", [(1.0, 0.01, 2.0)]), participant="alice", gpu_kind=kind)
    r = runner.invoke(app, ["leaderboard", "show", "--gpu-kind", "a100", "--json", "--db", str(db)])
    assert r.exit_code == 0, r.output
    assert [b["gpu_kind"] for b in json.loads(r.stdout)["boards"]] == [A100]
    r = runner.invoke(app, ["leaderboard", "show", "--gpu-kind", "H100", "--db", str(db)])
    assert r.exit_code == 2, r.output
    assert H100 in r.output and H100_PCIE in r.output and "Traceback" not in r.output
