#!/usr/bin/env bash
# A batch of GPU-machine steps under a time budget, detached from the command that starts it (the
# device tool gives a command at most 10 minutes; a batch outlives it), in a copy of the repository
# (so that the next call's fresh copy of the working tree cannot change files under a running step).
#
#   scripts/device_job.sh start BUDGET_S STEPS_FILE   # from the repository root; returns at once
#   scripts/device_job.sh wait SECONDS                # until the batch is done or SECONDS pass
#
# STEPS_FILE: one step a line, `NAME NEED_S COMMAND...` (# starts a comment). A step runs as
# `bash -c COMMAND` in the copy, with its output in LOGS/NAME.log, under `timeout` of the budget
# left; it is skipped when less than NEED_S seconds are left. LOGS/steps says when each started
# and ended and its exit status. `wait` prints that file, `== DONE` once the batch has ended, and
# packs LOGS into $OUT/logs.tgz when OUT is set (the device tool brings $OUT back).
# On the GPU machine the copy sources scripts/on_device.sh first when .whl/ is there (the wheels the
# image lacks, `judge` on PATH). Where: KJ_COPY (default /tmp/kjrepo), KJ_LOGS (default /tmp/kj/logs).
set -uo pipefail
COPY=${KJ_COPY:-/tmp/kjrepo}
LOGS=${KJ_LOGS:-/tmp/kj/logs}
usage() { echo "usage: device_job.sh start BUDGET_S STEPS_FILE | wait SECONDS" >&2; exit 2; }
number() { [[ "$1" =~ ^[0-9]+$ ]] || { echo "device_job.sh: $2 must be a whole number of seconds, not '$1'" >&2; exit 2; }; }

case "${1:-}" in
  start)
    [ $# -eq 3 ] || usage
    number "$2" BUDGET_S
    [ -f "$3" ] || { echo "device_job.sh: no such steps file: $3" >&2; exit 2; }
    bad=$(awk '!/^[[:space:]]*(#|$)/ && !($1 ~ /^[A-Za-z0-9_.-]+$/ && $2 ~ /^[0-9]+$/ && NF >= 3) {print NR; exit}' "$3")
    [ -z "$bad" ] || { echo "device_job.sh: $3, line $bad: want NAME NEED_S COMMAND (NAME of letters, digits, _ . -)" >&2; exit 2; }
    [ -f scripts/device_job.sh ] || { echo "device_job.sh: run it from the repository root" >&2; exit 2; }
    steps=$(realpath "$3")
    rm -rf "$COPY" "$LOGS" && mkdir -p "$LOGS" "$(dirname "$COPY")" && cp -a . "$COPY" && cp "$steps" "$LOGS/steps.txt"
    (cd "$COPY" && setsid nohup bash scripts/device_job.sh run "$2" "$LOGS/steps.txt" \
        > "$LOGS/job.out" 2>&1 < /dev/null &)
    echo "started in $COPY, logs in $LOGS" ;;
  run)  # internal: the detached batch
    budget=$2 start=$(date +%s)
    [ -d .whl ] && [ -f scripts/on_device.sh ] && source scripts/on_device.sh
    export PYTHONUNBUFFERED=1
    while read -r name need cmd; do
      case "$name" in ''|\#*) continue ;; esac
      left=$(( budget - ($(date +%s) - start) ))
      if [ "$left" -le 0 ] || [ "$left" -lt "$need" ]; then echo "== $name SKIPPED (left ${left}s < ${need}s)" >> "$LOGS/steps"; continue; fi
      t0=$(date +%s)
      echo "== $name start $(date -u +%T)" >> "$LOGS/steps"
      timeout "$left" bash -c "$cmd" > "$LOGS/$name.log" 2>&1 < /dev/null
      echo "== $name rc=$? $(( $(date +%s) - t0 ))s $(date -u +%T)" >> "$LOGS/steps"
    done < "$3"
    touch "$LOGS/DONE" ;;
  wait)
    [ $# -eq 2 ] || usage
    number "$2" SECONDS
    end=$(( $(date +%s) + $2 ))
    while [ ! -e "$LOGS/DONE" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 2; done
    cat "$LOGS/steps" 2>/dev/null
    [ -e "$LOGS/DONE" ] && echo "== DONE"
    if [ -n "${OUT:-}" ]; then tar czf "$OUT/logs.tgz" -C "$(dirname "$LOGS")" "$(basename "$LOGS")"; fi
    exit 0 ;;
  *) usage ;;
esac
