"""The host plan of scripts/probes/flash_attn_split_tail.cu, without a GPU: for every shape of a grid
(heads, sequence length, SM count) whose last round it splits, every key tile of every work tile is
run exactly once, a CTA runs at most one piece and that one last, and the piece and counter indices
stay inside the workspace the host allocates."""
from __future__ import annotations

import subprocess

from conftest import ROOT, nvcc_test

HARNESS = r"""
#include "%(src)s"
#include <cstdio>
#include <vector>
int main() {
    long long bad = 0, split = 0, total = 0;
    for (int sms : {132, 114, 78, 16, 1})
    for (int BH = 1; BH <= 700; BH += (BH < 40 ? 1 : 37))
    for (int N : {1, 64, 127, 128, 129, 255, 1000, 1024, 2048, 4099}) {
        const int BR = 128, BC = 128, nq = (N + BR - 1) / BR, n_kv = (N + BC - 1) / BC;
        const long long T = (long long)BH * nq;
        int G = 0;
        const int S = split_pieces(T, sms, n_kv, &G);
        ++total;
        if (S <= 1) continue;
        ++split;
        const long long left = T < sms ? T : T %% sms;
        if (G > sms || left * S > G || S > n_kv || S > FA8_MAX_PIECES) { ++bad; continue; }
        int n = 0;
        int* plan = make_split_plan(T, G, S, n_kv, &n);
        std::vector<int> cover((size_t)T * n_kv, 0), seen((size_t)(left * S), 0);
        for (int b = 0; b < G; ++b)
            for (int i = plan[b]; i < plan[b + 1]; ++i) {
                int t = plan[i], j0 = 0, j1 = n_kv;
                if (t < 0) {
                    const int e = -1 - t;
                    if (e >= left * S || i != plan[b + 1] - 1) { ++bad; continue; }
                    ++seen[e];
                    const int* x = plan + plan[G] + 4 * e;
                    if (x + 4 > plan + n || x[3] != e / S || x[3] >= left) { ++bad; continue; }
                    t = x[0]; j0 = x[1]; j1 = x[2];
                    if (j1 <= j0) ++bad;
                }
                if (t < 0 || t >= T) { ++bad; continue; }
                for (int j = j0; j < j1; ++j) ++cover[(size_t)t * n_kv + j];
            }
        for (int c : cover) if (c != 1) { ++bad; break; }
        for (int c : seen) if (c != 1) { ++bad; break; }
        free(plan);
    }
    printf("%%lld shapes, %%lld split, %%lld bad\n", total, split, bad);
    return bad != 0;
}
"""


def build_and_run(tmp_path, src) -> subprocess.CompletedProcess:
    harness = tmp_path / "plan_check.cu"
    harness.write_text(HARNESS % {"src": src})
    exe = tmp_path / "plan_check"
    subprocess.run(["nvcc", "-O2", "-std=c++17", "-DNVTX_DISABLE", "-gencode", "arch=compute_90a,code=sm_90a",
                    str(harness), "-o", str(exe)], check=True, capture_output=True, timeout=300)
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)


@nvcc_test
def test_every_key_tile_runs_once_and_pieces_fit_the_workspace(tmp_path):
    r = build_and_run(tmp_path, ROOT / "scripts" / "probes" / "flash_attn_split_tail.cu")
    assert r.returncode == 0 and r.stdout.strip().endswith(" 0 bad"), r.stdout
    shapes, split = (int(w) for w in r.stdout.split()[0:3:2])
    assert shapes == 2850 and split > 500, r.stdout  # the grid does reach the split plan


@nvcc_test
def test_a_piece_that_drops_a_key_tile_is_caught(tmp_path):
    src = (ROOT / "scripts" / "probes" / "flash_attn_split_tail.cu").read_text()
    wrong = src.replace("x[2] = (int)((p + 1) * n_kv / S);", "x[2] = (int)((p + 1) * n_kv / S) - (p == 1);")
    assert wrong != src
    (tmp_path / "wrong.cu").write_text(wrong)
    r = build_and_run(tmp_path, tmp_path / "wrong.cu")
    assert r.returncode == 1 and not r.stdout.strip().endswith(" 0 bad"), r.stdout
