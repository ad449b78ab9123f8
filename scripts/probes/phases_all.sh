#!/usr/bin/env bash
# scripts/probes/verdict_phases.py on a few problems' model answers (GPU machine); profiles to $OUT.
source scripts/on_device.sh > /tmp/setup.log 2>&1
export JUDGE_CACHE=/tmp/jc
for p in "${@:-vector_add:02_float4 softmax:03_row_in_registers hgemm:06_wgmma_tma_persistent}"; do
  for q in $p; do
    name=${q%%:*}; sol=reference_solutions/$name/${q#*:}.cu
    echo "== $name"; python3 scripts/probes/verdict_phases.py $name $sol --profile ${OUT:-/tmp}/$name.prof.txt 2>&1 | tail -n 60
  done
done
