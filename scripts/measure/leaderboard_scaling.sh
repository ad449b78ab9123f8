#!/usr/bin/env bash
# 1 GPU vs 2 GPUs for the LOCAL parallel leaderboard path (`judge leaderboard run --gpus N`), on a
# machine with at least 2 GPUs of one kind (`judge` on PATH: `source scripts/on_device.sh`).
#
# Builds a submissions folder of 12 real submissions: the model answers of 5 problems
# (reference_solutions/<problem>/*.cu), each file a participant of its own (p01, p02, ...).
# A warm-up run (--gpus 2, its own store) builds every file into the cache and measures each GPU's
# peaks, so the two timed runs below differ only in the number of GPUs they judge on:
#   judge leaderboard run SUBS --gpus 1 --db WORK/gpus1.db
#   judge leaderboard run SUBS --gpus 2 --db WORK/gpus2.db
# each into a fresh store (both judge all 12 files), timed with `date +%s.%N`. Last line:
#   scaling: 1 GPU X s, 2 GPUs Y s, speedup Z
#
# Usage: scripts/measure/leaderboard_scaling.sh WORKDIR [extra `leaderboard run` options, e.g. --budget 1]
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=${1:?usage: scripts/measure/leaderboard_scaling.sh WORKDIR [extra leaderboard run options]}
shift
SUBS=$WORK/submissions
mkdir -p "$WORK"
rm -rf "$SUBS" "$WORK"/warm.db* "$WORK"/gpus1.db* "$WORK"/gpus2.db*
export JUDGE_CACHE=${JUDGE_CACHE:-$WORK/cache}

n=0
for p in vector_add gelu layer_norm reduce_sum hgemm; do
  for f in reference_solutions/$p/*.cu; do
    [ "$n" -ge 12 ] && break 2
    n=$((n + 1))
    mkdir -p "$SUBS/$(printf 'p%02d' "$n")"
    cp "$f" "$SUBS/$(printf 'p%02d' "$n")/$p.cu"
  done
done
echo "== $n submissions in $SUBS:"
(cd "$SUBS" && ls */*.cu | tr '\n' ' '); echo

echo "== warm-up (not timed): builds into $JUDGE_CACHE, measures the GPUs' peaks"
judge leaderboard run "$SUBS" --gpus 2 --no-references --db "$WORK/warm.db" --json "$@" > "$WORK/warm.json" || true

timed() {  # timed GPUS → seconds on stdout; the run's JSON summary in WORK/gpusN.json
  local start end
  start=$(date +%s.%N)
  judge leaderboard run "$SUBS" --gpus "$1" --no-references --db "$WORK/gpus$1.db" --json "${@:2}" \
    > "$WORK/gpus$1.json" || true
  end=$(date +%s.%N)
  python3 -c "print(round($end - $start, 2))"
}
t1=$(timed 1 "$@")
t2=$(timed 2 "$@")
for g in 1 2; do
  python3 - "$WORK/gpus$g.json" "$g" <<'EOF'
import collections, json, sys
s = json.load(open(sys.argv[1]))
count = collections.Counter(j["status"] for j in s.get("judged", []))
print(f"--gpus {sys.argv[2]}: devices {s.get('devices')}, judged {len(s.get('judged', []))} "
      f"({dict(count)}), exit {s.get('exit_code')}")
EOF
done
python3 -c "print(f'scaling: 1 GPU {$t1} s, 2 GPUs {$t2} s, speedup {$t1 / $t2:.2f}')"
