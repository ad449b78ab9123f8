"""scripts/probes/lrc_gpc.py and lrc_gpc.cu without a GPU: the sets it makes (the same SMs both
ways, one GPC each or one SM of each GPC), the region map, and the CUDA file builds clean for
sm_90a. Its bad input and no-GPU exits are in test_probes_bad_input.py."""
from __future__ import annotations

import subprocess

import pytest
from conftest import ROOT, load_script, nvcc_test

PROBE = ROOT / "scripts" / "probes" / "lrc_gpc.py"


@pytest.fixture
def probe(monkeypatch):
    monkeypatch.syspath_prepend(str(PROBE.parent))
    return load_script(PROBE)


# SM id -> group label (the smallest SM id of its group): groups of 16, 17, 18, two SMs alone, 6, 16
GROUPS = [0] * 16 + [16] * 17 + [33] * 18 + [51, 52] + [53] * 6 + [59] * 16


def test_both_kinds_of_set_are_made_of_the_same_sms(probe):
    same, across = probe.sets_of(GROUPS, 4, False), probe.sets_of(GROUPS, 4, True)
    assert len(same) == len(across) == 16  # the four largest groups, their first 16 SMs, in sets of 4
    assert sorted(sum(same, [])) == sorted(sum(across, []))
    assert all(len({GROUPS[sm] for sm in s}) == 1 for s in same)
    assert all(len({GROUPS[sm] for sm in s}) == 4 for s in across)
    assert {GROUPS[sm] for sm in sum(same, [])} == {0, 16, 33, 59}


def test_groups_smaller_than_a_set_take_no_part(probe):
    used = {GROUPS[sm] for sm in sum(probe.sets_of(GROUPS, 2, True), [])}
    assert used == {16, 33}  # the two largest
    assert probe.sets_of(GROUPS, 8, False) == []  # 8 groups of 8 or more are needed: there are 4
    assert probe.sets_of(GROUPS[:20], 4, True) == []


def test_regions_give_each_set_one_region_and_every_other_sm_its_own(probe):
    region = probe.regions(8, [[1, 3], [4, 5]])
    assert region[1] == region[3] == 0 and region[4] == region[5] == 1
    others = [region[i] for i in (0, 2, 6, 7)]
    assert sorted(others) == [2, 3, 4, 5]


@nvcc_test
def test_the_cuda_file_builds_clean_for_sm90a(tmp_path):
    r = subprocess.run(["nvcc", "-O3", "-std=c++17", "-Xptxas", "-v", "-gencode", "arch=compute_90a,code=sm_90a",
                        "-c", str(PROBE.with_suffix(".cu")), "-o", str(tmp_path / "x.o")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    spills = [line for line in r.stderr.splitlines() if "spill" in line]
    assert len(spills) >= 2 and all("0 bytes spill stores, 0 bytes spill loads" in line for line in spills), spills
