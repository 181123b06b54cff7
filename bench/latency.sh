#!/usr/bin/env bash
# Cost of --latency: the same fixed-time loop with and without per-op timing
# (two vDSO clock reads and a histogram update per op), alternated per round.
#
#   bench/latency.sh [ROUNDS] [SECONDS] [DIR]     (defaults: 10 2 /dev/shm)
#
# Prints a Markdown table of medians and the paired per-round ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
seconds=${2:-2}
dir=${3:-/dev/shm}
cargo build --release --quiet
fsscale=target/release/fsscale
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rate() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["points"][0]["runs"][0]["ops_per_s"])' "$1"; }

echo "| op | workers | plain ops/s (median) | --latency ops/s (median) | --latency / plain, paired median | p50 | p99 |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for op in stat open-close creat-unlink; do
  for workers in 1 2; do
    plain=() timed=()
    for ((r = 0; r < rounds; r++)); do
      args=(run "$op" -j "$workers" --share private -n 1 --duration "$seconds" --warmup 0.2 --dir "$dir")
      "$fsscale" "${args[@]}" -o "$work/p.json" >/dev/null 2>&1
      "$fsscale" "${args[@]}" --latency -o "$work/l.json" >/dev/null 2>&1
      plain+=("$(rate "$work/p.json")")
      timed+=("$(rate "$work/l.json")")
    done
    python3 - "$op" "$workers" "${plain[*]}" "${timed[*]}" "$work/l.json" <<'PY'
import json, statistics, sys
op, workers = sys.argv[1], sys.argv[2]
p, t = [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]
lat = json.load(open(sys.argv[5]))["points"][0]["summary"]["latency"]
ratio = statistics.median(b / a for a, b in zip(p, t))
print(f"| {op} | {workers} | {statistics.median(p):,.0f} | {statistics.median(t):,.0f} | {ratio:.3f} | {lat['p50_ns']} ns | {lat['p99_ns']} ns |")
PY
  done
done
