#!/usr/bin/env bash
# Measure the sandbox's allow-list on a GPU machine (issue 16): `judge verify` with
# JUDGE_SECCOMP_LEARN, so that every system call the filter would refuse is logged (and runs), then
# the calls by name with their first arguments. Usage: scripts/probes/seccomp_learn.sh [PROBLEM ...]
set -u
dir=$(mktemp -d) && chmod 777 "$dir"   # the worker writes it after giving up root
log="$dir/calls"
JUDGE_SECCOMP_LEARN="$log" judge verify "$@" > "$dir/verify.txt" 2>&1
echo "judge verify (learning): $(tail -1 "$dir/verify.txt")"
[ -s "$log" ] || { echo "no call would have been refused"; exit 0; }
python3 - "$log" <<'PY'
import collections, sys
from judge.sandbox import seccomp
seen = collections.Counter()
for line in open(sys.argv[1]):
    nr, *args = line.split()
    seen[(seccomp.syscall_name(int(nr)), " ".join(args[:3]))] += 1
for (name, args), n in sorted(seen.items()):
    print(f"{n:8d}  {name:20s} {args}")
PY
