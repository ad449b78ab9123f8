#!/usr/bin/env bash
# The GPU checks that close a batch of work, in the order they cost: run on the GPU machine from
# the repository root (`source scripts/on_device.sh` first puts `judge` on PATH). Logs go to
# ${OUT:-/tmp/device_verify}. Usage: scripts/device_verify.sh gpu-tests | verify | batch [PROBLEM...] | measure
set -uo pipefail
OUT=${OUT:-/tmp/device_verify}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
case "${1:?gpu-tests | verify | batch [PROBLEM...] | measure}" in
  gpu-tests)  # every GPU test: controls, exploits, crash-then-valid, compare, watch
    python3 -m pytest -m gpu -q -rs 2>&1 | tee "$OUT/pytest_gpu.log" | tail -25 ;;
  batch)      # `judge verify`, then every other GPU test (test_every_problem_verifies is that same
              # verify: ~4.5 of pytest's ~13 minutes on an H200, 2026-11-28), then the table rows of
              # the problems named after `batch` (none: no table)
    shift
    judge verify 2>&1 | tee "$OUT/verify.log" | grep -E "FAIL|ok,|✗"
    python3 -m pytest -m gpu -q -rs --deselect tests/test_gpu.py::test_every_problem_verifies 2>&1 \
      | tee "$OUT/pytest_gpu.log" | tail -25
    if [ $# -gt 0 ]; then
      judge verify --table "$@" 2>&1 | tee "$OUT/table.log" | grep -E "FAIL|ok,|table:"
      cp reference_solutions/README.md reference_solutions/results.json "$OUT/"
    fi ;;
  verify)     # every model answer ACCEPTED, every control as declared, under the runtime defences
    judge verify 2>&1 | tee "$OUT/verify.log" | grep -E "FAIL|ok,|✗" ;;
  measure)    # the numbers the docs quote
    judge verify --table embedding 2>&1 | grep -E "ok,|table:"
    cp reference_solutions/README.md reference_solutions/results.json "$OUT/"
    judge submit problems/hgemm reference_solutions/hgemm/06_wgmma_tma_persistent.cu --no-record 2>&1 | tee "$OUT/hgemm06.log" | tail -12
    for f in 04_wgmma_pingpong; do
      judge submit problems/flash_attn reference_solutions/flash_attn/$f.cu --no-record --json > "$OUT/fa_$f.json"
      python3 scripts/measure/fa_submit_summary.py "$OUT/fa_$f.json"
    done
    python3 scripts/measure/measure_watch.py 2>&1 | tee "$OUT/watch.log" | tail -4 ;;
esac
