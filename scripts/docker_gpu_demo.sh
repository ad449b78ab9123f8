#!/usr/bin/env bash
# The docker runner on a GPU machine with no registry, no network, no Docker and no NVIDIA
# container toolkit (the device tool's H100): start the engine carried in BUNDLE_DIR, import a
# skeleton image, and judge in containers that bind-mount this machine's /usr (nvcc) and Python
# (torch) read-only, with the GPU's device nodes passed and the driver's libraries mounted.
#
# Expected:
#   the engine's version line; "docker SDK 7.1.0"
#   1. hgemm model answer (04_wmma_pipelined.cu) in a container: ACCEPTED, exit 0
#   2. hgemm wrong control (no_tail.cu):                          WRONG_ANSWER, exit 1
#   3. judge submit vector_add 02_float4.cu, 3 runs each: local (warm cache), local (cold cache),
#      docker (always cold: a fresh tmpfs per container); wall seconds per run, then the medians
#   "all checks passed" (exit 0), else "FAILED: ..." (exit 1)
#
# BUNDLE_DIR (default .dockerbundle) holds docker/engine-bundle.sh's output (with its engine-start.sh)
# and wheels/ (the docker SDK and requests; this Python lacks them).
# Usage (repo root, after `source scripts/on_device.sh`): bash scripts/docker_gpu_demo.sh [BUNDLE_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-.dockerbundle}
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok: $1 ($2)"; else echo "FAILED: $1: got $2, expected $3"; fail=1; fi; }

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$B"/wheels/*.whl
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
python3 -c 'import docker; print("docker SDK", docker.__version__)' || exit 1
if ! command -v dockerd >/dev/null; then
  bash "$B/engine-start.sh" "$B" || exit 1
  export PATH=/opt/kj-docker/usr/bin:/opt/kj-docker/usr/sbin:$PATH
fi
bash docker/host-image.sh kernel-judge:host || exit 1
python3 -c 'import sys, torch; print("python", sys.executable, "prefix", sys.prefix, "torch", torch.__file__)'
ls -l /dev/nvidia* ; ls -d /usr/local/nvidia/lib64 2>/dev/null
python3 -c "import docker; i = docker.from_env().info(); print({k: i.get(k) for k in ('CgroupVersion', 'PidsLimit', 'MemoryLimit', 'CpuCfsQuota', 'Runtimes')})"
D="--runner docker --image kernel-judge:host --docker-host-env --docker-gpus devices --no-record"

status() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("status") or r.get("error")); print(r.get("message","")[:2000], file=sys.stderr)' "$1"; }

echo "== 1. hgemm model answer in a container"
judge submit problems/hgemm reference_solutions/hgemm/04_wmma_pipelined.cu $D; code=$?
check "hgemm 04_wmma_pipelined exit" "$code" 0
judge submit problems/hgemm reference_solutions/hgemm/04_wmma_pipelined.cu $D --json >/tmp/dk_hgemm.json
check "hgemm 04_wmma_pipelined status (--json)" "$(status /tmp/dk_hgemm.json)" ACCEPTED

echo "== 2. hgemm wrong control in a container"
judge submit problems/hgemm problems/hgemm/wrong/no_tail.cu $D --json >/tmp/dk_wrong.json; code=$?
check "hgemm no_tail status" "$(status /tmp/dk_wrong.json)" WRONG_ANSWER
check "hgemm no_tail exit" "$code" 1

echo "== 3. overhead: judge submit vector_add 02_float4.cu, local vs docker (wall seconds)"
S=reference_solutions/vector_add/02_float4.cu
wall() { local t0 t1; t0=$(date +%s%N); "$@" >/tmp/dk_run.json 2>/dev/null; t1=$(date +%s%N)
         python3 -c "print(f'{($t1 - $t0) / 1e9:.2f}')"; }
judge submit vector_add $S --no-record --json >/dev/null  # warm the local build cache
for kind in local-warm local-cold docker; do
  times=()
  for i in 1 2 3; do
    case $kind in
      local-warm) t=$(wall judge submit vector_add $S --no-record --json) ;;
      local-cold) t=$(JUDGE_CACHE=$(mktemp -d) wall judge submit vector_add $S --no-record --json) ;;
      docker)     t=$(wall judge submit vector_add $S $D --json) ;;
    esac
    check "vector_add $kind run $i" "$(status /tmp/dk_run.json 2>/dev/null)" ACCEPTED
    times+=("$t")
  done
  printf '%s: %s s; median %s s\n' "$kind" "${times[*]}" "$(printf '%s\n' "${times[@]}" | sort -n | sed -n 2p)"
done

[ $fail = 0 ] && echo "all checks passed" || echo "FAILED: see above"
exit $fail
