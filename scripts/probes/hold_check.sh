#!/usr/bin/env bash
# The hold's GPU tests, then run-to-run spread under two minimum windows (GPU machine).
source scripts/on_device.sh > /tmp/setup.log 2>&1
export JUDGE_CACHE=/tmp/jc
timeout 300 python3 -m pytest -p no:cacheprovider -q -m gpu tests/test_exploits.py -k "hold or host_busy or side_stream" 2>&1 | tail -8
for mt in 0.3 0.1; do
  python3 scripts/probes/repeatability.py hgemm reference_solutions/hgemm/06_wgmma_tma_persistent.cu --runs 5 --min-time $mt 2>&1 | tail -5
  python3 scripts/probes/repeatability.py vector_add reference_solutions/vector_add/02_float4.cu --runs 5 --min-time $mt 2>&1 | tail -4
done
