#!/usr/bin/env bash
# `judge submit` wall times on four model answers (easy, medium, hard, hard+), each twice (the
# first with a cold build cache, the second with a warm one), against torch's own CUDA start.
# GPU machine; the reports go to $OUT. Usage: bash scripts/probes/submit_walls.sh (after on_device.sh)
python3 -c "import torch" 
python3 -c "import time;t=time.time();import torch;torch.zeros(1,device='cuda');print('torch cuda start',round(time.time()-t,2))"
for p in "vector_add 02_float4" "softmax 03_row_in_registers" "hgemm 06_wgmma_tma_persistent" "flash_attn 04_wgmma_pingpong"; do
  set -- $p
  for run in cold warm; do
    s=$(date +%s.%N)
    judge submit $1 reference_solutions/$1/$2.cu --no-record > ${OUT:-/tmp}/$1.$run.txt 2>&1; rc=$?
    e=$(date +%s.%N)
    printf '%s %s %s rc=%s %.1f s\n' "$1" "$2" "$run" "$rc" "$(echo "$e-$s" | bc)"
  done
done
