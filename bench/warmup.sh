#!/usr/bin/env bash
# What the steady-state warm-up costs and finds: the default suite run twice
# on one directory, once with warm-up runs until steady (the default) and
# once with warm-up runs of exactly --duration (--warmup-max 0), timed; then,
# per fixed-time point of the first, its warm-up run's 100 ms windows: the
# first window's rate and the first block's against the steady rate (the
# mean of the last block), how long until the rate stayed within 2% of it,
# and how long the warm-up took.
#
#   bench/warmup.sh [--fsscale BIN] [--dir DIR] [-- RUN ARGS...]
#
# Prints a Markdown table per suite and one summary line each.
set -euo pipefail
cd "$(dirname "$0")/.."

fsscale=
dir=/dev/shm
while (($#)); do
  case $1 in
    --fsscale) fsscale=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "warmup.sh: unknown option '$1' (see the comment at the top of bench/warmup.sh)" >&2; exit 2 ;;
  esac
done
run_args=("$@")
if [[ -z $fsscale ]]; then
  cargo build --release --quiet
  fsscale=target/release/fsscale
fi
work=$(mktemp -d /tmp/fsscale-warmup.XXXXXX)
trap 'rm -rf "$work"' EXIT

for mode in steady fixed; do
  extra=()
  [[ $mode == fixed ]] && extra=(--warmup-max 0)
  start=$(date +%s.%N)
  "$fsscale" run "${run_args[@]}" --dir "$dir" "${extra[@]}" -o "$work/$mode.json" >/dev/null 2>"$work/$mode.log" ||
    { cat "$work/$mode.log" >&2; exit 1; }
  end=$(date +%s.%N)
  echo "suite $mode: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s wall"
done

python3 - "$work/steady.json" "$work/fixed.json" <<'PY'
import json, sys

def rates(run):
    t, c = run["timeline"]["at_s"], run["timeline"]["cumulative_ops"]
    out, t0, c0 = [], 0.0, 0
    for a, b in zip(t, c):
        if a > t0:
            out.append((b - c0) / (a - t0))
        t0, c0 = a, b
    return out

steady = json.load(open(sys.argv[1]))
print("| point | warm-up s | steady | first 100 ms | first 0.5 s | ramp until within 2% | first measured run |")
print("|---|---:|---:|---:|---:|---:|---:|")
ramps, lengths, firsts = [], [], []
for p in steady["points"]:
    w = p.get("warmup_runs") or []
    if not w or w[0].get("steady") is None:
        continue
    r = rates(w[0])
    if len(r) < 10:
        continue
    level = sum(r[-5:]) / 5
    ramp = 0
    for i in range(len(r)):
        if all(abs(x / level - 1) <= 0.02 for x in r[i:i + 5]):
            ramp = i
            break
    first_run = p["runs"][0]["ops_per_s"] / p["summary"]["ops_per_s"]["median"]
    ramps.append(ramp * 0.1); lengths.append(w[0]["elapsed_s"]); firsts.append(r[0] / level)
    print(f"| {p['workload']} {p['share']} x{p['workers']} | {w[0]['elapsed_s']:.1f} | "
          f"{'yes' if w[0]['steady']['reached'] else 'no'} | {r[0] / level:.3f} | "
          f"{sum(r[:5]) / 5 / level:.3f} | {ramp * 0.1:.1f} s | {first_run:.3f} |")
n = len(lengths)
if n:
    s = sorted(firsts)
    print(f"summary: {n} points; warm-up {min(lengths):.1f}-{max(lengths):.1f} s (total {sum(lengths):.1f} s); "
          f"ramp {min(ramps):.1f}-{max(ramps):.1f} s; first window / steady median {s[n // 2]:.3f}, range {s[0]:.3f}-{s[-1]:.3f}")
PY
