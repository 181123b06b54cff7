#!/usr/bin/env bash
# What each instrument costs, measured inside one invocation per point and
# instrument: `fsscale run POINT INSTRUMENT --profile-cost` runs the point
# with the instruments off and on as two variants in alternating rounds
# (the order rotated round by round), until the paired ratio's 95% interval
# is within ±2% or 50 rounds; `fsscale compare --between
# variant=unprofiled,profiled` gives the ratio (geometric mean of the
# rounds' ratios) with its 95% t interval. Pairs share one stretch of the
# machine's time, so drift between invocations cancels.
#
#   bench/instruments.sh [--fsscale BIN] [--dir DIR] [--duration S] [--max-runs N]
#                        [--points "P1;P2"] [--instruments "I1;I2"]
#
# Prints a Markdown table, with what the BPF programs cost in the kernel's
# own count. Needs root; builds nothing (cargo build --release).
set -euo pipefail
bin=target/release/fsscale
dir=/dev/shm
duration=0.5
max_runs=50
points="creat-unlink -j 2 --share shared;stat -j 1 --share private;fsync -j 2 --share private --fs ext4"
instruments="--profile locks;--profile offcpu;--profile latency;--profile cpu;--verify"
while [ $# -gt 0 ]; do
    case "$1" in
        --fsscale) bin=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --max-runs) max_runs=$2; shift 2 ;;
        --points) points=$2; shift 2 ;;
        --instruments) instruments=$2; shift 2 ;;
        *) echo "bench/instruments.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$bin" ] || { echo "bench/instruments.sh: no $bin (cargo build --release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| point | instrument | rounds | ops/s unprofiled | ops/s profiled | profiled / unprofiled [95% CI] | BPF programs: ns a run, share of the workers' time |"
echo "|---|---|---:|---:|---:|---:|---:|"
IFS=';' read -r -a point_list <<< "$points"
IFS=';' read -r -a instrument_list <<< "$instruments"
for point in "${point_list[@]}"; do
    for instrument in "${instrument_list[@]}"; do
        # shellcheck disable=SC2086
        "$bin" run $point $instrument --profile-cost --duration "$duration" --max-runs "$max_runs" --dir "$dir" \
            -o "$work/r.json" --force -q >/dev/null 2>"$work/err" || { cat "$work/err" >&2; exit 1; }
        python3 - "$work/r.json" "$point" "$instrument" <<'PY'
import json, math, statistics, sys

doc = json.load(open(sys.argv[1]))
by = {p.get("variant"): p for p in doc["points"]}
off, on = by["unprofiled"], by["profiled"]
ratios = [math.log(b["ops_per_s"] / a["ops_per_s"]) for a, b in zip(off["runs"], on["runs"])]
n = len(ratios)
mean = statistics.mean(ratios)
sd = statistics.stdev(ratios) if n > 1 else float("nan")
# Student's t quantile for 95%, two-sided (as compare uses); a close table is enough here.
t = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 8: 2.31, 10: 2.23, 15: 2.13, 20: 2.09, 30: 2.04, 49: 2.01}
df = n - 1
q = t[max(k for k in t if k <= df)] if df >= 1 else float("nan")
half = q * sd / math.sqrt(n)
costs, seconds = [], 0.0
for r in on["runs"]:
    for key in ("locks", "offcpu", "kernel_latency"):
        p = r.get(key) or {}
        if p.get("programs"):
            costs.append(p["programs"])
    seconds += sum(r["completion_s"]) if r.get("completion_s") else r["elapsed_s"] * len(r["per_worker_ops"])
cost = "-"
if costs:
    runs, s = sum(c["runs"] for c in costs), sum(c["seconds"] for c in costs)
    cost = f"{1e9 * s / max(runs, 1):,.0f} ns, {100 * s / seconds:.1f}%"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {n} | {statistics.median(r['ops_per_s'] for r in off['runs']):,.0f} "
      f"| {statistics.median(r['ops_per_s'] for r in on['runs']):,.0f} "
      f"| {math.exp(mean):.3f} [{math.exp(mean - half):.3f}, {math.exp(mean + half):.3f}] | {cost} |")
PY
    done
done
