#!/usr/bin/env bash
# What a hog on the workers' CPU does to ops/s and to ops per CPU-second:
# `stat` confined to CPU 0, alone and beside a spinning process on that CPU,
# ROUNDS times each, alternately. ops/s should halve; ops/cpu-s should stay
# (it moves only where the hog costs an op more: caches, the SMT sibling).
# How far it moves depends on the machine and on what else runs, so this is a
# benchmark, not a test (the tests check that each run's figure is its ops
# over its workers' CPU seconds, and that compare judges it).
#
#   bench/per-cpu.sh [--fsscale BIN] [--rounds N]
#
# Prints one line per round and the medians of the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."

fsscale=
rounds=5
while (($#)); do
  case $1 in
    --fsscale) fsscale=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "per-cpu.sh: unknown option '$1' (see the comment at the top of bench/per-cpu.sh)" >&2; exit 2 ;;
  esac
done
if [[ -z $fsscale ]]; then
  cargo build --release --quiet
  fsscale=target/release/fsscale
fi
work=$(mktemp -d /dev/shm/per-cpu.XXXXXX)
trap 'kill "${hog:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
figures() {  # median ops/s and median ops/cpu-s of FILE's one point
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["points"][0]["summary"]; print(s["ops_per_s"]["median"], s["ops_per_cpu_s"]["median"])' "$1"
}
args=(stat -j 1 -n 4 --duration 0.2 --share private --warmup-runs 0 -q --dir "$work" --force)
ratios=()
for ((r = 1; r <= rounds; r++)); do
  taskset -c 0 "$fsscale" run "${args[@]}" -o "$work/quiet.json" >/dev/null 2>&1
  taskset -c 0 sh -c 'while :; do :; done' & hog=$!
  taskset -c 0 "$fsscale" run "${args[@]}" -o "$work/busy.json" >/dev/null 2>&1
  kill "$hog"; wait "$hog" 2>/dev/null || true
  read -r q_ops q_cpu < <(figures "$work/quiet.json")
  read -r b_ops b_cpu < <(figures "$work/busy.json")
  line=$(python3 -c "import sys; q,qc,b,bc=map(float,sys.argv[1:]); print(f'{b/q:.3f} {bc/qc:.3f}')" "$q_ops" "$q_cpu" "$b_ops" "$b_cpu")
  echo "round $r: busy/quiet ops/s ${line% *}, ops/cpu-s ${line#* }"
  ratios+=("$line")
done
printf '%s\n' "${ratios[@]}" | python3 -c '
import sys, statistics
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
print(f"median busy/quiet: ops/s {statistics.median(r[0] for r in rows):.3f}, ops/cpu-s {statistics.median(r[1] for r in rows):.3f}")'
