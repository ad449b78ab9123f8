#!/usr/bin/env bash
# Where a verdict's time goes: cProfile of `judge submit` on three problems, plus torch's CUDA start.
source scripts/on_device.sh > /tmp/setup.log 2>&1
export JUDGE_CACHE=/tmp/jc
python3 -c "import time;t=time.time();import torch;torch.zeros(1,device='cuda');print('torch cuda start',round(time.time()-t,2))"
for p in "vector_add reference_solutions/vector_add/02_float4.cu" "softmax reference_solutions/softmax/03_row_in_registers.cu" "hgemm reference_solutions/hgemm/06_wgmma_tma_persistent.cu"; do
  set -- $p
  s=$(date +%s.%N); judge submit $1 $2 --no-record > $OUT/$1.cold.txt 2>&1; e=$(date +%s.%N); echo "$1 cold $(echo "$e-$s"|bc)"
  s=$(date +%s.%N); python3 -m cProfile -o $OUT/$1.prof -m cli submit $1 $2 --no-record --json > $OUT/$1.json 2>$OUT/$1.err; e=$(date +%s.%N); echo "$1 warm+prof $(echo "$e-$s"|bc)"
done
tail -3 $OUT/*.cold.txt
