#!/usr/bin/env bash
# `judge submit` wall times on four model answers (easy, medium, hard, hard+), each twice (the
# first with a cold build cache, the second with a warm one), against torch's own CUDA start, with
# the report's phases_s (where the time went). GPU machine; the reports go to $OUT (or /tmp).
# Usage: bash scripts/probes/submit_walls.sh [PROBLEM/ANSWER ...]   (after scripts/on_device.sh)
out=${OUT:-/tmp}
python3 -c "import torch"
python3 -c "import time;t=time.time();import torch;torch.zeros(1,device='cuda');print('torch cuda start',round(time.time()-t,2))"
set -- "${@:-vector_add/02_float4 softmax/03_row_in_registers hgemm/06_wgmma_tma_persistent flash_attn/04_wgmma_pingpong}"
for p in $@; do
  prob=${p%%/*}; ans=${p#*/}
  for run in cold warm; do
    [ $run = cold ] && rm -rf "${JUDGE_CACHE:?set JUDGE_CACHE}/build"  # the solutions' builds (the worker and the peaks stay)
    s=$(date +%s%N)
    judge submit "$prob" "reference_solutions/$prob/$ans.cu" --no-record --json > "$out/$prob.$run.json" 2> "$out/$prob.$run.err"; rc=$?
    e=$(date +%s%N)
    python3 - "$out/$prob.$run.json" "$prob $ans $run rc=$rc $(( (e - s) / 1000000 )) ms" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
    ph = " ".join(f"{k}={v:.1f}" for k, v in r.get("phases_s", {}).items())
    print(sys.argv[2], r["status"], f"wall_s={r['wall_s']:.1f}", ph)
except Exception as e:  # noqa: BLE001
    print(sys.argv[2], "no report:", e)
PY
  done
done
