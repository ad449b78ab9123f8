"""scripts/probes/ncu_source_regions.py without a GPU: ncu's source page (CSV) summed per kernel and per
run of equally executed instructions, gzipped or not; bad input is one line and exit 2."""
from __future__ import annotations

import gzip
import subprocess
import sys

import pytest
from conftest import ROOT, load_script

PROBE = ROOT / "scripts" / "probes" / "ncu_source_regions.py"
HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"Instructions Executed","stall_barrier","stall_wait","stall_barrier (Not Issued)"')


def page(rows: list[tuple[str, int, int, int, int]], name: str = "k") -> str:
    """A source page: rows of (source, samples, executed, barrier samples, wait samples)."""
    lines = [f'"Kernel Name","{name}",', HEADER]
    lines += [f'"0x{i:x}","{src}","{s}","{s}","{e}","{b}","{w}","{b}"' for i, (src, s, e, b, w) in enumerate(rows)]
    return "\n".join(lines) + "\n"


ROWS = [("LDC R1, c[0x0][0x28]", 100, 8, 0, 100),     # once a warp
        ("QGMMA.64x144x32", 700, 512, 200, 500),      # the loop: two instructions, 512 times each
        ("FADD R2, R2, R3", 200, 512, 0, 200),
        ("STG.E.128 [R4], R8", 1000, 64, 1000, 0)]    # once a tile


@pytest.fixture
def probe(monkeypatch):
    monkeypatch.syspath_prepend(str(PROBE.parent))
    return load_script(PROBE)


def test_regions_are_runs_of_equal_execution_counts(probe):
    assert probe.regions([8, 512, 512, 64], [100, 700, 200, 1000]) == [
        (0, 0, 8, 100), (1, 2, 512, 900), (3, 3, 64, 1000)]


def test_the_report_gives_stall_shares_and_regions_over_the_threshold(probe):
    (k,) = probe.kernels(page(ROWS, "gemm"))
    lines = probe.report(k, min_share=5.1)
    assert lines[0].startswith("gemm: 4 instructions, 2000 samples")
    assert lines[1] == "  stall reasons: barrier 60.0%, wait 40.0%"
    assert [line.split("]")[0].strip() for line in lines[2:]] == ["[    1-    2", "[    3-    3"]  # 5% (100) under 5.1
    assert "45.00% of samples" in lines[2] and "QGMMA" in lines[2]


def test_a_gzipped_page_of_two_kernels_runs_and_bad_input_is_one_line_and_exit_2(tmp_path):
    good = tmp_path / "rep.csv.gz"
    good.write_bytes(gzip.compress((page(ROWS, "first") + page(ROWS[:1], "tiny")).encode()))
    r = subprocess.run([sys.executable, str(PROBE), str(good)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("first: 4 instructions") and "tiny" not in r.stdout  # under 1,000 samples
    plain = tmp_path / "notes.txt"
    plain.write_text("hello\n")
    no_col = tmp_path / "nocol.csv"
    no_col.write_text('"Kernel Name","k",\n"Address","Source"\n"0x0","NOP"\n')
    for argv, said in (([str(tmp_path / "none.csv")], "no such file"), ([str(plain)], "not ncu's source page"),
                       ([str(no_col)], "has no Warp Stall Sampling"), ([str(good), "--kernel", "zzz"], "no kernel"),
                       ([str(good), "--min-share", "200"], "percentage")):
        r = subprocess.run([sys.executable, str(PROBE), *argv], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stdout == "", argv
        assert len(r.stderr.strip().splitlines()) == 1 and said in r.stderr, r.stderr
