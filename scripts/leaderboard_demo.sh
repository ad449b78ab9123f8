#!/usr/bin/env bash
# A leaderboard end to end on a GPU machine (`judge` on PATH: `source scripts/on_device.sh`).
#
# Builds a submissions folder with three participants on vector_add and hgemm:
#   fast/   the repository's fastest model answer (a copy of reference_solutions/<p>/<last>.cu)
#   naive/  reference_solutions/<p>/01_*.cu
#   wrong/  a known-wrong control (problems/<p>/wrong/...: WRONG_ANSWER)
#   oops/   a file named after no problem (REJECTED without touching a GPU)
# plus the automatic `reference` rows, runs `judge leaderboard run` twice (the second run must
# judge nothing: resume), and checks the rankings of `judge leaderboard show`.
#
# Expected per problem: fast and reference first (the same bytes, so usually a tie, "=1"),
# naive ranked last (vector_add ~0.9x, hgemm ~0.01x of the baseline), wrong listed under
# "Not ranked" as WRONG_ANSWER. Overall: fast and reference 2/2 solved on top, naive 2/2 below.
#
# Usage: scripts/leaderboard_demo.sh [WORKDIR] [extra `leaderboard run` options, e.g. --gpus 1]
set -uo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-$(mktemp -d)}
shift || true
SUBS=$WORK/submissions
export JUDGE_DB=$WORK/judge.db
rm -rf "$SUBS" "$JUDGE_DB" "$JUDGE_DB-wal" "$JUDGE_DB-shm"
mkdir -p "$SUBS"/{fast,naive,wrong,oops}
for p in vector_add hgemm; do
  cp "$(ls reference_solutions/$p/*.cu | tail -n 1)" "$SUBS/fast/$p.cu"
  cp reference_solutions/$p/01_*.cu "$SUBS/naive/$p.cu"
done
cp problems/vector_add/wrong/no_tail.cu "$SUBS/wrong/vector_add.cu"
cp problems/hgemm/wrong/b_transposed.cu "$SUBS/wrong/hgemm.cu"
echo '// named after no problem' > "$SUBS/oops/no_such_problem.cu"

echo "== run 1: 9 files (7 submissions + 2 reference rows), --fail-on wrong"
start=$(date +%s.%N)
judge leaderboard run "$SUBS" --budget 1 --fail-on wrong "$@"
rc1=$?
echo "exit $rc1 (expected 1: wrong/* and oops/* are not ACCEPTED); $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"

echo "== run 2: resume (nothing changed: nothing judged)"
judge leaderboard run "$SUBS" --budget 1 --fail-on wrong --json "$@" > "$WORK/run2.json"
rc2=$?
echo "exit $rc2 (expected 0)"

echo "== show --format markdown"
judge leaderboard show --format markdown | tee "$WORK/leaderboard.md"
judge leaderboard show --format json -o "$WORK/leaderboard.json"
judge leaderboard show --format html -o "$WORK/leaderboard.html"

python3 - "$WORK" "$rc1" "$rc2" <<'EOF'
import json, sys
work, rc1, rc2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bad = []
run2 = json.load(open(f"{work}/run2.json"))
if rc1 != 1: bad.append(f"run 1 exit {rc1}, expected 1")
if rc2 != 0: bad.append(f"run 2 exit {rc2}, expected 0")
if run2["judged"] or len(run2["skipped"]) != 9:
    bad.append(f"resume: judged {len(run2['judged'])}, skipped {len(run2['skipped'])} (expected 0 and 9)")
(board,) = json.load(open(f"{work}/leaderboard.json"))["boards"]
probs = {p["problem"]: p for p in board["problems"]}
for name in ("vector_add", "hgemm"):
    p = probs[name]
    order = [r["participant"] for r in p["ranking"]]
    ranks = [r["rank_text"] for r in p["ranking"]]
    print(f"{name}: " + ", ".join(f"{k} {r['participant']} {r['speedup']:.3g}x [{r['ci_low']:.3g}, {r['ci_high']:.3g}]"
                                   for k, r in zip(ranks, p["ranking"])))
    if sorted(order[:2]) != ["fast", "reference"] or order[2:] != ["naive"]:
        bad.append(f"{name}: ranking {order}, expected fast and reference, then naive")
    if p["ranking"][0]["rank"] != 1 or p["ranking"][2]["rank"] != 3:
        bad.append(f"{name}: ranks {ranks}")
    unranked = {u["participant"]: u["status"] for u in p["unranked"]}
    if unranked != {"wrong": "WRONG_ANSWER"}:
        bad.append(f"{name}: not ranked {unranked}, expected wrong: WRONG_ANSWER")
if {u["participant"]: u["status"] for u in probs["no_such_problem"]["unranked"]} != {"oops": "REJECTED"}:
    bad.append("oops/no_such_problem.cu is not REJECTED")
overall = [(e["participant"], e["solved"]) for e in board["overall"]]
print("overall:", ", ".join(f"{e['rank_text']} {e['participant']} {e['solved']}/{e['attempted']} {e['speedup']:.3g}x"
                            for e in board["overall"]))
if sorted(overall[:2]) != [("fast", 2), ("reference", 2)] or overall[2:] != [("naive", 2)]:
    bad.append(f"overall {overall}")
print(f"files: {work}/leaderboard.md .json .html")
print("DEMO OK" if not bad else "DEMO FAILED:\n  " + "\n  ".join(bad))
sys.exit(1 if bad else 0)
EOF
